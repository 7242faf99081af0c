"""Demanded columns: which columns of each source scan the job reads (projection pushdown),
a physical rule (``physical_rules``): the result is the scan's ``project`` field.

What a node needs of its input, by the kind of node:

- a ``Calc``: the columns its condition and its projections read, except a projection
  no consumer reads: a bare column passes a None through, and an expression becomes a
  typed NULL first (``unread_projections``, the ``projection`` rule), so the columns only
  it read are not decoded and a join's state does not keep its value, as Flink trims the
  column from its plan (EXPLAIN still prints the expression);
- a ``DropUpdateBefore``: what its own consumers need;
- a regular ``Join``: its keys, the columns its condition reads, and the columns
  its own consumers need of its output (left columns, then right columns);
- a two-way ``DeltaJoin`` (inputs: the scans): of each scan, what the side's Calc
  reads to give the side-row columns the join needs (as for a regular join), the
  side's condition and the index columns, so its mirrors hold only those;
- a ``SemiJoin`` (output: the left columns): of the left input, its keys, the left
  columns its condition reads and what its consumers need; of the right input, its keys
  and the right columns its condition reads (its state keeps only those, as Flink's
  projections below a semi join do); a ``DeltaSemiJoin`` maps these through each side's
  Calc to its scan, as a ``DeltaJoin``;
- a ``DeltaJoinCascade``: what its consumers need, down its tree of views (a join: its
  keys and condition; a Calc: as a Calc; each view: the columns it is looked up by and
  those it looks its input up by) to each source, then as a ``DeltaJoin``'s side;
- anything else (an aggregate, ChangelogNormalize, a sink, ...): every column,
  since it may read or compare whole rows.

A scan needs what its consumers need, plus its primary key and the columns its
watermark reads. The decoders leave the other columns None without converting
them, as Flink's projection pushdown leaves them out of the row. Operators that
compare whole rows (a join's state) see None in the same places on every row.
"""

from __future__ import annotations

from deltaflow.processor.exprs.nodes import InputRef, Literal, input_refs
from deltaflow.processor.plan import (
    Calc,
    DeltaJoin,
    DeltaJoinCascade,
    DeltaSemiJoin,
    DeltaView,
    DropUpdateBefore,
    Join,
    MirrorSide,
    Node,
    SemiJoin,
    Sink,
    TableSourceScan,
)


class _Demand:
    def __init__(self, roots: tuple[Node, ...]) -> None:
        self.consumers: dict[int, dict[int, Node]] = {}
        self.nodes: dict[int, Node] = {}
        # a root other than a sink (EXPLAIN of a query) is read whole
        self.memo: dict[int, set[int] | None] = {
            r.node_id: None for r in roots if not isinstance(r, Sink)
        }
        stack: list[Node] = list(roots)
        while stack:
            node = stack.pop()
            if node.node_id in self.nodes:
                continue
            self.nodes[node.node_id] = node
            for child in node.inputs:
                self.consumers.setdefault(child.node_id, {})[node.node_id] = node
                stack.append(child)

    def of(self, node: Node) -> set[int] | None:
        """Output columns of ``node`` that its consumers read (None: all)."""
        if node.node_id not in self.memo:
            self.memo[node.node_id] = None  # a cycle (none are planned) reads all
            seen: set[int] = set()
            used: set[int] | None = seen
            for consumer in self.consumers.get(node.node_id, {}).values():
                read = self._read(consumer, node)
                if read is None:
                    used = None
                    break
                seen |= read
            self.memo[node.node_id] = used
        return self.memo[node.node_id]

    def _read(self, consumer: Node, child: Node) -> set[int] | None:
        """Columns of ``child`` that ``consumer`` reads; None for all."""
        if isinstance(consumer, Calc) and len(consumer.inputs) == 1:
            wanted = self.of(consumer)
            used: set[int] = set()
            for i, expr in enumerate(consumer.projection):
                if wanted is None or i in wanted or not isinstance(expr, InputRef):
                    used |= input_refs(expr)
            if consumer.condition is not None:
                used |= input_refs(consumer.condition)
            return used
        if isinstance(consumer, DropUpdateBefore):
            return self.of(consumer)
        if type(consumer) is Join and consumer.inputs[0] is not consumer.inputs[1]:
            return self._join_reads(consumer, consumer.inputs[0] is child)
        if type(consumer) is DeltaJoin:
            return self._delta_join_reads(consumer, child)
        if isinstance(consumer, SemiJoin) and type(consumer) in (SemiJoin, DeltaSemiJoin):
            return self._semi_join_reads(consumer, child)
        if type(consumer) is DeltaJoinCascade:
            out = self.of(consumer)
            if out is None:
                return None
            reads: set[int] = set()
            _view_reads(
                consumer.tree, out, [i for i, c in enumerate(consumer.inputs) if c is child], reads
            )
            return reads
        return None

    def _semi_join_reads(self, join: SemiJoin | DeltaSemiJoin, child: Node) -> set[int] | None:
        """The columns of ``child`` (either input, or both) the semi join reads."""
        out = self.of(join)
        if out is None:
            return None
        delta = isinstance(join, DeltaSemiJoin)
        width = (
            len(join.left.projection)
            if isinstance(join, DeltaSemiJoin)
            else len(join.inputs[0].fields)
        )
        cond = input_refs(join.condition) if join.condition is not None else set()
        wanted = (
            out | {i for i in cond if i < width} | set(join.left_keys),
            {i - width for i in cond if i >= width} | set(join.right_keys),
        )
        used: set[int] = set()
        for port in (0, 1):
            if join.inputs[port] is not child:
                continue
            if not delta:
                used |= wanted[port]
                continue
            assert isinstance(join, DeltaSemiJoin)
            used |= _side_reads(join.left if port == 0 else join.right, wanted[port])
        return used

    def _delta_join_reads(self, join: DeltaJoin, scan: Node) -> set[int] | None:
        out = self.of(join)
        if out is None:
            return None
        width = len(join.left.projection)
        if join.condition is not None:
            out = out | input_refs(join.condition)
        used: set[int] = set()
        for port, side in enumerate((join.left, join.right)):
            if join.inputs[port] is not scan:
                continue
            keys = join.left_keys if port == 0 else join.right_keys
            wanted = {i for i in out if i < width} if port == 0 else {i - width for i in out}
            used |= _side_reads(side, wanted | set(keys))
        return used

    def _join_reads(self, join: Join, left: bool) -> set[int] | None:
        out = self.of(join)
        if out is None:
            return None
        width = len(join.inputs[0].fields)
        if join.condition is not None:
            out = out | input_refs(join.condition)
        if left:
            return {i for i in out if i < width} | set(join.left_keys)
        return {i - width for i in out if i >= width} | set(join.right_keys)


