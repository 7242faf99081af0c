"""JSON records of plain columns written as text, one ``%`` format per row.

For records whose columns are all integers, DECIMALs (written as numbers), strings
or booleans, the record's text is a fixed template with one slot per column: the
field names are written once when the writer is compiled, each value by the C-level
``str`` of an int or Decimal, ``json.encoder.encode_basestring`` for a string (it
escapes exactly what msgspec escapes and leaves other characters as UTF-8), and a
table for booleans. The bytes are those the msgspec struct writer produces.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from operator import itemgetter

import msgspec

from deltaflow.formats.changelog import ADDS, RowKind
from deltaflow.formats.generated import define
from deltaflow.formats.types import BOOLEAN, DECIMAL, INTEGER_ROOTS, STRING_ROOTS, DataType

_NUMBER_ROOTS = INTEGER_ROOTS | {DECIMAL}
_ESCAPED = re.compile('["\\\\\x00-\x1f]')
MEMO_LIMIT = 1 << 16  # distinct keys remembered across batches before the memo restarts


def text_writable(
    names: Sequence[str], types: Sequence[DataType], plain_decimals: bool, omit_nulls: bool
) -> bool:
    """Whether ``compile_text_writer`` writes records of these columns (field names that
    msgspec refuses to write stay with it, and its error)."""
    if omit_nulls or any(_ESCAPED.search(name) for name in names):
        return False
    for dtype in types:
        if dtype.root == DECIMAL and plain_decimals:
            return False
        if (
            dtype.root not in _NUMBER_ROOTS
            and dtype.root not in STRING_ROOTS
            and (dtype.root != BOOLEAN)
        ):
            return False
    return True


def _slot(j: int, dtype: DataType, value: str) -> str:
    """Field j's text (``%s`` of the str template)."""
    if dtype.root in _NUMBER_ROOTS:
        return f"'null' if (x{j} := {value}) is None else x{j}"
    if dtype.root == BOOLEAN:
        return f"B[{value}]"
    return f"'null' if (x{j} := {value}) is None else E(x{j})"


def _byte_slot(j: int, dtype: DataType, value: str) -> str:
    """Field j's bytes (the bytes template): integers by ``%d``, unguarded (a NULL raises
    TypeError and the batch goes to the str writer), the others as ``%b`` (strings by
    msgspec itself, one C call)."""
    if dtype.root in INTEGER_ROOTS:
        return value
    if dtype.root == BOOLEAN:
        return f"BB[{value}]"
    if dtype.root == DECIMAL:  # its s digits, as every DECIMAL value has (formats/types.py)
        return f"b'null' if (x{j} := {value}) is None else str(x{j}).encode()"
    return f"b'null' if (x{j} := {value}) is None else J(x{j})"


def _made(types: Sequence[DataType], values: Sequence[str], template: str = "T") -> str:
    """The expression of one record's bytes, field j read by ``values[j]``."""
    slots = [_slot(j, t, v) for j, (t, v) in enumerate(zip(types, values, strict=True))]
    return f"({template} % (" + ", ".join(slots) + ",)).encode()"


def _bytes_made(types: Sequence[DataType], values: Sequence[str], template: str = "TB") -> str:
    slots = [_byte_slot(j, t, v) for j, (t, v) in enumerate(zip(types, values, strict=True))]
    return f"{template} % (" + ", ".join(slots) + ",)"


# ``live``: whether the batch has no -U/-D (then no row is a tombstone: no test per row).
_ROWS = """\
def safe(kinds, rows):
    return [{safe} for k, r in zip(kinds, rows)]
def run(kinds, rows):
    try:
        if {live}:
            return [{made} for r in rows]
        return [{fast} for k, r in zip(kinds, rows)]
    except TypeError:
        return safe(kinds, rows)
"""


# Keys: the batch's keys picked by one C-level map, the ones not yet known written,
# then every record looked up by one C-level map.
_MEMO = """\
def run(kinds, rows):
    keys = list(map(KEY, rows))
    if len(memo) > LIMIT:
        memo.clear()
    for k in set(keys).difference(memo):
        memo[k] = {made}
    return list(map(memo.__getitem__, keys))
"""
# Keys of integer columns only: each written by the bytes template in one C-level map (a
# ``%d`` costs less than a memo lookup, whose entries are cold once the live keys
# outnumber the caches); a NULL (TypeError) sends the batch to the memo's writer.
_DIRECT = """\
def run(kinds, rows):
    try:
        return list(map(TB.__mod__, map(KEY, rows)))
    except TypeError:
        return memoized(kinds, rows)
"""


