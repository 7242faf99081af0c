"""Filter pushdown into the decoder: which WHERE conjuncts a source's format may test on
each change image before it builds the row (``deltaflow.formats.prefilter``), a physical
rule (``physical_rules``): the result is the scan's ``prefilter`` field.

A scan gets a pre-filter only when dropping an image early cannot change anything the
job does or reports:

- the scan's one consumer is a ``Calc`` with a condition (a scan shared by several
  consumers, read by a join, an aggregate, a delta join's mirror, ChangelogNormalize
  or a sink keeps every row);
- the scan has no watermark (its rows advance it), does not take before-images from
  state (its normalizer follows every change: ``state_prefilters`` instead) and the job
  does not check unknown keys ('deltaflow.unknown-key-delete' other than 'ignore'
  follows every retraction);
- the pushed conjuncts compare a physical column (not a metadata column) with
  non-NULL constants: ``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``, ``[NOT] BETWEEN``
  (as two comparisons, BETWEEN only), ``[NOT] IN`` and ``IS [NOT] NULL``;
- every other conjunct cannot raise an error (comparisons, null tests, IN, LIKE with a
  constant pattern, AND / OR / NOT of columns and constants of one type family). The
  Calc evaluates those on rows a pushed conjunct rejects only when that conjunct is
  NULL, and an error there would otherwise go unreported.

The Calc keeps running on the rows that pass, so the result is the same: a Calc row
is kept only when every conjunct is TRUE. A -U whose before-image passes stays even
when its +U fails, as the Calc keeps it. Which tests a format actually applies is the
format's choice (``deltaflow.formats.prefilter.fits``).
"""

from __future__ import annotations

from deltaflow.formats.prefilter import MEMBERSHIP, Check, PreFilter
from deltaflow.formats.types import (
    BOOLEAN,
    DATE,
    DECIMAL,
    INTEGER_ROOTS,
    NULL,
    STRING_ROOTS,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    DataType,
)
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, Literal
from deltaflow.processor.plan import Calc, Node, TableSourceScan
from deltaflow.processor.settings import unknown_key_delete_mode

_FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_SAFE_OPS = frozenset(
    {*_FLIP, "IS DISTINCT FROM", "IS NOT DISTINCT FROM", "IN", "NOT IN", "LIKE", "NOT LIKE",
     "IS NULL", "IS NOT NULL", "IS TRUE", "IS FALSE", "IS NOT TRUE", "IS NOT FALSE",
     "AND", "OR", "NOT"}
)  # fmt: skip
_LOGIC = frozenset({"AND", "OR", "NOT", "IS NULL", "IS NOT NULL", "IS TRUE", "IS FALSE",
                    "IS NOT TRUE", "IS NOT FALSE"})  # fmt: skip
# Scalar types whose Python values compare with each other without raising.
_FAMILIES = (STRING_ROOTS, INTEGER_ROOTS, frozenset({DECIMAL}), frozenset({BOOLEAN}),
             frozenset({DATE}), frozenset({TIME}), frozenset({TIMESTAMP}),
             frozenset({TIMESTAMP_LTZ}))  # fmt: skip


def prefilters(roots: tuple[Node, ...], settings: dict[str, str]) -> dict[int, PreFilter]:
    """Scan node_id -> its pre-filter, for the scans that may have one."""
    if unknown_key_delete_mode(settings) != "ignore":
        return {}
    return _found(roots, normalized=False)


def state_prefilters(roots: tuple[Node, ...]) -> dict[int, PreFilter]:
    """Scan node_id -> its pre-filter, for the scans taking before-images from state
    that may have one: the job applies it at run time (``normalize_source``: the
    normalizer keeps a row of fewer columns for every image failing it, so unknown keys
    are followed as without it). Not a plan field, so a plan, its EXPLAIN and its state
    fingerprint are what they were without it."""
    return _found(roots, normalized=True)


