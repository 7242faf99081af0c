"""Logical plan nodes. Each derives its own traits beside its semantics, as in Flink:

* ``produces()``: the changelog kinds it can emit given its inputs (bottom-up);
* ``can_drop_update_before()``: whether it can emit its changes without -U rows, and
  ``input_needs_update_before(needs)``: for each input, whether it must keep -U rows
  (top-down from the sinks, as Flink's update-kind inference: a consumer asks for
  "update-after only" and falls back to "before and after" when a producer cannot);
* ``upsert_keys()``: column sets each identifying one live row of the output.

Columns are by index; ``fields`` is the output schema.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from deltaflow.processor.exprs.nodes import Call, Expr, InputRef
from deltaflow.processor.plan import AggCall, Field, Key, Mode, WindowSpec
from deltaflow.processor.planner.catalog import CHANGELOG_FORMATS, Table

I, UB, UA, D = 0, 1, 2, 3  # noqa: E741 - Flink spells the kinds I, UB, UA, D
INSERT_ONLY: Mode = frozenset({I})
ALL: Mode = frozenset({I, UB, UA, D})
UPSERT: Mode = frozenset({UA, D})


@dataclass(eq=False)
class LNode:
    inputs: list[LNode]
    fields: list[Field]
    mode: Mode = field(default=frozenset(), init=False)  # final, after top-down refinement
    keys: tuple[Key, ...] = field(default=(), init=False)

    def produces(self, inputs: list[Mode]) -> Mode:
        return frozenset().union(*inputs) if inputs else INSERT_ONLY

    def input_needs_update_before(self, needs: bool) -> list[bool]:
        """Stateful operators retract by -U, so they ask their inputs for them."""
        return [True] * len(self.inputs)

    def can_drop_update_before(self) -> bool:
        """Stateful operators choose what they emit, so they can leave out -U rows."""
        return True

    def upsert_keys(self) -> tuple[Key, ...]:
        return ()


def with_inputs(node: LNode, inputs: list[LNode]) -> LNode:
    """``node`` itself when ``inputs`` are its inputs, else a copy of it with them: a rule
    rewriting a subtree copies the nodes above the change and leaves the others as they are
    (a table's scan and computed-column Calc are shared by every INSERT reading it)."""
    same = len(inputs) == len(node.inputs)
    if same and all(a is b for a, b in zip(inputs, node.inputs, strict=True)):
        return node
    clone = copy.copy(node)
    clone.inputs = inputs
    return clone


@dataclass(eq=False)
class Scan(LNode):
    table: Table = None  # type: ignore[assignment]
    primary_key: Key = ()
    watermark_expr: Expr | None = None  # over the scan's output row
    # before-images from state: the source keeps the last row per primary key
    # (rules/insert_changelog_normalize.py)
    normalize: bool = False

    def produces(self, inputs: list[Mode]) -> Mode:
        if self.table.connector == "upsert-kafka":
            return UPSERT  # inserts arrive as UA, as Flink prints it: [UA,D]
        if self.table.format in CHANGELOG_FORMATS:
            return ALL
        return INSERT_ONLY

    def can_drop_update_before(self) -> bool:
        return UB not in self.mode  # a source emits what its format holds

    def upsert_keys(self) -> tuple[Key, ...]:
        return (self.primary_key,) if self.primary_key else ()


@dataclass(eq=False)
class Calc(LNode):
    projection: list[Expr] = field(default_factory=list)
    condition: Expr | None = None

    def input_needs_update_before(self, needs: bool) -> list[bool]:
        return [needs]

    def can_drop_update_before(self) -> bool:
        """Flink (FLINK-20634): a filter may drop the -U and keep the +U of one update, so a
        filtering Calc keeps -U rows; a projection passes its input's ability on."""
        if UB not in self.mode:
            return True
        return self.condition is None and self.inputs[0].can_drop_update_before()

    def upsert_keys(self) -> tuple[Key, ...]:
        where = {}
        for i, e in enumerate(self.projection):
            ref = _kept_column(e)
            if ref is not None:
                where[ref] = i
        return tuple(
            tuple(where[c] for c in key)
            for key in self.inputs[0].keys
            if all(c in where for c in key)
        )


def _kept_column(e: Expr) -> int | None:
    """The input column ``e`` is, unchanged or through a cast that loses nothing (nullability
    only, or a string widened to a longer VARCHAR as a sink column adds): it keeps a key."""
    if isinstance(e, InputRef):
        return e.index
    if not (isinstance(e, Call) and e.op == "CAST" and isinstance(e.operands[0], InputRef)):
        return None
    src, dst = e.operands[0].type, e.type
    if src.with_nullable(True) == dst.with_nullable(True):
        return e.operands[0].index
    widened = src.root in ("CHAR", "VARCHAR") and dst.root == "VARCHAR"
    return e.operands[0].index if widened and (src.length or 1) <= (dst.length or 0) else None


@dataclass(eq=False)
class ChangelogNormalize(LNode):
    key: Key = ()

    def produces(self, inputs: list[Mode]) -> Mode:
        return ALL

    def input_needs_update_before(self, needs: bool) -> list[bool]:
        return [False]

    def upsert_keys(self) -> tuple[Key, ...]:
        return (self.key,)


@dataclass(eq=False)
class DropUpdateBefore(LNode):
    def produces(self, inputs: list[Mode]) -> Mode:
        return inputs[0] - {UB}

    def upsert_keys(self) -> tuple[Key, ...]:
        return self.inputs[0].keys


@dataclass(eq=False)
class Aggregate(LNode):
    group_keys: Key = ()
    aggs: list[AggCall] = field(default_factory=list)

    def produces(self, inputs: list[Mode]) -> Mode:
        return frozenset({I, UB, UA}) if inputs[0] == INSERT_ONLY else ALL

    def upsert_keys(self) -> tuple[Key, ...]:
        return (tuple(range(len(self.group_keys))),)


@dataclass(eq=False)
class WindowAggregate(LNode):
    window: WindowSpec = None  # type: ignore[assignment]
    group_keys: Key = ()
    aggs: list[AggCall] = field(default_factory=list)

    def produces(self, inputs: list[Mode]) -> Mode:
        return INSERT_ONLY

    def upsert_keys(self) -> tuple[Key, ...]:
        n = len(self.group_keys) + len(self.aggs)
        return (tuple(range(len(self.group_keys))) + (n, n + 1),)


@dataclass(eq=False)
class Join(LNode):
    join_type: str = "INNER"
    left_keys: Key = ()
    right_keys: Key = ()
    condition: Expr | None = None
    rowtimes: Key = ()  # columns of (left + right) that are event-time attributes of an input

    def produces(self, inputs: list[Mode]) -> Mode:
        if self.join_type == "INNER" and all(m == INSERT_ONLY for m in inputs):
            return INSERT_ONLY
        return ALL

    def can_drop_update_before(self) -> bool:
        """Flink: a join emits only +U when each updating input is keyed within its join key
        (``JoinKeyContainsUniqueKey``) and can itself leave out -U rows."""
        return all(
            c.mode <= INSERT_ONLY | {D}
            or (self.input_spec(i) == "JoinKeyContainsUniqueKey" and c.can_drop_update_before())
            for i, c in enumerate(self.inputs)
        )

    # Inputs keep their -U rows (the base class rule): deltaflow's join state is a multiset
    # retracted by -U/-D, where Flink would let an input keyed within its join key drop them.

    def input_spec(self, side: int) -> str:
        keys = self.inputs[side].keys
        join_keys = set(self.left_keys if side == 0 else self.right_keys)
        if any(set(k) <= join_keys for k in keys):
            return "JoinKeyContainsUniqueKey"
        return "HasUniqueKey" if keys else "NoUniqueKey"

    def upsert_keys(self) -> tuple[Key, ...]:
        """Flink: a side's key survives only if it holds that side's join keys (rows of one key
        stay on one shuffle), and only when the other side's join keys are unique there."""
        left, right = self.inputs
        offset = len(left.fields)
        left_keys = [k for k in left.keys if set(self.left_keys) <= set(k)]
        right_keys = [
            tuple(c + offset for c in k) for k in right.keys if set(self.right_keys) <= set(k)
        ]
        out: list[Key] = []
        if self.input_spec(1) == "JoinKeyContainsUniqueKey" and self.join_type in ("INNER", "LEFT"):
            out += left_keys
        if self.input_spec(0) == "JoinKeyContainsUniqueKey" and self.join_type in (
            "INNER",
            "RIGHT",
        ):
            out += right_keys
        return tuple(out)


@dataclass(eq=False)
class Rank(LNode):
    partition_keys: Key = ()
    order_keys: tuple[tuple[int, bool, bool], ...] = ()
    rank_start: int = 1
    rank_end: int = 1
    output_rank_number: bool = False
    time_order: str | None = None  # ROWTIME / PROCTIME when ordered by a time attribute
    sort_limit: bool = False  # ORDER BY ... LIMIT (printed SortLimit, no partition keys)

    @property
    def keeps_first(self) -> bool:
        """Rank 1 ordered ASC: over an insert-only input Flink 2.3 says it emits inserts only
        (with or without a time attribute; a better row that comes later is then a +U
        without its -U, as Flink prints it)."""
        first = self.rank_start == 1 and self.rank_end == 1
        return first and self.order_keys[0][1]

    @property
    def keeps_last_in_time(self) -> bool:
        """Flink's Deduplicate keep-last (rank 1 of an insert-only input ordered by one
        time attribute DESC): a row replaces the kept one when its time is >= the kept
        one's, so of equal times the last arrival is kept. Every other Rank, and any Rank
        of an updating input, keeps the first arrival (checked against Flink 2.3)."""
        first = self.rank_start == 1 and self.rank_end == 1 and len(self.order_keys) == 1
        descending = first and self.time_order is not None and not self.order_keys[0][1]
        return descending and self.inputs[0].mode == INSERT_ONLY

    @property
    def first_on_watermark(self) -> bool:
        """Flink's Deduplicate keep-first on event time (rank 1 of an insert-only input
        ordered by one rowtime ASC): a key's row of the smallest time is emitted once the
        watermark passes it; later and late rows are dropped."""
        first = self.rank_start == 1 and self.rank_end == 1 and len(self.order_keys) == 1
        rowtime = first and self.time_order == "ROWTIME" and self.order_keys[0][1]
        return rowtime and self.inputs[0].mode == INSERT_ONLY

    def produces(self, inputs: list[Mode]) -> Mode:
        if inputs[0] == INSERT_ONLY and self.keeps_first:
            return INSERT_ONLY
        return ALL

    def strategy(self) -> str:
        if self.inputs[0].mode == INSERT_ONLY:
            return "AppendFastStrategy"
        return "RetractStrategy"

    def upsert_keys(self) -> tuple[Key, ...]:
        if self.output_rank_number:
            return (self.partition_keys + (len(self.fields) - 1,),)
        if self.rank_start == self.rank_end:
            return (self.partition_keys,)
        return self.inputs[0].keys


@dataclass(eq=False)
class Union(LNode):
    def input_needs_update_before(self, needs: bool) -> list[bool]:
        return [needs] * len(self.inputs)

    def can_drop_update_before(self) -> bool:
        return all(c.can_drop_update_before() for c in self.inputs)


@dataclass(eq=False)
class LookupJoin(LNode):
    join_type: str = "INNER"
    table: Table = None  # type: ignore[assignment]
    probe_keys: Key = ()
    lookup_keys: Key = ()
    condition: Expr | None = None

    def input_needs_update_before(self, needs: bool) -> list[bool]:
        return [needs]

    def can_drop_update_before(self) -> bool:
        return self.inputs[0].can_drop_update_before()

    def upsert_keys(self) -> tuple[Key, ...]:
        return self.inputs[0].keys


@dataclass(eq=False)
class Sink(LNode):
    table: Table = None  # type: ignore[assignment]
    primary_key: Key = ()
    on_conflict: str | None = None
    upsert_materialize: bool = False

    def accepts(self) -> Mode:
        """As Flink's sinks: upsert-kafka and blackhole (which drops -U rows) take no -U."""
        if self.table.connector in ("upsert-kafka", "blackhole"):
            return frozenset({I, UA, D})
        if self.table.connector == "print" or self.table.format in CHANGELOG_FORMATS:
            return ALL
        return INSERT_ONLY

    def input_needs_update_before(self, needs: bool) -> list[bool]:
        """A sink taking only +U still asks for -U rows unless its primary key is exactly an
        upsert key of its input (Flink: otherwise it falls back to "before and after")."""
        if UB in self.accepts():
            return [True]
        keys = self.inputs[0].keys
        return [bool(self.primary_key) and set(self.primary_key) not in [set(k) for k in keys]]