def _templates(names: Sequence[str], types: Sequence[DataType]) -> tuple[str, bytes]:
    """The record's str template (``%s`` slots) and bytes template (``%d`` / ``%b``)."""
    fields = [msgspec.json.encode(name).decode().replace("%", "%%") + ":" for name in names]
    slots = ["%d" if t.root in INTEGER_ROOTS else "%b" for t in types]
    text = "{" + ",".join(f + "%s" for f in fields) + "}"
    return text, ("{" + ",".join(map(str.__add__, fields, slots)) + "}").encode()


# Debezium changes: the record's templates inside the envelope of each row kind.
_CHANGES = """\
def safe(kinds, rows):
    return [{safe} for k, r in zip(kinds, rows)]
def run(kinds, rows):
    try:
        return [{fast} for k, r in zip(kinds, rows)]
    except TypeError:
        return safe(kinds, rows)
"""
_ADD = ('{"before":null,"after":', ',"op":"c"}')
_RETRACT = ('{"before":', ',"after":null,"op":"d"}')


def compile_change_writer(
    names: Sequence[str], types: Sequence[DataType]
) -> Callable[[list[int], list[tuple]], list[bytes]]:
    """``run(kinds, rows) -> records``: each change as debezium-json writes it, +I and +U
    as ``{"before":null,"after":{..},"op":"c"}``, -U and -D as
    ``{"before":{..},"after":null,"op":"d"}``, in one generated loop over the batch
    (the columns as ``text_writable`` allows; the bytes msgspec writes for the dict)."""
    text, data = _templates(names, types)
    by_kind = [_ADD if add else _RETRACT for add in ADDS]
    env: dict[str, object] = {
        "T": tuple(head + text + tail for head, tail in by_kind),
        "TB": tuple(head.encode() + data + tail.encode() for head, tail in by_kind),
        "BB": {True: b"true", False: b"false", None: b"null"},
        "E": encode_basestring,
        "J": msgspec.json.Encoder().encode,
        "B": {True: "true", False: "false", None: "null"},
    }
    values = [f"r[{j}]" for j in range(len(names))]
    source = _CHANGES.format(
        safe=_made(types, values, "T[k]"), fast=_bytes_made(types, values, "TB[k]")
    )
    return define(source, "run", env, "change writer")  # type: ignore[no-any-return]


def compile_text_writer(
    names: Sequence[str],
    types: Sequence[DataType],
    positions: Sequence[int],
    tombstones: bool = False,
    memo: bool = False,
) -> Callable[[list[int], list[tuple]], list[bytes | None]]:
    """``run(kinds, rows) -> records``: field j of each record holds ``row[positions[j]]``;
    with ``tombstones`` a -U or -D row gives None; with ``memo`` (record keys of integer
    or string columns) a key's bytes are kept across batches, up to ``MEMO_LIMIT`` keys
    (integer columns alone: written each time, by ``%d``, unless one is NULL)."""
    text, data = _templates(names, types)
    env: dict[str, object] = {
        "T": text,
        "TB": data,
        "BB": {True: b"true", False: b"false", None: b"null"},
        "E": encode_basestring,
        "J": msgspec.json.Encoder().encode,
        "B": {True: "true", False: "false", None: "null"},
        "DEAD": (RowKind.UPDATE_BEFORE, RowKind.DELETE),
        "UB": RowKind.UPDATE_BEFORE,
        "D": RowKind.DELETE,
        "KEY": itemgetter(*positions),
        "memo": {},
        "LIMIT": MEMO_LIMIT,
    }
    if memo:
        one = len(positions) == 1
        made = _made(types, ["k" if one else f"k[{j}]" for j in range(len(positions))])
        source = _MEMO.format(made=made)
        if all(t.root in INTEGER_ROOTS for t in types):
            env["memoized"] = define(source, "run", env, "json key writer")
            source = _DIRECT
    else:
        values = [f"r[{at}]" for at in positions]
        safe, fast = _made(types, values), _bytes_made(types, values)
        live, made = "True", fast
        if tombstones:
            safe, fast = f"None if k in DEAD else {safe}", f"None if k in DEAD else {fast}"
            live = "UB not in kinds and D not in kinds"
        source = _ROWS.format(safe=safe, fast=fast, made=made, live=live)
    return define(source, "run", env, "json writer")  # type: ignore[no-any-return]