def _found(roots: tuple[Node, ...], normalized: bool) -> dict[int, PreFilter]:
    """The pre-filters of the scans that take before-images from state (``normalized``)
    or of those that do not."""
    consumers: dict[int, dict[int, Node]] = {}
    scans: dict[int, TableSourceScan] = {}
    seen: set[int] = set()
    stack: list[Node] = list(roots)
    while stack:
        node = stack.pop()
        if node.node_id in seen:
            continue
        seen.add(node.node_id)
        if isinstance(node, TableSourceScan):
            scans[node.node_id] = node
        for child in node.inputs:
            consumers.setdefault(child.node_id, {})[node.node_id] = node
            stack.append(child)
    sink_ids = {s.node_id for s in roots}
    out = {}
    for scan_id, scan in scans.items():
        users = list(consumers.get(scan_id, {}).values())
        if len(users) != 1 or scan.watermark is not None or scan_id in sink_ids:
            continue
        if bool(scan.normalize) is not normalized:  # state mode: see state_prefilters
            continue
        calc = users[0]
        if type(calc) is not Calc or calc.condition is None or len(calc.inputs) != 1:
            continue
        found = pushdown(calc.condition, scan)
        if found:
            out[scan_id] = found
    return out


def pushdown(condition: Expr, scan: TableSourceScan) -> PreFilter | None:
    """The pushable conjuncts of ``condition`` over ``scan``'s rows, or None when there
    are none or another conjunct might raise."""
    tests: list[Check] = []
    for conjunct in _conjuncts(condition):
        found = _tests(conjunct, scan)
        if found is not None:
            tests.extend(found)
        elif not _safe(conjunct):
            return None
    return PreFilter(tuple(tests)) if tests else None


def _conjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, Call) and expr.op == "AND":
        return [c for operand in expr.operands for c in _conjuncts(operand)]
    return [expr]


def _column(expr: Expr, scan: TableSourceScan) -> str | None:
    """The physical column an operand reads as is, or None."""
    if isinstance(expr, InputRef) and 0 <= expr.index < len(scan.physical):
        return scan.physical[expr.index].name
    return None


def _constant(expr: Expr) -> bool:
    return isinstance(expr, Literal) and expr.value is not None


def _tests(expr: Expr, scan: TableSourceScan) -> list[Check] | None:
    """The tests one conjunct stands for, or None when it is not pushable."""
    if not isinstance(expr, Call):
        return None
    ops = expr.operands
    if expr.op in _FLIP and len(ops) == 2:
        left, right = ops
        if _column(left, scan) and _constant(right):
            return [Check(_column(left, scan), expr.op, right.value)]  # type: ignore[arg-type, attr-defined]
        if _column(right, scan) and _constant(left):
            return [Check(_column(right, scan), _FLIP[expr.op], left.value)]  # type: ignore[arg-type, attr-defined]
        return None
    column = _column(ops[0], scan) if ops else None
    if column is None:
        return None
    if expr.op in ("IS NULL", "IS NOT NULL") and len(ops) == 1:
        return [Check(column, expr.op)]
    if expr.op == "BETWEEN" and len(ops) == 3 and _constant(ops[1]) and _constant(ops[2]):
        return [Check(column, ">=", ops[1].value), Check(column, "<=", ops[2].value)]  # type: ignore[attr-defined]
    if expr.op in MEMBERSHIP and len(ops) > 1 and all(isinstance(o, Literal) for o in ops[1:]):
        members = [o.value for o in ops[1:]]  # type: ignore[attr-defined]
        if None in members:  # x IN (.., NULL) is TRUE only for the other members
            if expr.op == "NOT IN":
                return None  # never TRUE: left to the Calc
            members = [m for m in members if m is not None]
        try:
            return [Check(column, expr.op, frozenset(members))]
        except TypeError:  # unhashable constants
            return None
    return None


def _safe(expr: Expr) -> bool:
    """Whether evaluating ``expr`` on any row cannot raise."""
    if isinstance(expr, (InputRef, Literal)):
        return _scalar(expr.type)
    if not isinstance(expr, Call) or expr.op not in _SAFE_OPS:
        return False
    if not all(_safe(o) for o in expr.operands):
        return False
    if expr.op in _LOGIC:
        return True
    if expr.op in ("LIKE", "NOT LIKE"):
        return len(expr.operands) == 2 and _constant(expr.operands[1])
    return _same_family([o.type for o in expr.operands])


def _scalar(dtype: DataType) -> bool:
    return any(dtype.root in family for family in _FAMILIES) or dtype.root == NULL


def _same_family(types: list[DataType]) -> bool:
    roots = {t.root for t in types} - {NULL}
    return any(roots <= family for family in _FAMILIES)
