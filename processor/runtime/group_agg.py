"""GroupAggregate: Flink's GroupAggFunction (and MiniBatchGroupAggFunction), on batches.

Without mini-batch the output is exactly Flink's at parallelism 1: every input
record is folded on its own, in order, and the group's result is compared before
and after it:

- the first row of a group (no accumulator in state) emits ``+I``;
- a changed result emits ``-U(old)`` (when the node's changelog mode has UB) and
  ``+U(new)``; an unchanged result emits nothing, unless state TTL is on: then Flink emits
  it anyway, so downstream state of the key is written (and kept alive) too;
- a group whose row count reaches 0 emits ``-D(old)`` and forgets its state;
- a retraction for a group that has no state is ignored.

State is read once per distinct key of the batch (``get_many``) and written once per
key at the end. With mini-batch, all records of one key in the batch are folded
first and the result is compared once (so a -U/+U pair gives at most one pair).

The loop over a batch is ONE generated function per operator (``_compile_per_record``,
``_compile_fold``): the fold of every aggregate, the result values and the emit rules
are written inline for the job's aggregate list, so a record costs a few bytecodes and
no call per aggregate. A Calc that only selects columns for this node (``fused``) is
folded into it: the operator reads the Calc's input rows at the selected positions.

Accumulators that are not state values as they are (DISTINCT value counts, MIN/MAX
counts, LISTAGG lists: ``Aggregates.plain`` is false) stay live between batches when
state TTL is off (``aggs.LiveAccs``): the table buffers the accumulator objects themselves
and dumps each once per checkpoint, and keeps up to ``KEEP_GROUPS`` committed ones
decoded, so a group's DISTINCT sets are not rebuilt and re-listed in every batch. The
bytes written are the same. Plain accumulators (COUNT, SUM, AVG lists, stored as they are)
are kept decoded across commits the same way when state TTL is off, so a group is not
read from LMDB and decoded again after every checkpoint.

Per distinct group of a batch the work is C-level maps or one generated listing: the
state keys are remembered by group id, the results before the batch are one generated
comprehension (``results``), a mini-batch's output is one generated loop (``emit``), and
the accumulators are put with one call. The per-record loop appends output rows only:
most outputs are +U (or -U/+U pairs), so it marks just the +I and -D positions and the
kinds list is written from the marks.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from decimal import localcontext
from operator import itemgetter

from deltaflow.formats.changelog import (
    ADDS,
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Batch,
)
from deltaflow.processor.plan import AggCall, Calc, GroupAggregate, column_selection
from deltaflow.processor.runtime.agg_functions import WIDE
from deltaflow.processor.runtime.aggs import Aggregates, LiveAccs
from deltaflow.processor.runtime.base import Operator, state_key

KEEP_GROUPS = 50_000  # committed accumulators kept decoded (see the module docstring)
KEEP_KEYS = 100_000  # groups whose state key is remembered

_EMIT = {"_adds": ADDS, "_I": INSERT, "_UB": UPDATE_BEFORE, "_UA": UPDATE_AFTER, "_D": DELETE}
_PAIR: tuple[int, int] = (UPDATE_BEFORE, UPDATE_AFTER)


fusable_projection = column_selection  # a fused Calc's columns (physical_rules.fuse_calcs)


def _remap(call: AggCall, columns: list[int]) -> AggCall:
    filter_arg = None if call.filter_arg is None else columns[call.filter_arg]
    return replace(call, args=tuple(columns[i] for i in call.args), filter_arg=filter_arg)


class GroupAggOperator(Operator):
    def __init__(self, node: GroupAggregate, backend, ctx, fused: Calc | None = None) -> None:
        self.node = node
        calls, keys, types = node.aggs, node.group_keys, list(node.inputs[0].types)
        columns = None if fused is None else fusable_projection(fused)
        if fused is not None and columns is not None:
            calls = tuple(_remap(c, columns) for c in calls)
            keys = tuple(columns[k] for k in keys)
            types = list(fused.inputs[0].types)
        self.aggs = Aggregates(calls, types)
        name = f"{node.node_id}:GroupAggregate:acc"
        self.live = not self.aggs.plain and ctx.state_ttl_ms <= 0
        if self.live:
            self.state = backend.table(name, LiveAccs(self.aggs), keep=KEEP_GROUPS)
        elif self.aggs.plain and ctx.state_ttl_ms <= 0:  # the stored value is the accumulator
            self.state = backend.table(name, keep=KEEP_GROUPS)
        else:
            self.state = backend.table(name)
        self.encoded: dict = {}  # group id -> its state key, up to KEEP_KEYS
        self.update_before = node.emits_update_before
        self.mini_batch = ctx.mini_batch
        self.emit_unchanged = ctx.state_ttl_ms > 0
        self.key_columns = keys
        self.group_of, self.gid, self.key_of = _group_ids(keys)
        self.run = self._compile_fold() if self.mini_batch else self._compile_per_record()
        self.results, self.emit = self._compile_results()

    def process(self, batch: Batch, port: int = 0) -> Batch:
        """One state read and one write per distinct group of the batch. Within the batch
        a group is found by its group id: the key column's value itself for a one-column
        key (no tuple per row), the key tuple otherwise."""
        if not batch:
            return Batch()
        gids = list(dict.fromkeys(self.group_of(batch.rows)))
        encoded = self._encoded(gids)
        accs = self._load(encoded)
        if self.mini_batch:
            out, accs = self._fold_per_key(batch, gids, accs)
        else:
            # the last result, a slot of the accumulator while the batch runs
            deque(map(list.append, filter(None, accs), filter(None, self.results(gids, accs))), 0)
            by_group = dict(zip(gids, accs, strict=True))
            rows: list[tuple] = []
            marks: list[tuple[int, int]] = []
            with localcontext(WIDE):  # the generated loop adds DECIMALs with +=, exactly
                self.run(batch.kinds, batch.rows, by_group, marks.append, rows.append, rows)
            out = Batch(_kinds_of(len(rows), marks, self.update_before), rows)
            accs = list(by_group.values())
            deque(map(list.pop, filter(None, accs)), maxlen=0)  # the slots dropped, in C
        self._store(encoded, accs)
        return out

    def _encoded(self, gids: list) -> list[bytes]:
        """The state key of each group id (each encoded once, then remembered up to
        ``KEEP_KEYS`` groups)."""
        known = self.encoded
        encoded = list(map(known.get, gids))
        if None in encoded:
            if len(known) + len(gids) > KEEP_KEYS:
                known.clear()
            for n, key in enumerate(self.key_of(gids)):
                if encoded[n] is None:
                    encoded[n] = known[gids[n]] = state_key(key)
        return encoded  # type: ignore[return-value]

    def _load(self, encoded: list[bytes]) -> list[list | None]:
        stored = self.state.get_many_encoded(encoded)
        if self.aggs.plain or self.live:  # the stored value is the accumulator
            return stored  # type: ignore[return-value]
        load = self.aggs.load
        return [None if raw is None else load(raw) for raw in stored]

    def _store(self, encoded: list[bytes], accs: list[list | None]) -> None:
        """Each group's accumulator put (one call for all), a forgotten group deleted."""
        kept: list[tuple[bytes, list | None]]
        if None in accs:
            for kb, acc in zip(encoded, accs, strict=True):
                if acc is None:
                    self.state.delete_encoded(kb)
            kept = [(kb, acc) for kb, acc in zip(encoded, accs, strict=True) if acc is not None]
        else:
            kept = list(zip(encoded, accs, strict=True))
        if not (self.aggs.plain or self.live):
            dump = self.aggs.dump
            kept = [(kb, dump(acc)) for kb, acc in kept]  # type: ignore[arg-type]
        self.state.put_many_encoded(kept)

    def _compile_per_record(self):  # noqa: ANN202
        """``run(kinds, rows, accs, mark, ov, out)``: folds each record on its own into its
        group's accumulator (``accs`` by group id; its last slot holds the group's last
        result) and emits through ``ov`` (append a row to ``out``), as Flink's
        GroupAggFunction. Most outputs are +U (or -U/+U pairs); the loop marks only the
        others, ``mark((position, kind))`` for a +I or -D, and ``_kinds_of`` writes the
        kinds list from the marks. With an unfiltered COUNT(*) every record changes the
        result, so it is not compared."""
        aggs = self.aggs
        always = self.emit_unchanged or aggs.counts_rows
        changed = "else:" if always else "elif new != prev:"
        before = "                ov(prev)\n" if self.update_before else ""
        add = "\n".join(aggs.fold_lines(False, " " * 12, "acc", "r", wide_context=True))
        sub = "\n".join(aggs.fold_lines(True, " " * 12, "acc", "r", wide_context=True))
        source = f"""def run(kinds, rows, accs, mark, ov, out, {_defaults()}):
    for kind, r in zip(kinds, rows):
        acc = accs[g := {self.gid}]
        if _adds[kind]:
            if acc is None:
                acc = accs[g] = {aggs.init_expr(["None"])}
{add}
        else:
            if acc is None:
                continue
{sub}
        if acc[0] > 0:
            new = {self._result_expr()}
            if (prev := acc[-1]) is None:
                mark((len(out), _I))
                ov(new)
            {changed}
{before}                ov(new)
            acc[-1] = new
        else:
            if (prev := acc[-1]) is not None:
                mark((len(out), _D))
                ov(prev)
            accs[g] = None
"""
        return self._build(source, "run")

    def _compile_fold(self):  # noqa: ANN202
        """``fold(kinds, rows, accs)``: every record folded into its group's accumulator
        (``accs`` by group id); leading retractions of a group without state are dropped,
        as Flink does."""
        aggs = self.aggs
        add = "\n".join(aggs.fold_lines(False, " " * 12, "acc", "r", wide_context=True))
        sub = "\n".join(aggs.fold_lines(True, " " * 12, "acc", "r", wide_context=True))
        source = f"""def fold(kinds, rows, accs, {_defaults()}):
    for kind, r in zip(kinds, rows):
        acc = accs[g := {self.gid}]
        if _adds[kind]:
            if acc is None:
                acc = accs[g] = {aggs.init_expr()}
{add}
        elif acc is not None:
{sub}
"""
        return self._build(source, "fold")

    def _result_expr(self) -> str:
        """The output row: the group key columns (the group id itself for a one-column
        key, else read from the row) and the results."""
        keys = ["g"] if len(self.key_columns) == 1 else [f"r[{k}]" for k in self.key_columns]
        parts = keys + self.aggs.value_exprs("acc")
        return "(" + "".join(f"{p}, " for p in parts) + ")"

    def _build(self, source: str, name: str):  # noqa: ANN202
        return self.aggs.build([source], name, _EMIT)

    def _compile_results(self):  # noqa: ANN202
        """``results(gids, accs)``: each group's result row (None without an accumulator);
        ``emit(gids, accs, prevs, ok, ov)``: a mini-batch's output, once per group in
        first-seen order (+I, -U/+U, +U or -D against the result before the batch);
        returns the accumulators to store (None: forget the group). The result values
        are written inline, as in the fold."""
        values = "".join(f"{v}, " for v in self.aggs.value_exprs("acc"))
        row = f"(g, {values})" if len(self.key_columns) == 1 else f"g + ({values})"
        changed = "else:" if self.emit_unchanged else "elif new != prev:"
        before = "            ok(_UB)\n            ov(prev)\n" if self.update_before else ""
        source = f"""def results(gids, accs):
    return [None if acc is None else {row} for g, acc in zip(gids, accs)]
def emit(gids, accs, prevs, ok, ov, {_defaults()}):
    final = []
    keep = final.append
    for g, acc, prev in zip(gids, accs, prevs):
        if acc is None or acc[0] <= 0:  # None: no state and only retractions (dropped)
            if acc is not None and prev is not None:
                ok(_D)
                ov(prev)
            keep(None)
            continue
        keep(acc)
        new = {row}
        if prev is None:
            ok(_I)
            ov(new)
        {changed}
{before}            ok(_UA)
            ov(new)
    return final
"""
        results = self.aggs.build([source], "results", _EMIT)
        return results, results.__globals__["emit"]

    def _fold_per_key(self, batch: Batch, gids: list, accs: list) -> tuple[Batch, list]:
        """Folds the batch per group, then emits once per group (first-seen order);
        returns the output and the groups' accumulators (None: forget the group)."""
        prevs = self.results(gids, accs)
        by_group = dict(zip(gids, accs, strict=True))
        with localcontext(WIDE):  # the generated fold adds DECIMALs with +=, exactly
            self.run(batch.kinds, batch.rows, by_group)
        out = Batch()
        final = self.emit(gids, list(by_group.values()), prevs, out.kinds.append, out.rows.append)
        return out, final