def _calc_reads(projection, condition, wanted: set[int] | None) -> set[int]:  # noqa: ANN001
    """Input columns a Calc reads to give the ``wanted`` output columns (None: all): its
    condition, every expression, and the bare columns wanted (an empty projection passes
    its input through)."""
    used = set(input_refs(condition)) if condition is not None else set()
    if not projection:
        return used | wanted if wanted is not None else used
    for i, expr in enumerate(projection):
        if wanted is None or i in wanted or not isinstance(expr, InputRef):
            used |= input_refs(expr)
    return used


def _view_reads(view: DeltaView, wanted: set[int], ports: list[int], used: set[int]) -> None:
    """Add to ``used`` the scan columns the sources at ``ports`` give ``view``'s ``wanted``."""
    wanted = wanted | {c for lk in view.lookups for c in lk.key}
    via = [{c for lk in view.lookups if lk.via == i for c in lk.via_key} for i in (0, 1)]
    if view.kind == "source":
        if view.port not in ports:
            return
        used |= _calc_reads(view.projection, view.condition, wanted)
        for side in {lk.side for lk in view.lookups if lk.side is not None}:
            used |= _calc_reads(side.projection, side.condition, wanted)
            used |= set(side.index) | set(side.primary_key)
        return
    if view.kind == "calc":
        inner = _calc_reads(view.projection, view.condition, wanted) | via[0]
        _view_reads(view.inputs[0], inner, ports, used)
        return
    width = view.inputs[0].width
    out = wanted | (input_refs(view.condition) if view.condition is not None else set())
    left = {i for i in out if i < width} | set(view.left_keys) | via[0]
    right = {i - width for i in out if i >= width} | set(view.right_keys) | via[1]
    _view_reads(view.inputs[0], left, ports, used)
    _view_reads(view.inputs[1], right, ports, used)


def unread_projections(roots: tuple[Node, ...]) -> dict[int, tuple]:
    """Calc node_id -> its projection with a typed NULL for each computed column no
    consumer reads, for the Calcs that have one (Flink trims such columns from the plan,
    so their expressions never run there either). A bare column stays: it costs nothing
    and the scan's projection already leaves it None."""
    demand = _Demand(roots)
    out: dict[int, tuple] = {}
    for node in demand.nodes.values():
        if type(node) is not Calc or len(node.inputs) != 1:
            continue
        wanted = demand.of(node)
        if wanted is None:
            continue
        projection = tuple(
            expr
            if i in wanted or isinstance(expr, (InputRef, Literal))
            else Literal(expr.type, None)
            for i, expr in enumerate(node.projection)
        )
        if projection != node.projection:
            out[node.node_id] = projection
    return out


def demanded_columns(roots: tuple[Node, ...]) -> dict[int, tuple[str, ...] | None]:
    """Scan node_id -> names of the physical columns its consumers read, in the table's
    order (None: all)."""
    demand = _Demand(roots)
    out: dict[int, tuple[str, ...] | None] = {}
    for node in demand.nodes.values():
        if not isinstance(node, TableSourceScan):
            continue
        used = demand.of(node)
        if used is None:
            out[node.node_id] = None
            continue
        if node.watermark is not None:
            used = used | input_refs(node.watermark.expr)
            if node.watermark.rowtime >= 0:
                used.add(node.watermark.rowtime)
        names = {node.fields[i].name for i in used if i < len(node.fields)}
        names |= set(node.primary_key)
        physical = [f.name for f in node.physical]
        read = tuple(name for name in physical if name in names)
        out[node.node_id] = None if len(read) == len(physical) else read
    return out


def _side_reads(side: MirrorSide, wanted: set[int]) -> set[int]:
    """The scan columns a delta (semi) join side reads for its ``wanted`` view columns:
    their expressions, the side's filter, its index and its primary key."""
    used: set[int] = set()
    for i in wanted:
        if 0 <= i < len(side.projection):
            used |= input_refs(side.projection[i])
    if side.condition is not None:
        used |= input_refs(side.condition)
    return used | set(side.index) | set(side.primary_key)
