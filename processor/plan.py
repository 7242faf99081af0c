"""The physical plan: plain data that the planner produces and the runtime consumes.

The planner never imports operators and the runtime never imports the planner;
both import this module. Each node carries its output fields, the changelog mode
it emits (after Flink's two-step inference: bottom-up, then refined from the
sinks) and its upsert keys. ``node_id`` is unique within a job and stable for the
same SQL: the runtime names the node's state after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deltaflow.formats.prefilter import PreFilter
from deltaflow.formats.types import DataType
from deltaflow.processor.exprs.nodes import Expr, InputRef

Mode = frozenset[int]  # RowKind values a node emits
Key = tuple[int, ...]  # column indexes


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: DataType


@dataclass(frozen=True, kw_only=True)
class Node:
    node_id: int
    inputs: tuple[Node, ...] = ()
    fields: tuple[Field, ...] = ()
    changelog_mode: Mode = frozenset()
    upsert_keys: tuple[Key, ...] = ()

    @property
    def types(self) -> list[DataType]:
        return [f.type for f in self.fields]

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]


@dataclass(frozen=True)
class Watermark:
    """``WATERMARK FOR rowtime AS expr``: column index and the delay expression's result.

    ``rowtime`` is -1 when the rowtime is a computed column (``ts AS TO_TIMESTAMP_LTZ(ms, 3)``);
    ``expr`` then already computes it from the scan's row.
    """

    rowtime: int
    expr: Expr  # evaluated on the scan's output row, gives the watermark timestamp


@dataclass(frozen=True, kw_only=True)
class TableSourceScan(Node):
    """Reads a table. Output row: physical columns, then metadata columns (in ``metadata`` order)."""

    table: str
    options: dict[str, str]
    physical: tuple[Field, ...]
    metadata: tuple[tuple[str, str, DataType], ...] = ()  # (column, key, type)
    primary_key: tuple[str, ...] = ()
    watermark: Watermark | None = None
    # before-images from state: the source keeps the last row per primary key and derives
    # every -U/-D from it (processor/runtime/normalize.py)
    normalize: bool = False
    # decided by the physical rules (processor/planner/physical_rules.py): the physical
    # columns the decoder builds (None: all; the others stay None in the rows) and the
    # WHERE tests it may apply to each change image before building its row
    project: tuple[str, ...] | None = None
    prefilter: PreFilter | None = None


@dataclass(frozen=True, kw_only=True)
class Calc(Node):
    """Projection and filter fused: output = ``projection`` of rows where ``condition`` holds."""

    projection: tuple[Expr, ...]
    condition: Expr | None = None
    # node_id of the operator this Calc runs inside (physical rules: it only selects columns)
    fused_into: int | None = None


def column_selection(calc: Calc) -> list[int] | None:
    """The input column of each output column of a Calc that only selects columns
    (no condition, every expression a column reference); otherwise None."""
    if calc.condition is not None or not all(isinstance(e, InputRef) for e in calc.projection):
        return None
    return [e.index for e in calc.projection]  # type: ignore[attr-defined]


@dataclass(frozen=True, kw_only=True)
class ChangelogNormalize(Node):
    """Turns an upsert stream (UA, D by key) into a full changelog; keeps the last row per key."""

    key: Key


@dataclass(frozen=True, kw_only=True)
class DropUpdateBefore(Node):
    pass


@dataclass(frozen=True)
class AggCall:
    """One aggregate: ``function`` over input columns ``args``, e.g. SUM(2), COUNT() for COUNT(*).

    ``filter_arg`` is the index of a BOOLEAN input column (``FILTER (WHERE ...)``).
    ``params`` carries constant arguments (LISTAGG separator).
    """

    function: str  # COUNT, SUM, SUM0, AVG, MIN, MAX, LISTAGG, FIRST_VALUE, LAST_VALUE
    args: Key
    type: DataType
    name: str
    distinct: bool = False
    filter_arg: int | None = None
    params: tuple[object, ...] = ()


@dataclass(frozen=True, kw_only=True)
class GroupAggregate(Node):
    """Output: group key columns, then one column per aggregate."""

    group_keys: Key
    aggs: tuple[AggCall, ...]
    fused_calc: int | None = None  # node_id of the column-selecting Calc below, run inside

    @property
    def emits_update_before(self) -> bool:
        return 1 in self.changelog_mode


@dataclass(frozen=True, kw_only=True)
class Join(Node):
    """Regular streaming join. Output: left columns then right columns.

    ``condition`` is the non-equi remainder over (left + right) columns.
    ``left_unique_keys``/``right_unique_keys`` are the inputs' upsert keys (state layout hints).
    """

    join_type: str  # INNER, LEFT, RIGHT, FULL
    left_keys: Key
    right_keys: Key
    condition: Expr | None = None
    left_unique_keys: tuple[Key, ...] = ()
    right_unique_keys: tuple[Key, ...] = ()
    fused_calc: int | None = None  # node_id of the column-selecting Calc above, run inside


@dataclass(frozen=True, kw_only=True)
class SemiJoin(Node):
    """A left semi (``anti`` False) or anti join: the left rows that at least one (anti: no)
    right row matches on the keys and ``condition`` (over left + right columns). A key with
    ``null_safe`` set matches NULL to NULL. Output: the left columns."""

    anti: bool
    left_keys: Key
    right_keys: Key
    condition: Expr | None = None
    null_safe: tuple[bool, ...] = ()


@dataclass(frozen=True, kw_only=True)
class IntervalJoin(Node):
    """Event-time interval join of two append-only inputs: a left row at ``tl`` and a right
    row at ``tr`` (epoch ms of columns ``left_time`` / ``right_time``) pair when their keys are
    equal, ``tr + lower_ms <= tl <= tr + upper_ms`` and ``condition`` (the rest) holds."""

    join_type: str  # INNER, LEFT, RIGHT, FULL
    left_keys: Key
    right_keys: Key
    condition: Expr | None
    lower_ms: int
    upper_ms: int
    left_time: int
    right_time: int


@dataclass(frozen=True, kw_only=True)
class WindowJoin(Node):
    """A join of two windowed append-only inputs: the rows of one window (``*_bounds``: the
    window_start and window_end columns of each input) are joined when the watermark passes
    its end. Output: left columns then right columns."""

    join_type: str  # INNER, LEFT, RIGHT, FULL; SEMI, ANTI (output: the left columns)
    left_keys: Key
    right_keys: Key
    condition: Expr | None
    left_bounds: tuple[int, int]
    right_bounds: tuple[int, int]


@dataclass(frozen=True, kw_only=True)
class WindowRank(Node):
    """Window Top-N: per window (``bounds``: its window_start, window_end columns) and
    partition, the rows ranked ``rank_start..rank_end`` once the window has ended."""

    partition_keys: Key
    order_keys: tuple[tuple[int, bool, bool], ...]
    rank_start: int
    rank_end: int
    output_rank_number: bool
    bounds: tuple[int, int]
    # over a window TVF: the input rows get the windows of ``assign`` (window_start,
    # window_end, window_time appended) before ranking
    assign: WindowSpec | None = None
    keep_last: bool = False  # a window deduplication keeping the last of equal sort keys


@dataclass(frozen=True, kw_only=True)
class TemporalJoin(Node):
    """Event-time temporal join: each left row (time column ``left_time``) joins the right
    version of its key valid at that time (the right row with the latest ``right_time`` not
    after it, if that change is not a delete), once the watermark reaches the left row."""

    join_type: str  # INNER, LEFT
    left_keys: Key
    right_keys: Key
    condition: Expr | None
    left_time: int
    right_time: int


@dataclass(frozen=True)
class MirrorSide:
    """How a delta operator reads one source table through its LMDB mirror.

    ``mirror`` names the mirror (rows of the scan by ``primary_key``, scan-row columns);
    ``index`` are the scan-row columns lookups use and ``positions`` where each of them
    sits in the operator's key tuple (join keys or group keys, in that order).
    ``projection``/``condition`` are the Calc from a scan row to the operator's input row.
    ``fixed``: (index position, value) of index columns the condition fixes to a constant
    (``item_id = 0``), looked up with that value (their ``positions`` entry is -1).
    """

    mirror: str
    primary_key: Key
    index: Key
    positions: Key
    projection: tuple[Expr, ...]
    condition: Expr | None = None
    fixed: tuple[tuple[int, object], ...] = ()


@dataclass(frozen=True, kw_only=True)
class DeltaJoin(Join):
    """A join answered by looking up the other side's LMDB-indexed source mirror.

    Its ``inputs`` are the two source scans themselves (their changes feed the mirrors);
    ``left``/``right`` say how each side's rows come from its mirror. ``left_keys`` and
    ``right_keys`` are columns of the sides' rows, as in Join. ``eventual`` gives VVR's
    EVENTUAL semantics (+I/+U only).
    """

    left: MirrorSide
    right: MirrorSide
    eventual: bool = False


@dataclass(frozen=True, kw_only=True)
class DeltaSemiJoin(SemiJoin):
    """A semi / anti join answered by looking up the other side's LMDB-indexed source mirror
    (no join state); ``inputs`` are the two source scans, as in DeltaJoin."""

    left: MirrorSide
    right: MirrorSide


@dataclass(frozen=True)
class DeltaLookup:
    """One way a node of a delta join cascade is looked up: its rows whose columns ``key``
    equal given values. A source reads its mirror through ``side``; a Calc or a join looks
    up its input ``via`` (0 or 1) by that input's columns ``via_key``, the values at
    ``positions`` of the key, and checks the rest of the key on the rows it builds."""

    key: Key
    positions: Key = ()
    via: int = 0
    via_key: Key = ()
    side: MirrorSide | None = None


@dataclass(frozen=True, kw_only=True)
class DeltaView:
    """A node of a delta join cascade: ``kind`` 'source' (the scan at input ``port`` of the
    cascade, through the Calc ``projection``/``condition``), 'calc' (a Calc over
    ``inputs[0]``) or 'join' (a binary join of ``inputs``, keys and condition as in Join)."""

    kind: str
    width: int
    lookups: tuple[DeltaLookup, ...] = ()
    inputs: tuple[DeltaView, ...] = ()
    port: int = -1
    projection: tuple[Expr, ...] = ()
    condition: Expr | None = None
    join_type: str = "INNER"
    left_keys: Key = ()
    right_keys: Key = ()


@dataclass(frozen=True, kw_only=True)
class DeltaJoinCascade(Node):
    """Several joins of mirrored sources run as one operator with no join state.

    Its ``inputs`` are the distinct source scans, input ``i`` feeding the source view with
    ``port`` i of ``tree`` (the root join). A change of one source climbs the tree, each join
    looking the other input up (a source's mirror, or a lower join's result rebuilt from
    the mirrors through indexes). ``eventual`` gives VVR's EVENTUAL semantics (+I/+U only).
    """

    tree: DeltaView
    eventual: bool = False
    fused_calc: int | None = None  # node_id of the column-selecting Calc above, run inside


@dataclass(frozen=True, kw_only=True)
class DeltaAggregate(GroupAggregate):
    """A GroupAggregate recomputed per changed group from the source's mirror.

    Its input is the source scan itself; ``source`` gives the Calc to the aggregate's input
    row, whose column ``i`` is ``source.projection[i]``.
    """

    source: MirrorSide
    input_types: tuple[DataType, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Rank(Node):
    """ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..) with rank_start <= rn <= rank_end."""

    partition_keys: Key
    order_keys: tuple[tuple[int, bool, bool], ...]  # (column, ascending, nulls_first)
    rank_start: int
    rank_end: int | None
    output_rank_number: bool
    # of equal sort keys the later arrival ranks first (else the earlier, as in Flink's
    # Rank): Flink's Deduplicate keep-last, planned for rank 1 of an insert-only input
    # ordered by one time attribute DESC
    later_first: bool = False
    # rank 1 of an insert-only input ordered by a rowtime ASC: Flink's Deduplicate
    # keep-first on event time, whose row waits for the watermark (runtime/rank_first.py)
    first_on_watermark: bool = False


@dataclass(frozen=True, kw_only=True)
class Deduplicate(Node):
    keys: Key
    keep_last_row: bool
    order_column: int | None = None  # time attribute column, None for processing time
    is_rowtime: bool = False


@dataclass(frozen=True)
class WindowSpec:
    kind: str  # TUMBLE, HOP, CUMULATE, SESSION
    time_column: int
    size_ms: int  # SESSION: the gap
    slide_ms: int | None = None  # HOP slide
    step_ms: int | None = None  # CUMULATE step
    offset_ms: int = 0
    partition_keys: Key = ()  # SESSION ... PARTITION BY: columns (of the aggregate's input)
    # a window aggregate over an earlier one's window_start / window_end: the windows are
    # these columns of the input row (``time_column`` is then ``start_column``)
    start_column: int | None = None
    end_column: int | None = None
    proctime: bool = False  # windows of processing time: fired by the wall clock


@dataclass(frozen=True, kw_only=True)
class WindowTableFunction(Node):
    """Each input row once per window holding its time, with window_start, window_end and
    window_time appended (a SESSION's rows once their session has ended)."""

    window: WindowSpec


@dataclass(frozen=True, kw_only=True)
class WindowAggregate(Node):
    """Output: group keys, aggregates, then window_start, window_end, window_time."""

    window: WindowSpec
    group_keys: Key
    aggs: tuple[AggCall, ...]


@dataclass(frozen=True)
class OverWindow:
    """An OVER window: rows of one partition ordered by the time column ``order_key``; the
    frame ends at the current row and starts ``preceding`` rows (ROWS) or ms (RANGE) before
    it, or at the partition's first row (None: UNBOUNDED PRECEDING)."""

    partition_keys: Key
    order_key: int
    kind: str  # ROWS or RANGE
    preceding: int | None


@dataclass(frozen=True, kw_only=True)
class OverAggregate(Node):
    """Output: the input row, then one value per aggregate over the row's frame."""

    window: OverWindow
    aggs: tuple[AggCall, ...]
    time_kind: str  # ROWTIME (rows wait for the watermark) or PROCTIME (at once)


@dataclass(frozen=True, kw_only=True)
class Union(Node):
    pass


@dataclass(frozen=True, kw_only=True)
class LookupJoin(Node):
    """``JOIN t FOR SYSTEM_TIME AS OF ...``: probe an LMDB-backed table by ``lookup_keys``."""

    join_type: str  # INNER, LEFT
    table: str
    options: dict[str, str]
    table_fields: tuple[Field, ...]
    probe_keys: Key  # columns of the stream input
    lookup_keys: Key  # columns of the looked-up table
    condition: Expr | None = None


@dataclass(frozen=True, kw_only=True)
class SinkUpsertMaterializer(Node):
    key: Key


@dataclass(frozen=True, kw_only=True)
class Sink(Node):
    table: str
    options: dict[str, str]
    physical: tuple[Field, ...]
    primary_key: tuple[str, ...] = ()
    upsert_materialize: bool = False


@dataclass(frozen=True, kw_only=True)
class ToChangelog(Node):
    """TO_CHANGELOG: each input change as an insert of (op code, *row).

    ``codes[kind]`` is the code written for RowKind ``kind``; None drops such changes.
    """

    codes: tuple[str | None, ...]


@dataclass(frozen=True, kw_only=True)
class FromChangelog(Node):
    """FROM_CHANGELOG: an insert-only input whose column ``op_index`` names each row's change.

    ``kinds`` maps each op code to its RowKind; the output row leaves the op column out.
    """

    op_index: int
    kinds: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class JobPlan:
    """Every INSERT of a job (a statement set): one sink each, sharing source scans by node_id."""

    sinks: tuple[Sink, ...]
    settings: dict[str, str] = field(default_factory=dict)
    functions: dict[str, str] = field(default_factory=dict)  # name -> 'module.attr'
    fingerprint: str = ""  # hash of the plan; state written by another plan is refused


@dataclass(frozen=True, kw_only=True)
class Correlate(Node):
    """``LATERAL TABLE(function(operands))``: each input row followed by each row the Python
    table function ``target`` yields for it; LEFT keeps a row it yields nothing for, with NULLs.
    Output: input columns, then the function's declared columns."""

    function: str
    target: str  # 'module.attr'
    operands: tuple[Expr, ...]
    join_type: str  # INNER, LEFT