def _kinds_of(count: int, marks: list[tuple[int, int]], update_before: bool) -> list[int]:
    """The kinds of ``count`` output rows: +I or -D at each marked position, and between
    the marks +U (or -U/+U pairs when the node emits -U)."""
    kinds: list[int]
    if not update_before:
        kinds = [UPDATE_AFTER] * count
        for at, kind in marks:
            kinds[at] = kind
        return kinds
    kinds = []
    for at, kind in marks:
        kinds += _PAIR * ((at - len(kinds)) // 2)
        kinds.append(kind)
    kinds += _PAIR * ((count - len(kinds)) // 2)
    return kinds


def _group_ids(columns: tuple[int, ...]):  # noqa: ANN202
    """For group key ``columns``: ``group_of(rows)`` (each row's group id, in C), the
    group id as generated source over row ``r``, and ``key_of(ids)`` (the key tuples)."""
    if not columns:
        return (lambda rows: [()]), "()", lambda ids: list(ids)
    if len(columns) == 1:
        (k,) = columns
        one = itemgetter(k)
        return (lambda rows: map(one, rows)), f"r[{k}]", lambda ids: list(zip(ids))
    items = "".join(f"r[{k}], " for k in columns)
    many = itemgetter(*columns)
    return (lambda rows: map(many, rows)), f"({items})", lambda ids: list(ids)


def _defaults() -> str:
    """Keyword defaults binding the row kinds as locals of a generated function."""
    return ", ".join(f"{name}={name}" for name in _EMIT)
