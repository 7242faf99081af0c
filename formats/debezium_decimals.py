"""DECIMAL columns of debezium-json: the three ways Debezium writes NUMERIC, never guessed.

Debezium's ``decimal.handling.mode`` decides how a NUMERIC/DECIMAL value travels:

| mode      | JSON value                                     | ``decimal-encoding`` |
|-----------|------------------------------------------------|----------------------|
| precise   | base64 of the big-endian two's complement      | ``base64``           |
|           | unscaled value (``connect.data.Decimal``), or  |                      |
|           | ``{"scale": s, "value": b64}`` for a NUMERIC   |                      |
|           | without a declared scale (VariableScaleDecimal)|                      |
| string    | the number as text, ``"-2704.67"``             | ``string`` (default) |
| double    | a JSON number (a double)                       | ``double``           |

With the schema envelope the Connect schema says which one each field uses
(``debezium_types``). Without it the table option ``'debezium-json.decimal-encoding'``
says so, with Flink's reading (a numeric string, or a JSON number) as the default:
a base64 text such as ``"+999"`` also reads as a number, so guessing per value gives
silent wrong results. A value that does not fit the chosen encoding is an error that
names the option. JSON numbers are read as numbers in every encoding (an integer
column declared DECIMAL): only text is ambiguous.

A base64 value is read with the column's declared scale (Debezium writes the
database column's scale; the table declares the same). Every value is then rounded
HALF_UP to exactly the column's scale; one with more integer digits than the
precision is NULL, as Flink's ``DecimalData.fromBigDecimal`` returns null.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any

import msgspec

from deltaflow.formats.types import DataType, decimal_limit, decimal_params, decimal_quantum

OPTION = "decimal-encoding"
STRING, BASE64, DOUBLE = "string", "base64", "double"
ENCODINGS = (STRING, BASE64, DOUBLE)
LOGICAL = "logical"  # a schema's logical decimal type read the value (no table option)
DEFAULT = STRING
# what each encoding is called by Debezium's decimal.handling.mode
_MODE = {STRING: "string", BASE64: "precise", DOUBLE: "double"}
_TEXT = msgspec.json.Encoder(decimal_format="number")


def _show(value: object) -> str:
    text = repr(value) if isinstance(value, str) else _TEXT.encode(value).decode()
    return text if len(text) <= 60 else text[:60] + "..."


def mismatch(value: object, encoding: str) -> ValueError:
    """The error of a value that is not in the column's decimal encoding."""
    what = {
        STRING: "a number or numeric text",
        BASE64: 'base64 bytes, a {"scale": .., "value": ..} decimal or a JSON number',
        DOUBLE: "a JSON number",
    }[encoding]
    others = " or ".join(f"'{e}' ({_MODE[e]})" for e in ENCODINGS if e != encoding)
    return ValueError(
        f"{_show(value)} is not {what}, as 'debezium-json.{OPTION}' = '{encoding}' says "
        f"(Debezium's decimal.handling.mode={_MODE[encoding]}); if Debezium runs with "
        f"another mode, set the option to {others}, or read the topic with its schema "
        "envelope"
    )


def unscaled(text: str, scale: int) -> Decimal:
    """``org.apache.kafka.connect.data.Decimal``: base64 big-endian two's complement."""
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error:
        raise mismatch(text, BASE64) from None
    if not raw:
        raise ValueError("empty base64 DECIMAL")
    return Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale)


def variable_scale(v: Any) -> Decimal:
    """``io.debezium.data.VariableScaleDecimal``: ``{"scale": s, "value": base64}``."""
    if type(v) is not dict or type(v.get("scale")) is not int or type(v.get("value")) is not str:
        raise mismatch(v, BASE64)
    return unscaled(v["value"], v["scale"])


def decimal_rounding(dtype: DataType) -> tuple[Decimal, Context]:
    """The quantum of a DECIMAL column and a context whose quantize raises
    ``InvalidOperation`` when the result needs more digits than the precision (or
    the value is infinite).

    ``d.quantize(quantum, None, context)`` is the column's value of a Decimal ``d``
    whenever it returns a nonzero finite number; for any other outcome the column's
    converter decides (NULL, an error, or an unsigned zero).
    """
    precision, scale = decimal_params(dtype)
    exact = Context(prec=precision, rounding=ROUND_HALF_UP, traps=[InvalidOperation])
    return decimal_quantum(scale), exact


def _from_string(v: Any, scale: int) -> Decimal:
    kind = type(v)
    if kind is Decimal:
        return v
    if kind is int:
        return Decimal(v)
    if kind is float:
        return Decimal(repr(v))
    if kind is str:
        try:
            return Decimal(v.strip())
        except InvalidOperation:
            raise mismatch(v, STRING) from None
    raise mismatch(v, STRING)


def _from_base64(v: Any, scale: int) -> Decimal:
    kind = type(v)
    if kind is str:
        return unscaled(v, scale)
    if kind is dict:
        return variable_scale(v)
    if kind is Decimal or kind is int:  # a JSON number (an integer column): unambiguous
        return Decimal(v)
    if kind is float:
        return Decimal(repr(v))
    raise mismatch(v, BASE64)


def _from_logical(v: Any, scale: int) -> Decimal:
    if type(v) is Decimal:
        return v
    raise ValueError(f"{_show(v)} is not a decimal of the schema's logical type")


def _from_double(v: Any, scale: int) -> Decimal:
    kind = type(v)
    if kind is Decimal:
        return v
    if kind is int:
        return Decimal(v)
    if kind is float:
        return Decimal(repr(v))
    raise mismatch(v, DOUBLE)


_READERS: dict[str, Callable[[Any, int], Decimal]] = {
    STRING: _from_string,
    BASE64: _from_base64,
    DOUBLE: _from_double,
    LOGICAL: _from_logical,
}


def decimal_converter(dtype: DataType, encoding: str = DEFAULT) -> Callable[[Any], Any]:
    """The converter of one non-null JSON value of a DECIMAL column in ``encoding``."""
    precision, scale = decimal_params(dtype)
    quantum, exact = decimal_rounding(dtype)
    limit = decimal_limit(precision, scale)
    context = Context(prec=precision + 2, rounding=ROUND_HALF_UP)
    number = _READERS[encoding]

    def checked(v: Any) -> Decimal | None:
        d = number(v, scale)
        if not d.is_finite():
            raise ValueError(f"{_show(v)} is not a DECIMAL({precision}, {scale})")
        if d and d.adjusted() >= precision - scale:
            return None  # more digits than the precision: NULL, as Flink
        out = d.quantize(quantum, context=context)
        if abs(out) >= limit:
            return None
        return out if out else abs(out)

    def convert(v: Any) -> Decimal | None:
        if type(v) is Decimal:
            try:
                out = v.quantize(quantum, context=exact)
            except InvalidOperation:
                return checked(v)
            if out and out.is_finite():
                return out
            return checked(v)  # zero (its sign is dropped) or NaN
        return checked(v)

    return convert
