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

from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import msgspec

from deltaflow.formats import json_convert as jc
from deltaflow.formats.changelog import INSERT, Batch, RawBatch
from deltaflow.formats.codec_support import (
    RecordDecoder,
    bool_option,
    check_options,
    choice_option,
    compile_batch_writer,
    on_error_policy,
    reason_of,
)
from deltaflow.formats.codec_support import compile_row_reader as compile_rows
from deltaflow.formats.errors import DeltaflowError, FormatError, excerpt
from deltaflow.formats.generated import define
from deltaflow.formats.json_text import compile_text_writer, text_writable
from deltaflow.formats.prefilter import PreFilter
from deltaflow.formats.prefilter import fits as check_fits
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import (
    DECIMAL,
    INT_RANGES,
    INTEGER_ROOTS,
    ROW,
    STRING_ROOTS,
    TIMESTAMP,
    DataType,
    decimal_params,
    has_decimal,
    plain_type,
)

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
# column types whose equal values always have the same JSON text
_MEMO_ROOTS = INTEGER_ROOTS | STRING_ROOTS


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
# decoder and encoder


def _undemanded(value: object) -> None:
    return None


# The batch loop: a record failing ``keep`` (a pre-filter) is counted and its row never
# built. Without a pre-filter ``keep`` is ``True``, which CPython folds away at compile time.
_BATCH = """\
def run(values, rows, slow):
    add = rows.append
    dropped = 0
    for i, value in enumerate(values):
        if value is None:
            continue  # a tombstone carries no row
        try:
            o = decode(value)
            if {keep}:
                add({row})
            else:
                dropped += 1
            continue
        except ERRORS:
            pass
        slow(i, value)
    return dropped
"""


def _typed_batch(columns: list, convs: list, skipped: set[int], exact: bool,
                 prefilter: PreFilter | None = None, iso: bool = False):  # noqa: ANN202  # fmt: skip
    """``run(values, rows, slow) -> dropped``: one typed msgspec decode per record into a
    struct of the demanded columns (strings, booleans, doubles, integers in range typed;
    the rest converted as on the untyped path, floats read exactly when a DECIMAL needs
    it); a record the typed decode or a converter refuses goes to ``slow(i, value)``.
    With a ``prefilter``, its tests on columns msgspec decodes to the row's own value
    run first and a record failing them is dropped (counted, its row never built)."""
    fields, parts, env = [], [], {}
    for i, (_, dtype) in enumerate(columns):
        if i in skipped:
            parts.append("None")
            continue
        typed = jc.msgspec_type(dtype)
        if dtype.root == DECIMAL:  # rounded inline; the converter decides anything else
            typed = Decimal
            env[f"C{i}"] = convs[i]
            env[f"Q{i}"], env[f"L{i}"], env[f"W{i}"] = jc.decimal_bounds(*decimal_params(dtype))
            fits = f"(q{i} := x{i}.quantize(Q{i}, HALF_UP, W{i})).is_finite() and abs(q{i}) < L{i}"
            parts.append(f"None if (x{i} := o.c{i}) is None else q{i} if {fits} else C{i}(x{i})")
        elif dtype.root == TIMESTAMP:
            typed = None
            parts.append(_timestamp_part(f"x{i}", f"o.c{i}", dtype, convs[i], env, iso))
        elif dtype.root == ROW and _structable(dtype):  # typed in C, field by field
            typed, expr = _row_struct(dtype, f"x{i}", env, iso)
            parts.append(f"None if (x{i} := o.c{i}) is None else {expr}")
        elif typed is None:
            env[f"C{i}"] = convs[i]
            parts.append(f"None if (x{i} := o.c{i}) is None else C{i}(x{i})")
        else:
            parts.append(f"o.c{i}")
        fields.append((f"c{i}", (Any if typed is None else typed) | None, None))
    rename = {f"c{i}": name for i, (name, _) in enumerate(columns)}
    record = msgspec.defstruct("Record", fields, rename=rename, gc=False)
    env["decode"] = msgspec.json.Decoder(record, float_hook=Decimal if exact else None).decode
    env["ERRORS"] = (*CONVERSION_ERRORS, ArithmeticError)  # quantize's InvalidOperation
    env["HALF_UP"] = ROUND_HALF_UP
    row = "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    keep = None if prefilter is None else _keep(prefilter, columns, parts, env)
    source = _BATCH.format(row=row, keep="True" if keep is None else keep)
    return define(source, "run", env, "json reader")


