"""Throughput of a compiled Calc: ``python -m deltaflow.processor.exprs.bench``.

A 3-column projection (a column, an arithmetic on a nullable INT, UPPER of a string)
with a filter (``amount > 10 AND name LIKE 'a%'``) over 100k rows.
"""

from __future__ import annotations

import time
from decimal import Decimal

from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.compile import EvalContext, compile_calc
from deltaflow.processor.exprs.functions import infer_call, literal
from deltaflow.processor.exprs.nodes import InputRef


def _rows(n: int) -> list[tuple]:  # type: ignore[type-arg]
    names = ["alice", "bob", "anna", "carl"]
    return [(i, names[i % 4], None if i % 10 == 0 else i % 50, Decimal(i % 100)) for i in range(n)]


def measure(n: int = 100_000, repeat: int = 5) -> dict[str, float]:
    ident = InputRef(parse_type("INT NOT NULL"), 0)
    name = InputRef(parse_type("STRING"), 1)
    amount = InputRef(parse_type("INT"), 2)
    price = InputRef(parse_type("DECIMAL(10, 2)"), 3)
    int_t = parse_type("INT")
    condition = infer_call(
        "AND",
        [
            infer_call(">", [amount, literal(10, int_t)]),
            infer_call("LIKE", [name, literal("a%", parse_type("STRING"))]),
        ],
    )
    cases = {
        "int+string": [
            ident,
            infer_call("*", [amount, literal(2, int_t)]),
            infer_call("UPPER", [name]),
        ],
        "decimal": [ident, infer_call("*", [price, amount]), name],
    }
    rows = _rows(n)
    kinds = [0] * n
    out: dict[str, float] = {}
    for label, projection in cases.items():
        for cond_label, cond in (("filter", condition), ("no filter", None)):
            fn = compile_calc(projection, cond, EvalContext())
            best = min(_time(fn, kinds, rows) for _ in range(repeat))
            out[f"{label}, {cond_label}"] = n / best
    return out


def _time(fn, kinds, rows) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn(kinds, rows)
    return time.perf_counter() - start


def main() -> None:
    for label, rate in measure().items():
        print(f"{label:24s} {rate / 1e6:6.2f} M rows/s")


if __name__ == "__main__":
    main()
