"""What the physical rules recorded, in an EXPLAIN line (``explain.finish_lines``): a scan's
pushed ``filter=[..]`` and ``project=[..], metadata=[..]`` inside its ``table=[[..]]`` as
Flink prints them (``fields`` then lists the columns the scan reads), and
``fusedCalc=[input]`` / ``fusedCalc=[output]`` on an operator that runs the Calc below /
above it inside (docs/FLINK_COMPATIBILITY.md)."""

from __future__ import annotations

from deltaflow.formats.prefilter import MEMBERSHIP, NULL_TESTS, Check, PreFilter
from deltaflow.processor import plan as P
from deltaflow.processor.planner import logical as L


def with_physical(node: L.LNode, physical: P.Node, text: str) -> str:
    scan = isinstance(node, L.Scan) and isinstance(physical, P.TableSourceScan)
    fused = getattr(physical, "fused_calc", None) is not None
    if not (scan or fused) or ", changelogMode=" not in text:
        return text
    head, mode = text.rsplit(", changelogMode=", 1)
    if scan:
        head = _pushed_scan(node, physical)[:-1]  # type: ignore[arg-type]
    if fused:
        side = "input" if isinstance(physical, P.GroupAggregate) else "output"
        head += f", fusedCalc=[{side}]"
    return f"{head}, changelogMode={mode}"


def _pushed_scan(node: L.Scan, scan: P.TableSourceScan) -> str:
    pushed, fields = "", ", ".join(f.name for f in node.fields)
    if scan.prefilter:
        pushed += f", filter=[{_filter(scan.prefilter)}]"
    if scan.project is not None:
        meta = [key for _, key, _ in scan.metadata]
        pushed += f", project=[{', '.join(scan.project)}], metadata=[{', '.join(meta)}]"
        fields = ", ".join([*scan.project, *(column for column, _, _ in scan.metadata)])
    table = f"[default_catalog, default_database, {node.table.name}{pushed}]"
    return f"TableSourceScan(table=[{table}], fields=[{fields}])"


def _filter(prefilter: PreFilter) -> str:
    tests = [_check(t) for t in prefilter.tests]
    return tests[0] if len(tests) == 1 else f"and({', '.join(tests)})"


def _check(test: Check) -> str:
    if test.op in NULL_TESTS:
        return f"{test.op}({test.column})"
    values = test.constants()
    if test.op in MEMBERSHIP:
        values = sorted(values, key=repr)
    constants = ", ".join(repr(v) if isinstance(v, str) else str(v) for v in values)
    return f"{test.op}({test.column}, {constants})"
