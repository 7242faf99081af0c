"""Logical nodes of the delta rewrites, what they need to know about their sources, and their
physical conversion.

A delta operator reads a source table through its LMDB mirror: the table's rows by primary
key plus an index on the columns it looks up. ``read_source`` says whether an input is such
a source (a scan of a changelog table with a primary key, under at most one Calc) and which
index serves a key; the rewrite rules turn its answer into a node or into the reason why not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deltaflow.formats.errors import PlanError
from deltaflow.processor import plan as P
from deltaflow.processor.exprs.functions import is_deterministic
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, Literal, UdfCall, children
from deltaflow.processor.plan import Key, Mode
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.catalog import CHANGELOG_FORMATS

STRATEGIES = ("AUTO", "FORCE", "NONE", "EVENTUAL")


@dataclass(eq=False)
class DeltaJoin(L.Join):
    """A Join answered from the sources' mirrors. ``*_index`` are scan columns; ``*_positions``
    where each index column sits among the join keys."""

    left_index: Key = ()
    right_index: Key = ()
    left_positions: Key = ()
    right_positions: Key = ()
    left_fixed: tuple[tuple[int, object], ...] = ()
    right_fixed: tuple[tuple[int, object], ...] = ()
    index_names: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    eventual: bool = False
    views: tuple[ViewPlan, ViewPlan] | None = None  # the inputs as lookups see them

    @property
    def cascade(self) -> bool:
        """Whether an input is itself a join of mirrored sources (a cascade of delta joins)."""
        return self.views is not None and any(v.kind != "source" for v in self.views)

    def produces(self, inputs: list[Mode]) -> Mode:
        return frozenset({L.I, L.UA}) if self.eventual else super().produces(inputs)

    def upsert_keys(self) -> tuple[Key, ...]:
        """Better than Flink on purpose (docs/FLINK_COMPATIBILITY.md): a delta join runs
        unshuffled and sees every change of a row in order, so a side's unique key survives
        even when it does not hold the join keys. Flink drops such a key because its hash
        exchange on the join keys may reorder one row's changes, and then needs a
        SinkUpsertMaterializer in front of a sink keyed by it. EVENTUAL keeps Flink's rule."""
        if self.eventual:
            return super().upsert_keys()
        left, right = self.inputs
        offset = len(left.fields)
        out: list[Key] = []
        if self.input_spec(1) == "JoinKeyContainsUniqueKey" and self.join_type in ("INNER", "LEFT"):
            out += left.keys
        if self.input_spec(0) == "JoinKeyContainsUniqueKey" and self.join_type in (
            "INNER",
            "RIGHT",
        ):
            out += [tuple(c + offset for c in k) for k in right.keys]
        return tuple(out)


@dataclass(eq=False)
class UnrewrittenJoin(L.Join):
    """A regular Join the user asked to be a delta join (AUTO), with the reason it is not."""

    reason: str = ""


@dataclass(eq=False)
class DeltaAggregate(L.Aggregate):
    """An Aggregate recomputed per changed group from its source's mirror."""

    index: Key = ()
    positions: Key = ()
    index_names: tuple[str, ...] = ()


@dataclass
class SourceRead:
    """An input that is a mirrored source: its scan, the Calc above it, and the index chosen."""

    scan: L.Scan
    calc: L.Calc | None
    columns: Key  # scan column of each key position
    index: Key = ()
    positions: Key = ()
    fixed: tuple[tuple[int, object], ...] = ()  # index positions the filter fixes: value

    @property
    def index_names(self) -> tuple[str, ...]:
        return tuple(self.scan.fields[c].name for c in self.index)


@dataclass(eq=False)
class ViewPlan:
    """An input of a delta join as its lookups see it: a mirrored source ('source', with its
    ``read``), a Calc over a lower input ('calc') or a lower delta join ('join'). ``lookups``
    maps each column set the input is looked up by to how: a source's SourceRead (the index),
    else (input looked up, positions of the key it takes, that input's columns)."""

    kind: str
    node: L.LNode
    inputs: list[ViewPlan]
    read: SourceRead | None = None
    lookups: dict[Key, Any] = field(default_factory=dict)

    @property
    def width(self) -> int:
        return len(self.node.fields)


def strategy_of(settings: dict[str, str], key: str) -> str:
    value = settings.get(key, "AUTO").strip().upper()
    if value not in STRATEGIES:
        raise PlanError(
            f"SET '{key}' = '{settings[key]}' is not a valid value; choose one of "
            + ", ".join(STRATEGIES)
        )
    return value


