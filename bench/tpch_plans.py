"""The TPC-H bench's plan shapes, Flink's print lines folded, and the Markdown table."""

from __future__ import annotations

import re
from collections import Counter

import tpch_flink  # tests/tpch, on the path bench.tpch sets


def tables_read(sql: str) -> set[str]:
    """The tables a deltaflow job reads, from its EXPLAIN."""
    from deltaflow.processor.planner.api import plan_job

    return set(re.findall(r"default_database, (\w+)[\],]", plan_job(sql).explain()))


def _describe(joins: list[tuple[bool, str, bool]]) -> str:
    if not joins:
        return "no join"
    regular = sum(1 for d, _, _ in joins if not d)
    delta = len(joins) - regular
    keyless = sum(1 for _, _, k in joins if k)
    kinds = Counter(kind.removesuffix("Join") for _, kind, _ in joins if kind != "InnerJoin")
    parts = [f"{regular} join" if regular else "", f"{delta} delta" if delta else ""]
    text = " + ".join(p for p in parts if p)
    extra = [f"{n} keyless" for n in [keyless] if n] + [
        f"{n} {k}" for k, n in sorted(kinds.items())
    ]
    return text + (f" ({', '.join(extra)})" if extra else "")


def our_shape(plan: str) -> str:
    return _describe(tpch_flink.joins(plan))


def flink_shape(plan: str) -> str:
    return _describe(tpch_flink.joins(plan)) if plan else "-"


def _rate(events: int, run: dict, key: str = "seconds") -> float:
    return events / run[key] if run.get(key) else 0.0


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def table_markdown(rows: list[dict]) -> str:
    """Events/s from each job's seconds; events per CPU s from the CPU the process (and for
    Flink its JVM) spent in that time, steadier on a loaded machine."""
    head = (
        "| query | events | deltaflow plan | Flink plan | matches DuckDB (deltaflow / Flink) "
        "| deltaflow events/s | Flink events/s | ratio | deltaflow / Flink events per CPU s "
        "| ratio | peak RSS MB (deltaflow / Flink) | deltaflow state MB |\n"
        "|---|---:|---|---|---|---:|---:|---:|---:|---:|---|---:|"
    )
    out = [head]
    for row in rows:
        ours, flink, events = row["deltaflow"], row["flink"], row["events"]
        a, b = _rate(events, ours), _rate(events, flink)
        ca, cb = _rate(events, ours, "cpu_s"), _rate(events, flink, "cpu_s")
        match = f"{ours.get('match', 'n (' + str(ours.get('error')) + ')')} / {flink['match']}"
        out.append(
            f"| Q{row['q']} | {events:,} | {ours.get('shape', '-')} | {flink.get('shape', '-')} "
            f"| {match} | {a:,.0f} | {b:,.0f} | {_ratio(a, b)} | {ca:,.0f} / {cb:,.0f} "
            f"| {_ratio(ca, cb)} | {ours.get('rss_mb', 0):.0f} / {flink.get('rss_mb', 0):.0f} "
            f"| {ours.get('state_mb', 0):.2f} |"
        )
    return "\n".join(out)
