"""A bound relation (``Rel``: a logical node and the names a query sees of it) and the
small helpers every binding step shares: the fields of its columns, and the
conjuncts of a condition."""

from __future__ import annotations

from dataclasses import dataclass, replace

from deltaflow.processor.exprs.functions import infer_call
from deltaflow.processor.exprs.nodes import Call, Expr
from deltaflow.processor.plan import Field, WindowSpec
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import Scope, ScopeColumn


@dataclass
class Rel:
    """A bound relation: its node and the names visible to the enclosing query."""

    node: L.LNode
    columns: list[ScopeColumn]
    window: WindowSpec | None = (
        None  # set for TABLE(TUMBLE(...)): the last 3 columns are window columns
    )

    def scope(self, functions: dict[str, str]) -> Scope:
        return Scope(self.columns, functions)

    def requalified(self, alias: str | None) -> Rel:
        if alias is None:
            return self
        cols = [replace(c, qualifier=alias) for c in self.columns]
        return Rel(self.node, cols, self.window)


def fields_of(columns: list[ScopeColumn]) -> list[Field]:
    return [Field(c.name, c.type) for c in columns]


def unique_fields(columns: list[ScopeColumn]) -> list[Field]:
    """Fields named as Flink names a join's output: a repeated name gets a suffix (id, id0)."""
    seen: set[str] = set()
    out = []
    for c in columns:
        name, n = c.name, 0
        while name in seen:
            name, n = f"{c.name}{n}", n + 1
        seen.add(name)
        out.append(Field(name, c.type))
    return out


def conjuncts_of(cond: Expr | None) -> list[Expr]:
    if cond is None:
        return []
    if isinstance(cond, Call) and cond.op == "AND":
        return [x for o in cond.operands for x in conjuncts_of(o)]
    return [cond]


def and_all(conds: list[Expr]) -> Expr | None:
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = infer_call("AND", [out, c])
    return out
