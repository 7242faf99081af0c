"""Plumbing shared by the json, raw, avro and Confluent Avro formats.

Option checking (unknown option names fail with the list of valid ones) and the
bad-input policy: a record that cannot be decoded either stops the job with a
``FormatError`` naming topic/partition/offset, is counted and skipped, or is kept
as a dead letter, as ``FormatSpec.on_error`` says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from deltaflow.formats.changelog import RawBatch, RowKind
from deltaflow.formats.errors import DeltaflowError, FormatError
from deltaflow.formats.generated import define
from deltaflow.formats.spec import ON_ERROR_CHOICES, FormatSpec


def check_options(fmt: str, options: dict[str, str], allowed: Iterable[str]) -> None:
    """Raise ``DeltaflowError`` for an option ``fmt`` does not know, listing the known ones."""
    known = sorted(allowed)
    for key in options:
        if key not in known:
            valid = ", ".join(f"'{fmt}.{k}'" for k in known) or "none"
            raise DeltaflowError(
                f"unknown option '{fmt}.{key}' for format '{fmt}'; valid options are {valid}"
            )


def bool_option(fmt: str, options: dict[str, str], key: str, default: bool) -> bool:
    text = options.get(key)
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise DeltaflowError(f"option '{fmt}.{key}' must be 'true' or 'false', not {text!r}")
    return lowered == "true"


def choice_option(
    fmt: str, options: dict[str, str], key: str, choices: tuple[str, ...], default: str
) -> str:
    text = options.get(key, default)
    for choice in choices:
        if text.upper() == choice.upper():
            return choice
    listed = ", ".join(f"'{c}'" for c in choices)
    raise DeltaflowError(f"option '{fmt}.{key}' must be one of {listed}, not {text!r}")


def on_error_policy(fmt: str, spec: FormatSpec) -> str:
    """The bad-input policy; ``ignore-parse-errors = true`` means skip, as in Flink."""
    if spec.on_error not in ON_ERROR_CHOICES:
        raise DeltaflowError(
            f"bad-input policy {spec.on_error!r} for format '{fmt}' is not one of "
            + ", ".join(ON_ERROR_CHOICES)
        )
    if spec.on_error == "fail" and bool_option(fmt, spec.options, "ignore-parse-errors", False):
        return "skip"
    return spec.on_error


class RecordDecoder:
    """Base of the decoders here: changelog mode, counters and the bad-input policy."""

    changelog_mode: frozenset[RowKind] = frozenset({RowKind.INSERT})
    hint = "Fix the producer, or choose a bad-input policy of skip or dead-letter"
    filtered = 0  # a decoder with a pre-filter counts the records it dropped
    logical_messages = 0  # only Debezium has logical decoding messages

    def __init__(self, fmt: str, on_error: str) -> None:
        self.fmt = fmt
        self.on_error = on_error
        self.skipped = 0
        self.dead_letters: list[tuple[str, int, int, bytes | None, str]] = []

    def reject(self, raw: RawBatch, index: int, reason: str, hint: str | None = None) -> None:
        """Apply the bad-input policy to record ``index`` of ``raw``; raises under "fail"."""
        offset = raw.offsets[index] if index < len(raw.offsets) else None
        value = raw.values[index]
        if self.on_error == "skip":
            self.skipped += 1
            return
        if self.on_error == "dead-letter":
            self.dead_letters.append((raw.topic, raw.partition, offset or 0, value, reason))
            return
        raise FormatError(
            f"cannot decode {self.fmt} record: {reason}",
            topic=raw.topic,
            partition=raw.partition,
            offset=offset,
            payload=value,
            hint=self.hint if hint is None else hint,
        )


def reason_of(exc: BaseException) -> str:
    """A one-line reason from a conversion exception."""
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0]


# ---------------------------------------------------------------------------
# rows compiled once per schema

Guard = type | tuple[int, int] | None


def compile_row_reader(
    names: Sequence[str],
    converters: Sequence[Callable[[object], object] | None],
    guards: Sequence[Guard],
    strict: bool = False,
) -> Callable[[dict], tuple]:
    """``row(obj) -> tuple``: the named fields of one decoded record, converted.

    A field missing from ``obj`` is NULL (with ``strict`` it raises ``KeyError``).
    ``converters[i]`` converts a non-null value (None: never); ``guards[i]`` lets
    values pass unconverted: a type (exactly that type), an int range ``(lo, hi)``,
    or None (always convert). Compiled to straight-line Python, one call per record.
    """
    env: dict[str, object] = {}
    lines = ["def row(d):"]
    for i, (name, conv, guard) in enumerate(zip(names, converters, guards, strict=True)):
        env[f"N{i}"] = name
        lines.append(f"    v{i} = d[N{i}]" if strict else f"    v{i} = d.get(N{i})")
        if conv is None:
            continue
        env[f"C{i}"] = conv
        if guard is None:
            test = "True"
        elif isinstance(guard, tuple):
            env[f"L{i}"], env[f"H{i}"] = guard
            test = f"(type(v{i}) is not int or not L{i} <= v{i} <= H{i})"
        else:
            env[f"F{i}"] = guard
            test = f"type(v{i}) is not F{i}"
        lines.append(f"    if v{i} is not None and {test}:")
        lines.append(f"        v{i} = C{i}(v{i})")
    lines.append("    return (" + "".join(f"v{i}, " for i in range(len(names))) + ")")
    return define("\n".join(lines) + "\n", "row", env, "row reader")  # type: ignore[no-any-return]


def compile_row_writer(
    names: Sequence[str], converters: Sequence[Callable[[object], object] | None]
) -> Callable[[tuple], dict]:
    """``obj(row) -> dict``: one row as a dict by field name, non-null values converted."""
    env: dict[str, object] = {}
    parts = []
    for i, (name, conv) in enumerate(zip(names, converters, strict=True)):
        env[f"N{i}"] = name
        if conv is None:
            parts.append(f"N{i}: r[{i}]")
        else:
            env[f"C{i}"] = conv
            parts.append(f"N{i}: None if (x{i} := r[{i}]) is None else C{i}(x{i})")
    source = "def obj(r):\n    return {" + ", ".join(parts) + "}\n"
    return define(source, "obj", env, "row writer")  # type: ignore[no-any-return]


def compile_batch_writer(
    names: Sequence[str],
    converters: Sequence[Callable[[object], object] | None],
    positions: Sequence[int],
    write: Callable[[object], bytes],
    tombstones: bool = False,
    omit_nulls: bool = False,
    memo: bool = False,
) -> Callable[[list[int], list[tuple]], list[bytes | None]]:
    """``run(kinds, rows) -> records``: one ``write(record)`` per row, compiled per batch.

    The record is a msgspec struct whose fields, in order, are ``names`` (encoded as
    the dict of the same fields would be, faster); field j holds ``row[positions[j]]``,
    converted when non-null as in ``compile_row_writer``, so rows may be wider than
    the record. ``omit_nulls`` leaves null fields out; with ``tombstones`` a -U or -D
    row gives None; with ``memo`` (record keys: no tombstones) equal field values are
    written once per batch (only for values whose equality means equal text).
    """
    fields = [(f"f{j}", Any, None) for j in range(len(names))]
    rename = {f"f{j}": name for j, name in enumerate(names)}
    record = msgspec.defstruct("Record", fields, rename=rename, omit_defaults=omit_nulls, gc=False)
    env: dict[str, object] = {
        "F": write,
        "S": record,
        "DEAD": (RowKind.UPDATE_BEFORE, RowKind.DELETE),
    }
    parts = []
    for j, (conv, at) in enumerate(zip(converters, positions, strict=True)):
        if conv is None:
            parts.append(f"r[{at}]")
        else:
            env[f"C{j}"] = conv
            parts.append(f"None if (x{j} := r[{at}]) is None else C{j}(x{j})")
    made = "F(S(" + ", ".join(parts) + "))"
    body = _batch_body(made, positions, tombstones, memo)
    return define(f"def run(kinds, rows):\n{body}", "run", env, "batch writer")  # type: ignore[no-any-return]


def _batch_body(made: str, positions: Sequence[int], tombstones: bool, memo: bool) -> str:
    """The body of ``run(kinds, rows)``: ``made`` is the expression of one row's record."""
    if memo:  # a record is never empty, so "or" writes a key only when not yet memoised
        key = ", ".join(f"r[{at}]" for at in positions) + ("," if len(positions) > 1 else "")
        return (
            "    memo = {}\n    get, put = memo.get, memo.setdefault\n"
            f"    return [get(k := ({key})) or put(k, {made}) for r in rows]"
        )
    if tombstones:
        return f"    return [None if k in DEAD else {made} for k, r in zip(kinds, rows)]"
    return f"    return [{made} for r in rows]"
