"""The ``json`` format: one JSON object per record, append-only (every record is +I).

Options (Flink's names, ``json.`` prefix stripped by the caller):
``fail-on-missing-field``, ``ignore-parse-errors``, ``timestamp-format.standard``
(SQL | ISO-8601), ``map-null-key.mode`` (FAIL | DROP | LITERAL),
``map-null-key.literal``, ``encode.decimal-as-plain-number``,
``encode.ignore-null-fields``, ``decode.json-parser.enabled`` (accepted; there is
one parser here).

Per record the decoder makes one msgspec parse and one call of a row function
compiled from the schema; columns whose JSON value already has the right Python
type cost one type check.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import msgspec

from deltaflow.formats import json_convert as jc
from deltaflow.formats.changelog import INSERT, Batch, RawBatch
from deltaflow.formats.codec_support import (
    RecordDecoder,
    bool_option,
    check_options,
    choice_option,
    on_error_policy,
    reason_of,
)
from deltaflow.formats.errors import DeltaflowError, FormatError, excerpt
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import DataType

OPTIONS = (
    "fail-on-missing-field",
    "ignore-parse-errors",
    "timestamp-format.standard",
    "map-null-key.mode",
    "map-null-key.literal",
    "encode.decimal-as-plain-number",
    "encode.ignore-null-fields",
    "decode.json-parser.enabled",
)
CONVERSION_ERRORS = (ValueError, TypeError, KeyError, AttributeError, OverflowError)


def _iso(spec: FormatSpec) -> bool:
    standards = ("SQL", "ISO-8601")
    return (
        choice_option("json", spec.options, "timestamp-format.standard", standards, "SQL") != "SQL"
    )


def _check(spec: FormatSpec, fmt: str = "json") -> None:
    check_options(fmt, spec.options, OPTIONS)
    if spec.metadata:
        raise DeltaflowError(
            f"format '{fmt}' has no metadata keys, but {spec.metadata[0][0]!r} was requested"
        )
    bool_option(fmt, spec.options, "decode.json-parser.enabled", True)


def make_decoder(name: str, spec: FormatSpec) -> JsonDecoder:
    _check(spec, name)
    return JsonDecoder(spec)


def make_encoder(name: str, spec: FormatSpec) -> JsonEncoder:
    _check(spec, name)
    return JsonEncoder(spec)


# ---------------------------------------------------------------------------
# row compilation


def compile_row_reader(
    columns: list[tuple[str, DataType]], iso: bool, fail_on_missing: bool
) -> Callable[[dict], tuple]:
    """``row(obj) -> tuple``: the columns of one decoded JSON object, converted."""
    env: dict[str, object] = {}
    lines = ["def row(d):"]
    for i, (name, dtype) in enumerate(columns):
        env[f"N{i}"] = name
        env[f"C{i}"] = jc.decoder_for(dtype, iso, fail_on_missing)
        get = f"d[N{i}]" if fail_on_missing else f"d.get(N{i})"
        lines.append(f"    v{i} = {get}")
        lines.append(f"    if v{i} is not None and {_needs_conversion(i, dtype, env)}:")
        lines.append(f"        v{i} = C{i}(v{i})")
    lines.append("    return (" + "".join(f"v{i}, " for i in range(len(columns))) + ")")
    exec("\n".join(lines), env)  # noqa: S102 - compiled once per schema from column indexes
    return env["row"]  # type: ignore[return-value]


def _needs_conversion(i: int, dtype: DataType, env: dict[str, object]) -> str:
    if dtype.root in jc.INT_RANGES:
        env[f"L{i}"], env[f"H{i}"] = jc.INT_RANGES[dtype.root]
        return f"(type(v{i}) is not int or not L{i} <= v{i} <= H{i})"
    fast = jc.fast_type(dtype)
    if fast is None:
        return "True"
    env[f"F{i}"] = fast
    return f"type(v{i}) is not F{i}"


def compile_row_writer(
    columns: list[tuple[str, DataType]], opts: jc.EncodeOptions
) -> Callable[[tuple], dict]:
    """``obj(row) -> dict``: one row as the dict msgspec writes as a JSON object."""
    env: dict[str, object] = {}
    parts = []
    for i, (name, dtype) in enumerate(columns):
        env[f"N{i}"] = name
        conv = jc.encoder_for(dtype, opts)
        if conv is None:
            parts.append(f"N{i}: r[{i}]")
        else:
            env[f"C{i}"] = conv
            parts.append(f"N{i}: None if (x{i} := r[{i}]) is None else C{i}(x{i})")
    source = "def obj(r):\n    return {" + ", ".join(parts) + "}"
    exec(source, env)  # noqa: S102 - compiled once per schema from column indexes
    return env["obj"]  # type: ignore[return-value]


# ---------------------------------------------------------------------------
# decoder and encoder


class JsonDecoder(RecordDecoder):
    """Decodes JSON objects into +I rows of the physical columns."""

    def __init__(self, spec: FormatSpec, fmt: str = "json") -> None:
        super().__init__(fmt, on_error_policy(fmt, spec))
        options = spec.options
        self.fail_on_missing = bool_option(fmt, options, "fail-on-missing-field", False)
        if self.fail_on_missing and bool_option(fmt, options, "ignore-parse-errors", False):
            raise DeltaflowError(
                f"options '{fmt}.fail-on-missing-field' and '{fmt}.ignore-parse-errors' "
                "cannot both be 'true'; choose one"
            )
        self.columns = list(spec.physical)
        exact = any(jc.has_decimal(t) for _, t in self.columns)
        self._parser = msgspec.json.Decoder(float_hook=Decimal if exact else None)
        self._row = compile_row_reader(self.columns, _iso(spec), self.fail_on_missing)

    def decode(self, raw: RawBatch) -> Batch:
        rows: list[tuple] = []
        parse, row = self._parser.decode, self._row
        for i, value in enumerate(raw.values):
            if value is None:
                continue  # a tombstone carries no row
            try:
                rows.append(row(parse(value)))
            except CONVERSION_ERRORS as exc:
                self.reject(raw, i, self.diagnose(value, exc))
        return Batch([INSERT] * len(rows), rows)

    def diagnose(self, value: bytes, exc: BaseException) -> str:
        """Which column failed and why (runs only for a bad record)."""
        try:
            obj = self._parser.decode(value)
        except msgspec.DecodeError as err:
            return f"malformed JSON ({reason_of(err)})"
        if not isinstance(obj, dict):
            return f"expected a JSON object, got {excerpt(value, 60)}"
        env = self._row.__globals__  # the compiled converters live there
        for i, (name, dtype) in enumerate(self.columns):
            if name not in obj:
                if self.fail_on_missing:
                    return f"field {name!r} is missing ('json.fail-on-missing-field' is true)"
                continue
            if obj[name] is None:
                continue
            try:
                env[f"C{i}"](obj[name])  # type: ignore[operator]
            except CONVERSION_ERRORS as err:
                return f"column {name!r} ({dtype}): {reason_of(err)}"
        return reason_of(exc)


class JsonEncoder:
    """Encodes each row of a batch as one JSON object (the row kind is not written)."""

    def __init__(self, spec: FormatSpec, fmt: str = "json") -> None:
        options = spec.options
        mode = choice_option(fmt, options, "map-null-key.mode", ("FAIL", "DROP", "LITERAL"), "FAIL")
        opts = jc.EncodeOptions(
            iso=_iso(spec),
            null_key_mode=mode,
            null_key_literal=options.get("map-null-key.literal", "null"),
            plain=bool_option(fmt, options, "encode.decimal-as-plain-number", False),
        )
        self.ignore_nulls = bool_option(fmt, options, "encode.ignore-null-fields", False)
        try:
            self._obj = compile_row_writer(list(spec.physical), opts)
        except TypeError as exc:
            raise DeltaflowError(f"format '{fmt}': {exc}") from None
        self._encode = msgspec.json.Encoder(decimal_format="number").encode

    def encode(self, batch: Batch) -> list[bytes | None]:
        obj, write = self._obj, self._encode
        try:
            if self.ignore_nulls:
                return [
                    write({k: v for k, v in obj(r).items() if v is not None}) for r in batch.rows
                ]
            return [write(obj(r)) for r in batch.rows]
        except (ValueError, TypeError) as exc:
            raise FormatError(f"cannot encode a row as JSON: {reason_of(exc)}") from None