def read_source(child: L.LNode, key: Key, what: str) -> SourceRead | str:
    """``child`` as a mirrored source keyed by its columns ``key``, or why it cannot be one."""
    calc = child if isinstance(child, L.Calc) else None
    scan = calc.inputs[0] if calc is not None else child
    if not isinstance(scan, L.Scan):
        found = "Join" if isinstance(scan, UnrewrittenJoin) else type(scan).__name__
        return (
            f"the {what} is not a source table read through projections and filters (found {found})"
        )
    name = scan.table.name
    if not scan.primary_key:
        return f"table {name} has no PRIMARY KEY to mirror its rows by"
    if scan.table.connector == "upsert-kafka" or scan.table.format not in CHANGELOG_FORMATS:
        return f"table {name} is not a changelog (CDC) source; a mirror keeps one row per key"
    columns = []
    for k in key:
        expr = calc.projection[k] if calc is not None else InputRef(scan.fields[k].type, k)
        if not isinstance(expr, InputRef):
            return (
                f"the {what} key column {child.fields[k].name} is computed, not a column of {name}"
            )
        columns.append(expr.index)
    if calc is not None:
        for part in [*calc.projection, calc.condition]:
            fn = non_deterministic(part)
            if fn:
                return f"the projection or filter on table {name} calls the non-deterministic function {fn}"
    return SourceRead(scan, calc, tuple(columns))


def choose_index(read: SourceRead, strategy: str, constants: bool = False) -> str | None:
    """Sets ``read.index``: the whole key when it is a primary-key prefix, else the table's
    ``'bucket.key'`` when the key holds it, else (not under AUTO) an index derived on the key.
    With ``constants``, columns the read's filter fixes to a constant (``item_id = 0``) join
    the key columns (not under AUTO), so a lookup reads only rows the filter keeps.
    Returns why no index serves the key under AUTO, else None."""
    fixed = _fixed_columns(read) if constants and strategy != "AUTO" else {}
    cols = tuple(dict.fromkeys(read.columns))
    cols += tuple(c for c in fixed if c not in cols)
    pk = read.scan.primary_key
    declared = bucket_key(read.scan)
    if strategy == "AUTO":
        if declared is None or not set(declared) <= set(cols):
            return (
                f"table {read.scan.table.name} declares no 'bucket.key' within the lookup columns "
                f"[{', '.join(read.scan.fields[c].name for c in cols)}] (as in Flink, only tables "
                "whose storage offers such an index are rewritten; FORCE derives the index)"
            )
        index = declared
    elif set(pk[: len(cols)]) == set(cols):
        index = pk[: len(cols)]
    elif declared is not None and set(declared) <= set(cols):
        index = declared
    else:
        index = cols
    read.index = index
    read.positions = tuple(read.columns.index(c) if c in read.columns else -1 for c in index)
    read.fixed = tuple((j, fixed[c]) for j, c in enumerate(index) if c not in read.columns)
    return None


def _fixed_columns(read: SourceRead) -> dict[int, object]:
    """Scan columns the read's filter holds equal to a constant of their own type."""
    if read.calc is None or read.calc.condition is None:
        return {}
    out: dict[int, object] = {}
    for cond in _conjuncts(read.calc.condition):
        if not (isinstance(cond, Call) and cond.op == "=" and len(cond.operands) == 2):
            continue
        ref, lit = cond.operands
        if isinstance(lit, InputRef):
            ref, lit = lit, ref
        if (
            isinstance(ref, InputRef)
            and isinstance(lit, Literal)
            and lit.value is not None
            and lit.type.root == read.scan.fields[ref.index].type.root
            and lit.type.root in _FIXABLE  # keys encode these as the rows' values
        ):
            out[ref.index] = lit.value
    return out


_FIXABLE = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "BOOLEAN", "VARCHAR", "STRING"})


def _conjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, Call) and expr.op == "AND":
        return [c for o in expr.operands for c in _conjuncts(o)]
    return [expr]


def bucket_key(scan: L.Scan) -> Key | None:
    """The scan columns of the table's ``'bucket.key'`` option (Fluss style), if it has one."""
    text = scan.table.options.get("bucket.key")
    if text is None:
        return None
    names = [f.name for f in scan.fields]
    out = []
    for name in (n.strip() for n in text.split(",")):
        if name not in names:
            raise PlanError(
                f"option 'bucket.key' of table {scan.table.name} names {name!r}, which is not "
                f"one of its columns ({', '.join(names)})"
            )
        out.append(names.index(name))
    return tuple(out)


def non_deterministic(expr: Expr | None) -> str | None:
    if expr is None:
        return None
    if isinstance(expr, Call) and not is_deterministic(expr.op):
        return expr.op
    if isinstance(expr, UdfCall) and not expr.deterministic:
        return expr.name
    for child in children(expr):
        found = non_deterministic(child)
        if found:
            return found
    return None


# -- physical conversion ------------------------------------------------------------


