"""Changelog text (``+I[1, 10]``) in and out, and plan nodes built by hand, for runtime tests."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.printing import row_printer
from deltaflow.formats.types import DataType, parse_type
from deltaflow.processor.plan import Field, Join, Sink, TableSourceScan

ALL = frozenset({0, 1, 2, 3})
NO_UB = frozenset({0, 2, 3})
INSERT_ONLY = frozenset({0})


def types(*names: str) -> list[DataType]:
    return [parse_type(n) for n in names]


def _value(text: str, dtype: DataType) -> object:
    if text == "null":
        return None
    root = dtype.root
    if dtype.is_integer:
        return int(text)
    if root == "DECIMAL":
        return Decimal(text)
    if root in ("DOUBLE", "FLOAT"):
        return float(text)
    if root == "BOOLEAN":
        return text == "true"
    if root == "TIMESTAMP":
        return dt.datetime.fromisoformat(text)
    if root == "TIMESTAMP_LTZ":
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return text


def parse_changelog(text: str, column_types: list[DataType]) -> Batch:
    """Lines like ``+I[1, Alice]`` as a batch of typed rows (``, `` separates fields)."""
    out = Batch()
    for line in text.splitlines():
        line = line.strip("\n")
        if not line.strip():
            continue
        kind = RowKind.parse(line[:2])
        parts = line[3:-1].split(", ")
        if len(parts) != len(column_types):
            raise ValueError(f"{line!r} has {len(parts)} fields, expected {len(column_types)}")
        out.append(kind, tuple(_value(p, t) for p, t in zip(parts, column_types, strict=True)))
    return out


def show(batch: Batch, column_types: list[DataType]) -> list[str]:
    printer = row_printer(column_types)
    return [printer(k, r) for k, r in zip(batch.kinds, batch.rows, strict=True)]


def fields(column_types: list[DataType], prefix: str = "c") -> tuple[Field, ...]:
    return tuple(Field(f"{prefix}{i}", t) for i, t in enumerate(column_types))


def scan(node_id: int, column_types: list[DataType], mode=ALL, **kw) -> TableSourceScan:
    fs = fields(column_types)
    return TableSourceScan(
        node_id=node_id,
        fields=fs,
        changelog_mode=mode,
        table=f"t{node_id}",
        options={},
        physical=fs,
        **kw,
    )


def lines(text: str) -> list[str]:
    return [ln for ln in text.strip("\n").splitlines() if ln.strip()]


def print_sink(node_id: int, child, upsert: bool = False, pk: tuple[str, ...] = ()) -> Sink:
    """A print sink of ``child``'s columns (with ``upsert``: SinkUpsertMaterializer on ``pk``)."""
    return Sink(
        node_id=node_id,
        inputs=(child,),
        fields=child.fields,
        changelog_mode=child.changelog_mode,
        table=f"sink{node_id}",
        options={"connector": "print"},
        physical=child.fields,
        primary_key=pk,
        upsert_materialize=upsert,
    )


def feed_in_batches(op, backend, steps: list, size: int) -> Batch:
    """Feeds ``steps`` ((port, kind, row) in order) to ``op`` in batches of up to ``size``
    changes of one port, never splitting a -U/+U pair, committing after each; the output."""
    out = Batch()
    i = 0
    while i < len(steps):
        port, batch = steps[i][0], Batch()
        while i < len(steps) and steps[i][0] == port and len(batch) < size:
            batch.append(steps[i][1], steps[i][2])
            i += 1
        if batch.kinds[-1] == RowKind.UPDATE_BEFORE:  # never split a -U/+U pair
            batch.append(steps[i][1], steps[i][2])
            i += 1
        out.extend(op.process(batch, port))
        backend.commit({})
    return out


def run_with_actions(
    steps: list, actions: list, start, run, commit_at_end: bool = False
) -> tuple[list, object]:
    """Runs ``steps`` (port, changes) through operators made by ``start()`` -> (backend,
    op), one ``run(op, port, changes)`` -> output pairs each; after step i, ``actions[i]``
    (default "none"): "commit", "restart" (a commit, then a new operator on the reopened
    state) or "crash" (a new operator on the state of the last commit, the steps since
    replayed and their first output taken back). Returns the output and the last operator
    (its backend closed; committed first with ``commit_at_end``)."""
    backend, op = start()
    out: list = []
    mark = 0  # the output up to the last commit
    since: list = []  # the steps after it
    try:
        for i, (port, changes) in enumerate(steps):
            out += run(op, port, changes)
            since.append((port, changes))
            action = actions[i] if i < len(actions) else "none"
            if action in ("commit", "restart"):
                backend.commit({})
                mark, since = len(out), []
            if action in ("restart", "crash"):
                backend.close()
                del out[mark:]
                backend, op = start()
                for port_, changes_ in since:
                    out += run(op, port_, changes_)
        if commit_at_end:
            backend.commit({})
    finally:
        backend.close()
    return out, op


def inner_join_node(left: list, right: list, keys: bool, condition=None, **unique) -> Join:
    """An INNER join (node 3) of scans 1 and 2 with columns ``left`` and ``right``, on
    left column 1 = right column 0 when ``keys`` (else keyless); ``unique``: the sides'
    ``left_unique_keys`` / ``right_unique_keys``."""
    return Join(
        node_id=3,
        inputs=(scan(1, left), scan(2, right)),
        fields=fields(left + right),
        changelog_mode=ALL,
        join_type="INNER",
        left_keys=(1,) if keys else (),
        right_keys=(0,) if keys else (),
        condition=condition,
        **unique,
    )