def _timestamp_part(name: str, value: str, dtype: DataType, conv, env: dict, iso: bool) -> str:  # noqa: ANN001
    """The expression of a TIMESTAMP value ``value`` (bound to ``name``) through its
    converter ``conv``; well-formed text of at most p fraction digits parsed in C
    (``json_convert.timestamp_shortcut``), anything else by the converter."""
    env[f"C{name}"] = conv
    shortcut = jc.timestamp_shortcut(dtype, iso)
    read = f"C{name}({name})"
    if shortcut is not None:
        env[f"M{name}"], env[f"P{name}"] = shortcut
        read = f"P{name}({name}) if M{name}({name}) else {read}"
    return f"None if ({name} := {value}) is None else {read}"


def _structable(dtype: DataType) -> bool:
    """A ROW whose field names are distinct (one JSON key each), as are its nested ROWs'."""
    names = [n for n, _ in dtype.fields]
    return len(set(names)) == len(names) and all(
        _structable(t) for _, t in dtype.fields if t.root == ROW
    )


def _row_struct(dtype: DataType, var: str, env: dict, iso: bool) -> tuple[type, str]:
    """The msgspec struct a ROW's JSON object is decoded into, and the expression of its
    tuple from the struct ``var``: a field msgspec types as its own value (a string, a
    boolean, a double, an integer in range) taken as it is, a nested ROW the same way, any
    other field (msgspec's ``Any``) through the field's converter, as the row reader does.
    A value the struct refuses sends the record to the untyped path, which decides."""
    fields, parts = [], []
    for j, (_, ftype) in enumerate(dtype.fields):
        typed, name = jc.msgspec_type(ftype), f"{var}_{j}"
        if ftype.root == ROW:
            typed, inner = _row_struct(ftype, name, env, iso)
            parts.append(f"None if ({name} := {var}.f{j}) is None else {inner}")
        elif ftype.root == TIMESTAMP:
            conv = jc.decoder_for(ftype, iso, False)
            typed, part = Any, _timestamp_part(name, f"{var}.f{j}", ftype, conv, env, iso)
            parts.append(part)
        elif typed is None or ftype.root == DECIMAL:
            typed, env[f"C{name}"] = Any, jc.decoder_for(ftype, iso, False)
            parts.append(f"None if ({name} := {var}.f{j}) is None else C{name}({name})")
        else:
            parts.append(f"{var}.f{j}")
        fields.append((f"f{j}", typed | None, None))
    rename = {f"f{j}": n for j, (n, _) in enumerate(dtype.fields)}
    struct = msgspec.defstruct("Row", fields, rename=rename, gc=False)
    return struct, "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _keep(prefilter: PreFilter, columns: list, parts: list[str], env: dict) -> str | None:
    """The pre-filter's condition over the record struct ``o``: its tests on columns the
    struct holds as the row's own value (``o.c<i>``) whose constants fit the column."""
    plain = {columns[i][0]: i for i, part in enumerate(parts) if part == f"o.c{i}"}
    tests = tuple(
        t
        for t in prefilter.tests
        if t.column in plain and check_fits(t, columns[plain[t.column]][1])
    )
    keep, scope = PreFilter(tests).code({t.column: f"o.c{plain[t.column]}" for t in tests}, "K")
    env.update(scope)
    return keep