def _mirror_side(
    child: P.Node, index: Key, positions: Key, fixed: tuple = ()
) -> tuple[P.MirrorSide, P.Node]:
    """How the delta operator reads ``child`` (a Calc over a scan, or a scan), and the scan.

    One mirror per scan, keyed by the table's primary key: every delta operator reading the
    scan shares it, each adding the index it looks up by."""
    if isinstance(child, P.Calc):
        scan, projection, condition = child.inputs[0], child.projection, child.condition
    else:
        scan, condition = child, None
        projection = tuple(InputRef(f.type, i) for i, f in enumerate(child.fields))
    assert isinstance(scan, P.TableSourceScan)
    return _side(scan, index, positions, projection, condition, fixed), scan


mirror_side = _mirror_side  # for the delta semi join (delta_semi_join.py)


def build_delta_join(node: DeltaJoin, base: dict[str, Any]) -> P.Node:
    if node.cascade:
        return _build_cascade(node, base)
    left, left_scan = _mirror_side(
        base["inputs"][0], node.left_index, node.left_positions, node.left_fixed
    )
    right, right_scan = _mirror_side(
        base["inputs"][1], node.right_index, node.right_positions, node.right_fixed
    )
    return P.DeltaJoin(
        **{**base, "inputs": (left_scan, right_scan)},
        join_type=node.join_type,
        left_keys=node.left_keys,
        right_keys=node.right_keys,
        condition=node.condition,
        left_unique_keys=node.inputs[0].keys,
        right_unique_keys=node.inputs[1].keys,
        left=left,
        right=right,
        eventual=node.eventual,
    )


def build_delta_aggregate(node: DeltaAggregate, base: dict[str, Any]) -> P.Node:
    child = base["inputs"][0]
    source, scan = _mirror_side(child, node.index, node.positions)
    return P.DeltaAggregate(
        **{**base, "inputs": (scan,)},
        group_keys=node.group_keys,
        aggs=tuple(node.aggs),
        source=source,
        input_types=tuple(child.types),
    )


def _build_cascade(node: DeltaJoin, base: dict[str, Any]) -> P.Node:
    """One DeltaJoinCascade for the tree of delta joins under ``node``: its inputs are the
    leaves' scans, left to right (the inputs of the converted children, in that order)."""
    scans = [scan for child in base["inputs"] for scan in _scans_of(child)]
    ports = iter(range(len(scans)))
    root = ViewPlan("join", node, list(node.views or ()))
    return P.DeltaJoinCascade(
        **{**base, "inputs": tuple(scans)},
        tree=_view(root, scans, ports),
        eventual=node.eventual,
    )


def _scans_of(node: P.Node) -> list[P.Node]:
    if isinstance(node, P.TableSourceScan):
        return [node]
    if isinstance(node, P.Calc):
        return _scans_of(node.inputs[0])
    return list(node.inputs)  # a DeltaJoin or a DeltaJoinCascade: its scans, left to right


def _view(view: ViewPlan, scans: list[P.Node], ports) -> P.DeltaView:
    width = view.width
    if view.kind == "source":
        port = next(ports)
        scan = scans[port]
        reads: list[P.DeltaLookup] = []
        for key, read in view.lookups.items():
            projection, condition = _calc_of(read, scan)
            side = _side(scan, read.index, read.positions, projection, condition, read.fixed)
            reads.append(P.DeltaLookup(key=key, side=side))
        return P.DeltaView(
            kind="source", width=width, lookups=tuple(reads), port=port,
            projection=projection, condition=condition,
        )  # fmt: skip
    inputs = tuple(_view(child, scans, ports) for child in view.inputs)
    lookups = tuple(
        P.DeltaLookup(key=key, positions=positions, via=via, via_key=via_key)
        for key, (via, positions, via_key) in view.lookups.items()
    )
    if view.kind == "calc":
        calc = view.node
        assert isinstance(calc, L.Calc)
        return P.DeltaView(
            kind="calc", width=width, lookups=lookups, inputs=inputs,
            projection=tuple(calc.projection), condition=calc.condition,
        )  # fmt: skip
    join = view.node
    assert isinstance(join, L.Join)
    return P.DeltaView(
        kind="join", width=width, lookups=lookups, inputs=inputs, condition=join.condition,
        join_type=join.join_type, left_keys=join.left_keys, right_keys=join.right_keys,
    )  # fmt: skip


def _calc_of(read: SourceRead, scan: P.Node) -> tuple[tuple[Expr, ...], Expr | None]:
    if read.calc is None:
        return tuple(InputRef(f.type, i) for i, f in enumerate(scan.fields)), None
    return tuple(read.calc.projection), read.calc.condition


def _side(scan, index: Key, positions: Key, projection, condition, fixed=()) -> P.MirrorSide:
    names = scan.names
    return P.MirrorSide(
        mirror=f"{scan.node_id}:Mirror:{scan.table}",
        primary_key=tuple(names.index(c) for c in scan.primary_key),
        index=index,
        positions=positions,
        projection=tuple(projection),
        condition=condition,
        fixed=tuple(fixed),
    )
