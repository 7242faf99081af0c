"""How debezium-json reads the row images of one schema, and its metadata keys.

A ``Plan`` is built once per column list (and once per distinct Connect schema with
logical types): msgspec struct types for the envelope, a typed decoder for the fast
path and an untyped one for the checked path, and one converter per column.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import msgspec

from deltaflow.formats.debezium_compile import Keep, RowCode
from deltaflow.formats.debezium_decimals import DEFAULT as DEFAULT_DECIMALS
from deltaflow.formats.debezium_decimals import decimal_rounding
from deltaflow.formats.debezium_types import Logical, column_converter
from deltaflow.formats.debezium_values import (
    CONVERSION_ERRORS,
    Converter,
    converter,
    show,
)
from deltaflow.formats.errors import DeltaflowError
from deltaflow.formats.json_convert import msgspec_type
from deltaflow.formats.prefilter import PreFilter, fits
from deltaflow.formats.types import (
    ARRAY,
    BINARY_ROOTS,
    DECIMAL,
    MAP,
    MULTISET,
    ROW,
    STRING_ROOTS,
    TIMESTAMP,
    DataType,
    has_decimal,
    string,
)

__all__ = [
    "CONVERSION_ERRORS",
    "Bad",
    "Plan",
    "envelope_decoder",
    "metadata_reader",
    "outer_decoder",
]

_UTC_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# the fields of "source" that metadata keys other than source.properties read
_SOURCE = msgspec.defstruct(
    "Source", [("db", Any, None), ("schema", Any, None), ("table", Any, None), ("ts_ms", Any, None)]
)


# A DECIMAL field kept as raw JSON, read as the typed decode reads it (number or string).
_DECIMAL = msgspec.json.Decoder(Decimal | None).decode


class Bad(Exception):
    """A message that cannot be read: the reason, and what the user can do."""

    def __init__(self, reason: str, hint: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


def _fast_type(dtype: DataType, decimals: str) -> Any:
    """The msgspec type that checks and converts a value of ``dtype`` itself, or None
    (msgspec's Decimal reads numbers and numeric text: the ``string`` encoding)."""
    if dtype.root == DECIMAL:  # still rounded to the scale by the column converter
        return Decimal | None if decimals == DEFAULT_DECIMALS else None
    typed = msgspec_type(dtype)
    return None if typed is None else typed | None


class Plan:
    """Decoders and converters for the row images of one schema.

    ``loose``: no column is typed for msgspec; each goes through its converter, on
    values decoded as the checked path decodes them. For data whose values need
    Flink's coercions in every message (numbers in strings, ...), where the typed
    decode would fail each time.
    """

    def __init__(
        self,
        columns: list[tuple[str, DataType]],
        logical: dict[str, Logical],
        meta_keys: list[str],
        null_bad_fields: bool,
        demanded: frozenset[str] | None = None,
        meta: Sequence[Any] = (),
        loose: bool = False,
        prefilter: PreFilter | None = None,
        decimals: dict[str, str] | None = None,
        default_decimals: str = DEFAULT_DECIMALS,
        partial: bool = False,
        before_columns: frozenset[str] | None = None,
    ) -> None:
        self.columns = columns
        self.null_bad_fields = null_bad_fields
        encoding = {n: (decimals or {}).get(n, default_decimals) for n, _ in columns}
        self.convs = [column_converter(t, logical.get(n), encoding[n]) for n, t in columns]
        self.skipped = {
            i for i, (n, _) in enumerate(columns) if demanded is not None and n not in demanded
        }
        fields: list[tuple[str, Any, None]] = []
        posts: dict[int, Converter] = {}
        decimals = {}
        for i, (name, dtype) in enumerate(columns):
            if i in self.skipped:
                continue  # not in the struct: msgspec skips the field without building it
            typed = None if loose or name in logical else _fast_type(dtype, encoding[name])
            if typed is None or dtype.root == DECIMAL:
                posts[i] = self.convs[i]
            if typed is not None and dtype.root == DECIMAL:
                decimals[i] = decimal_rounding(dtype)
            fields.append((f"c{i}", Any if typed is None else typed, None))
        # a test reads a column's decoded value only where that value is the row's
        plain = {
            n: i for i, (n, _) in enumerate(columns) if i not in posts and i not in self.skipped
        }
        self.keep = _keep(prefilter, plain, columns) if prefilter else None
        # with a pre-filter, a DECIMAL is kept as raw JSON and read when its row is built:
        # most images of a selective WHERE never are (msgspec's Decimal is its dearest type)
        raw = {i: _DECIMAL for i in decimals} if self.keep else {}
        fields = [(f, msgspec.Raw if int(f[1:]) in raw else t, d) for f, t, d in fields]
        rename = {f"c{i}": name for i, (name, _) in enumerate(columns)}
        row = msgspec.defstruct("Row", fields, rename=rename, gc=False)
        # a before-image read for its ``before_columns`` alone (the source takes the rest
        # from state): msgspec skips the other fields without building them
        # (in state mode a pre-filter never tests a before-image: it is never dropped)
        cut = set() if before_columns is None or (self.keep and not partial) else {
            i for i, (n, _) in enumerate(columns) if n not in before_columns
        }  # fmt: skip
        self.before_skipped = self.skipped | cut  # the checked path reads the same columns
        before = row
        if cut - self.skipped:
            kept = [f for f in fields if int(f[0][1:]) not in cut]
            before = msgspec.defstruct("BeforeRow", kept, rename=rename, gc=False)
        fast, slow = _envelopes(row, meta_keys, before)
        # as Flink's JSON reader (USE_BIG_DECIMAL_FOR_FLOATS when the row has a DECIMAL):
        # untyped floats are exact on both paths, so both read them alike
        hook = Decimal if any(has_decimal(t) for _, t in columns) else None
        self.fast = msgspec.json.Decoder(fast, float_hook=hook)
        self.slow = msgspec.json.Decoder(slow, float_hook=hook)
        code = RowCode(len(columns), posts, self.skipped, decimals, raw)
        self.read = self.read_before = code.compile_reader()
        before_code = None
        if before is not row:
            before_code = RowCode(len(columns), posts, self.skipped | cut, decimals, raw)
            self.read_before = before_code.compile_reader()
        rejected = None
        if partial and self.keep:  # an after-image failing the pre-filter: a Rejected row
            left = _rejected_columns(columns, posts, before_columns or frozenset())
            rejected = RowCode(len(columns), posts, self.skipped | left, decimals, raw)
        self.run = code.compile_batch(
            self.fast.decode, meta, (Bad,), self.keep, partial, before_code, rejected
        )

    def checked(self, value: Any) -> tuple[Any, tuple | None, tuple | None, int]:
        """The checked path: the envelope, both images and how many fields became NULL."""
        try:
            env = self.slow.decode(value)
        except msgspec.ValidationError as exc:
            raise Bad(f"the message is not a Debezium change event ({exc})") from None
        except msgspec.DecodeError as exc:
            raise Bad(f"invalid JSON: {exc}") from None
        before, nulled_before = self._image(env.before, "before")
        after, nulled_after = self._image(env.after, "after")
        return env, before, after, nulled_before + nulled_after

    def _image(self, image: Any, which: str) -> tuple[tuple | None, int]:
        if image is None:
            return None, 0
        if type(image) is not dict:
            raise Bad(f'the "{which}" field is not a JSON object but {show(image)}')
        out: list[Any] = []
        nulled = 0
        skipped = self.before_skipped if which == "before" else self.skipped
        for i, ((name, dtype), conv) in enumerate(zip(self.columns, self.convs, strict=True)):
            v = None if i in skipped else image.get(name)
            if v is None:
                out.append(None)
                continue
            try:
                out.append(conv(v))
            except CONVERSION_ERRORS as exc:
                if not self.null_bad_fields:
                    raise Bad(
                        f'column {name!r} ({dtype}) cannot take the value {show(v)} of "{which}": {exc}'
                    ) from None
                out.append(None)
                nulled += 1
        return tuple(out), nulled


def _envelopes(row: Any, meta_keys: list[str], before: Any) -> tuple[Any, Any]:
    """The typed envelope struct of the fast path (images as ``row``, the before-image
    as ``before``) and the untyped one of the checked path, each with the fields the
    metadata keys read."""
    extra: list[tuple[str, Any, None]] = []
    if "source.properties" in meta_keys:
        extra.append(("source", Any, None))
    elif any(k.startswith("source.") for k in meta_keys):
        extra.append(("source", _SOURCE | None, None))
    if "ingestion-timestamp" in meta_keys:
        extra.append(("ts_ms", Any, None))
    images: list[tuple[str, Any, None]] = [
        ("before", before | None, None),
        ("after", row | None, None),
    ]
    fast = msgspec.defstruct("Envelope", [*images, ("op", str | None, None), *extra], gc=False)
    untyped = [("before", Any, None), ("after", Any, None), ("op", Any, None), *extra]
    return fast, msgspec.defstruct("CheckedEnvelope", untyped)


def _keep(prefilter: PreFilter, plain: dict[str, int], columns: list) -> Keep | None:
    """The pre-filter's tests on ``plain`` columns (decoded by msgspec to the row's
    value) whose constants fit the column's type, as a condition over a row struct."""
    tests = tuple(
        t for t in prefilter.tests if t.column in plain and fits(t, columns[plain[t.column]][1])
    )
    fields = {t.column: f"{{o}}.c{plain[t.column]}" for t in tests}
    code, scope = PreFilter(tests).code(fields, "K")
    return None if code is None else Keep(code, scope)


def _rejected_columns(
    columns: list[tuple[str, DataType]], posts: dict[int, Any], key: frozenset[str]
) -> set[int]:
    """The columns a ``Rejected`` row leaves None: those a Python converter reads
    (DECIMAL, temporal, ...), but never a key column nor a character or binary one (a
    TOAST placeholder in a later image takes its value from the stored row). A column
    msgspec decodes to its value costs nothing and is kept; a pre-filter tests only
    those."""
    return {
        i
        for i, (name, dtype) in enumerate(columns)
        if i in posts
        and name not in key
        and dtype.root not in STRING_ROOTS
        and dtype.root not in BINARY_ROOTS
    }


def envelope_decoder() -> msgspec.json.Decoder:
    """Splits a message whose top level is exactly ``schema`` and ``payload`` (Kafka
    Connect's JsonConverter with ``schemas.enable``); refuses any other message."""
    wrapped = msgspec.defstruct(
        "Enveloped",
        [("schema", msgspec.Raw), ("payload", msgspec.Raw)],
        forbid_unknown_fields=True,
    )
    return msgspec.json.Decoder(wrapped)


def outer_decoder() -> msgspec.json.Decoder:
    """Splits ``{"schema": .., "payload": ..}`` without reading either part."""
    wrapped = msgspec.defstruct(
        "Wrapped", [("schema", msgspec.Raw, None), ("payload", msgspec.Raw, None)]
    )
    return msgspec.json.Decoder(wrapped)


# ---------------------------------------------------------------------------
# metadata

_TEXT = converter(string())


def _millis(v: Any, where: str) -> dt.datetime | None:
    if v is None:
        return None
    if type(v) is not int:
        raise Bad(f"{where} is not epoch milliseconds but {show(v)}")
    return _UTC_EPOCH + dt.timedelta(0, 0, v * 1000)  # positional: faster


def _source(env: Any) -> dict[str, Any]:
    src = env.source
    if src is None:
        return {}
    if type(src) is not dict:
        raise Bad(f'the "source" field is not a JSON object but {show(src)}')
    return src


def _source_field(env: Any, field: str) -> Any:
    src = env.source
    if type(src) is _SOURCE:
        return getattr(src, field)
    return _source(env).get(field)


def _text(v: Any) -> str | None:
    return None if v is None else _TEXT(v)


def _source_text(field: str) -> Any:
    return lambda env, schema: _text(_source_field(env, field))


_METADATA: dict[str, Any] = {
    "schema": lambda env, schema: schema,
    "ingestion-timestamp": lambda env, schema: _millis(env.ts_ms, '"ts_ms"'),
    "source.timestamp": lambda env, schema: _millis(_source_field(env, "ts_ms"), '"source.ts_ms"'),
    "source.database": _source_text("db"),
    "source.schema": _source_text("schema"),
    "source.table": _source_text("table"),
    "source.properties": lambda env, schema: {k: _text(v) for k, v in _source(env).items()},
}


def metadata_reader(key: str, dtype: DataType) -> Any:
    """The function ``(envelope, schema text) -> value`` of a metadata key."""
    read = _METADATA.get(key)
    if read is None:
        valid = ", ".join(f"'{k}'" for k in _METADATA)
        raise DeltaflowError(
            f"unknown metadata key '{key}' for format 'debezium-json'; valid keys are {valid}"
        )
    if dtype.root == TIMESTAMP:  # declared without LOCAL TIME ZONE: UTC wall-clock time
        return lambda env, schema: (
            None if (v := read(env, schema)) is None else v.replace(tzinfo=None)
        )
    if dtype.root in (ARRAY, MAP, MULTISET, ROW) and key != "source.properties":
        raise DeltaflowError(
            f"metadata key '{key}' of format 'debezium-json' cannot be read as {dtype}"
        )
    return read
