"""Event-time temporal joins: ``JOIN rates FOR SYSTEM_TIME AS OF o.rowtime AS r ON o.k = r.k``
against a versioned table (a changelog table with a PRIMARY KEY and a WATERMARK), planned
as Flink's ``TemporalJoin``: each left row joins the version of its key valid at its time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from deltaflow.formats.errors import PlanError, SqlError
from deltaflow.processor import plan as P
from deltaflow.processor.exprs.nodes import Expr
from deltaflow.processor.plan import Key, Mode
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.catalog import CHANGELOG_FORMATS
from deltaflow.processor.planner.relation import Rel, unique_fields
from deltaflow.processor.sql.errors import position


@dataclass(eq=False)
class TemporalJoin(L.LNode):
    join_type: str = "INNER"
    left_keys: Key = ()
    right_keys: Key = ()
    condition: Expr | None = None
    left_time: int = 0
    right_time: int = 0

    def produces(self, inputs: list[Mode]) -> Mode:
        if inputs[0] != L.INSERT_ONLY:
            from deltaflow.processor.planner.explain import describe  # renders this node
            from deltaflow.processor.planner.traits import producer_of_updates

            node = describe(producer_of_updates(self.inputs[0]))
            raise PlanError(
                "an event-time temporal join's probe side must be append-only; it is updated "
                f"by node {node}",
                node=node,
            )
        return L.INSERT_ONLY


def bind_temporal_join(left: Rel, right: Rel, join_type: str, keys, out, left_time: int,
                       version: exp.Expr) -> Rel:  # fmt: skip  # noqa: ANN001
    lk, rk, rest = keys
    times = [i for i, c in enumerate(right.columns) if c.time_attr == "ROWTIME"]
    pk = right.node.primary_key if isinstance(right.node, L.Scan) else ()
    if not times or not pk:
        raise SqlError(
            "Event-Time Temporal Table Join requires both primary key and row time attribute in "
            "versioned table: declare PRIMARY KEY and WATERMARK on it, or join AS OF a "
            "PROCTIME() column for a lookup join", *position(version))  # fmt: skip
    if join_type not in ("INNER", "LEFT"):
        raise SqlError("an event-time temporal join is a JOIN or a LEFT JOIN", *position(version))
    if not set(pk) <= set(rk):
        raise SqlError(
            "Temporal Table Join requires primary key in versioned table; join ON all of the "
            "versioned table's primary key columns", *position(version))  # fmt: skip
    versions: L.LNode = right.node
    scan = right.node if isinstance(right.node, L.Scan) else None  # a Scan: it has a key
    if scan is not None and scan.table.format in CHANGELOG_FORMATS:  # versions need no -U rows
        versions = L.DropUpdateBefore([right.node], list(right.node.fields))
    node = TemporalJoin([left.node, versions], unique_fields(out), join_type=join_type,
                        left_keys=lk, right_keys=rk, condition=rest, left_time=left_time,
                        right_time=times[0])  # fmt: skip
    return Rel(node, out)


def describe_temporal_join(node: TemporalJoin, render, join_names: dict[str, str]) -> str:  # noqa: ANN001
    names = [f.name for f in node.fields]
    width = len(node.inputs[0].fields)
    right = lambda i: names[i + width]  # noqa: E731
    parts = [
        f"=({names[a]}, {right(b)})" for a, b in zip(node.left_keys, node.right_keys, strict=True)
    ]
    pk = ", ".join(right(b) for b in node.right_keys)
    parts.append(
        f"__TEMPORAL_JOIN_CONDITION({names[node.left_time]}, {right(node.right_time)}, "
        f"__TEMPORAL_JOIN_CONDITION_PRIMARY_KEY({pk}), __TEMPORAL_JOIN_LEFT_KEY("
        f"{', '.join(names[a] for a in node.left_keys)}), __TEMPORAL_JOIN_RIGHT_KEY({pk}))"
    )
    if node.condition is not None:
        parts.append(render(node.condition, names))
    return (
        f"TemporalJoin(joinType=[{join_names[node.join_type]}], where=[AND({', '.join(parts)})], "
        f"select=[{', '.join(names)}])"
    )


def build_temporal_join(node: TemporalJoin, base: dict[str, Any]) -> P.Node:
    return P.TemporalJoin(
        **base,
        join_type=node.join_type,
        left_keys=node.left_keys,
        right_keys=node.right_keys,
        condition=node.condition,
        left_time=node.left_time,
        right_time=node.right_time,
    )