class JsonDecoder(RecordDecoder):
    """Decodes JSON objects into +I rows of the physical columns."""

    def __init__(self, spec: FormatSpec, fmt: str = "json") -> None:
        super().__init__(fmt, on_error_policy(fmt, spec))
        self.hint = (
            f"Fix the producer, or set '{fmt}.ignore-parse-errors' = 'true' to skip bad records"
        )
        options = spec.options
        self.fail_on_missing = bool_option(fmt, options, "fail-on-missing-field", False)
        if self.fail_on_missing and bool_option(fmt, options, "ignore-parse-errors", False):
            raise DeltaflowError(
                f"options '{fmt}.fail-on-missing-field' and '{fmt}.ignore-parse-errors' "
                "cannot both be 'true'; choose one"
            )
        self.columns = list(spec.physical)
        self.filtered = 0  # records the pre-filter dropped (never built into rows)
        exact = any(has_decimal(t) for _, t in self.columns)
        self._parser = msgspec.json.Decoder(float_hook=Decimal if exact else None)
        iso = _iso(spec)
        self._convs = [jc.decoder_for(t, iso, self.fail_on_missing) for _, t in self.columns]
        guards = [INT_RANGES.get(t.root) or plain_type(t) for _, t in self.columns]
        convs = list(self._convs)
        for i, (name, _) in enumerate(self.columns):
            if spec.demanded is not None and name not in spec.demanded:
                convs[i], guards[i] = _undemanded, None  # not converted: None, as unread
        self._row = compile_rows(spec.names, convs, guards, strict=self.fail_on_missing)
        self._run = None
        if not self.fail_on_missing:  # a typed struct cannot tell a missing field from null
            skipped = {i for i, conv in enumerate(convs) if conv is _undemanded}
            self._run = _typed_batch(self.columns, self._convs, skipped, exact, spec.prefilter, iso)

    def decode(self, raw: RawBatch) -> Batch:
        rows: list[tuple] = []
        if self._run is not None:
            slow = lambda i, value: self._one(raw, i, value, rows)  # noqa: E731
            self.filtered += self._run(raw.values, rows, slow)
        else:
            for i, value in enumerate(raw.values):
                if value is not None:  # a tombstone carries no row
                    self._one(raw, i, value, rows)
        return Batch([INSERT] * len(rows), rows)

    def _one(self, raw: RawBatch, i: int, value: bytes, rows: list[tuple]) -> None:
        """One record on the untyped path: each column's converter decides."""
        try:
            rows.append(self._row(self._parser.decode(value)))
        except CONVERSION_ERRORS as exc:
            if value.strip() in (b"", b"null"):
                return  # Flink reads an empty or JSON null message as no row
            self.reject(raw, i, self.diagnose(value, exc))

    def diagnose(self, value: bytes, exc: BaseException) -> str:
        """Which column failed and why (runs only for a bad record)."""
        try:
            obj = self._parser.decode(value)
        except msgspec.DecodeError as err:
            return f"malformed JSON ({reason_of(err)})"
        if not isinstance(obj, dict):
            return f"expected a JSON object, got {excerpt(value, 60)}"
        for i, (name, dtype) in enumerate(self.columns):
            if name not in obj:
                if self.fail_on_missing:
                    return f"field {name!r} is missing ('json.fail-on-missing-field' is true)"
                continue
            if obj[name] is None:
                continue
            try:
                self._convs[i](obj[name])
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
        self._plain = opts.plain
        self.ignore_nulls = bool_option(fmt, options, "encode.ignore-null-fields", False)
        self._names = spec.names
        self._types = spec.types
        try:
            self._convs = [jc.encoder_for(t, opts) for _, t in spec.physical]
        except TypeError as exc:
            raise DeltaflowError(f"format '{fmt}': {exc}") from None
        self._write = msgspec.json.Encoder(decimal_format="number").encode
        self._all = self.batch_writer(range(len(self._names)))

    def batch_writer(
        self, positions: Sequence[int], tombstones: bool = False, memo: bool = False
    ) -> Callable[[list[int], list[tuple]], list[bytes | None]]:
        """``run(kinds, rows)``: the records of a batch whose rows hold column j at
        ``positions[j]`` (with ``tombstones``: None for -U and -D), in one call. With
        ``memo`` (for record keys) equal integer or string columns are written once (per
        batch; across batches too for records the text writer takes)."""
        memo = memo and all(t.root in _MEMO_ROOTS for t in self._types)
        if text_writable(self._names, self._types, self._plain, self.ignore_nulls):
            run = compile_text_writer(self._names, self._types, list(positions), tombstones, memo)
        else:
            run = compile_batch_writer(
                self._names, self._convs, list(positions), self._write, tombstones,
                omit_nulls=self.ignore_nulls, memo=memo,
            )  # fmt: skip

        def checked(kinds: list[int], rows: list[tuple]) -> list[bytes | None]:
            try:
                return run(kinds, rows)
            except (ValueError, TypeError) as exc:
                raise FormatError(f"cannot encode a row as JSON: {reason_of(exc)}") from None

        return checked

    def encode(self, batch: Batch) -> list[bytes | None]:
        return self._all(batch.kinds, batch.rows)
