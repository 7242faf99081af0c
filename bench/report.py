"""The results table: workload x system, medians, and deltaflow's ratios."""

from __future__ import annotations

import statistics

from bench import jobs
from bench.runner import Run

VARIANTS = {
    "W2": ("W2M",),
    "W3": ("W3D", "W3R"),
    "W3S": ("W3SR",),
    "W4": ("W4R",),
}  # shown beside the base workload's baselines

TARGETS = {  # events/s measured by the CEO before deltaflow existed (2 cores, tansu)
    ("W1", "hand"): 146_000, ("W2", "hand"): 140_000, ("W3", "hand"): 103_000,
    ("W1", "flink"): 100_000, ("W2", "flink"): 90_000, ("W3", "flink"): 67_000,
}  # fmt: skip


def median_run(runs: list[Run]) -> Run:
    """The run with the median rate (the lower middle one for an even count)."""
    ordered = sorted(runs, key=lambda r: r.rate)
    return ordered[(len(ordered) - 1) // 2]


def summarise(runs: list[Run]) -> dict[tuple[str, str], dict]:
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.workload, run.system), []).append(run)
    out = {}
    for key, group in groups.items():
        ok = [r for r in group if r.correct != "failed"]
        mid = median_run(ok) if ok else group[0]
        out[key] = {
            "rate": statistics.median(r.rate for r in ok) if ok else 0.0,
            "rates": [round(r.rate) for r in group],
            "peak_rss_mb": max(r.peak_rss_mb for r in group),
            "cpu_s": mid.cpu_s,
            "per_cpu_s": mid.events / mid.cpu_s if mid.cpu_s else 0.0,
            "wall_s": mid.wall_s,
            "correct": "; ".join(sorted({r.correct for r in group} - {"n/a"})) or "n/a",
            "note": "; ".join(sorted({r.note for r in group if r.note})),
            "load": ", ".join(r.load for r in group),
        }
    return out


def ratio(summary: dict, workload: str, other: tuple[str, str]) -> str:
    mine = summary.get((workload, "deltaflow"), {}).get("rate", 0.0)
    theirs = summary.get(other, {}).get("rate", 0.0)
    return f"{mine / theirs:.2f}x" if mine and theirs else "-"


def table(summary: dict) -> str:
    """A Markdown table, one row per (workload, system)."""
    head = ("| workload | system | events/s (median) | runs (events/s) | peak RSS MB | CPU s "
            "| events per CPU s | output correct | deltaflow / this | load (1/5/15 min) | note |")  # fmt: skip
    lines = [head, "|" + "---|" * 11]
    order = {"W0": 0, "W0b": 1, "W1": 2, "W1msg": 2.5, "W2": 3, "W2msg": 3.5, "W2M": 4, "W3": 5,
             "W3D": 6, "W3R": 7, "W3S": 7.2, "W3SR": 7.4, "W4": 8, "W4R": 9}  # fmt: skip
    systems = {"floor": 0, "deltaflow": 1, "hand": 2, "hand-tuned": 3, "quix": 4, "flink": 5}
    for workload, system in sorted(
        summary, key=lambda k: (order.get(k[0], 9), systems.get(k[1], 9))
    ):
        s = summary[(workload, system)]
        rel = "-" if system == "deltaflow" else ratio(summary, workload, (workload, system))
        if system in ("hand", "hand-tuned", "quix"):
            rel = " / ".join(
                ratio(summary, w, (workload, system))
                for w in (workload, *VARIANTS.get(workload, ()))
            )
        lines.append(
            f"| {workload} | {system} | {s['rate']:,.0f} | {', '.join(f'{r:,}' for r in s['rates'])} "
            f"| {s['peak_rss_mb']:.0f} | {s['cpu_s']:.1f} | {s['per_cpu_s']:,.0f} | {s['correct']} "
            f"| {rel} | {s['load']} "
            f"| {s['note']} |"
        )
    return "\n".join(lines)


def ratios(summary: dict) -> str:
    """deltaflow against the floor (W0b), each baseline, and the CEO's targets."""
    lines = ["| workload | vs W0b floor | vs hand-written | vs hand-written, tuned fetch "
             "| vs Quix | vs Flink | vs CEO's hand target | vs CEO's Flink target |",
             "|" + "---|" * 8]  # fmt: skip
    for workload in ("W1", "W2", "W2M", "W3", "W3D", "W3R"):  # W4 has no targets
        mine = summary.get((workload, "deltaflow"), {}).get("rate", 0.0)
        if not mine:
            continue
        base = jobs.base(workload)
        ceo = [f"{mine / TARGETS[(base, s)]:.2f}x" for s in ("hand", "flink")]
        lines.append(
            f"| {workload} | {ratio(summary, workload, ('W0b', 'floor'))} "
            f"| {ratio(summary, workload, (base, 'hand'))} "
            f"| {ratio(summary, workload, (base, 'hand-tuned'))} "
            f"| {ratio(summary, workload, (base, 'quix'))} "
            f"| {ratio(summary, workload, (workload, 'flink'))} | {ceo[0]} | {ceo[1]} |"
        )
    return "\n".join(lines)


def state_table(runs: list[Run]) -> str:
    """deltaflow's state on disk per workload (LMDB pages in use after each run)."""
    sizes: dict[str, list[float]] = {}
    for run in runs:
        if run.system == "deltaflow" and run.extra.get("state_mb"):
            sizes.setdefault(run.workload, []).append(run.extra["state_mb"])
    lines = ["| workload | state MB (each run) | median |", "|---|---|---|"]
    for workload, mbs in sizes.items():
        each = ", ".join(f"{mb:.2f}" for mb in mbs)
        lines.append(f"| {workload} | {each} | {statistics.median(mbs):.2f} |")
    if "W3" in sizes and "W3R" in sizes:  # W3 runs the delta join by default, W3R the regular
        share = statistics.median(sizes["W3"]) / statistics.median(sizes["W3R"])
        lines.append(f"| W3 / W3R | | {share:.3f} |")
    return "\n".join(lines)


def markdown(
    summary: dict, profiles: dict[str, str], latency: dict | None, rate: int, runs: list[Run]
) -> str:
    parts = ["### Throughput\n", table(summary), "\n### deltaflow's ratios\n", ratios(summary),
             "\n### deltaflow's state on disk\n", state_table(runs)]  # fmt: skip
    if latency:
        parts += [f"\n### Latency (W1 daemon at {rate:,} events/s)\n", latency_table(latency)]
    for workload, text in profiles.items():
        parts += [f"\n### cProfile, deltaflow {workload}\n", "```", text.strip(), "```"]
    return "\n".join(parts) + "\n"


def latency_table(latency: dict) -> str:
    lines = ["| source options | produced | seen at sink | p50 ms | p99 ms | max ms | peak RSS MB "
             "| load |", "|" + "---|" * 8]  # fmt: skip
    for name, r in latency.items():
        if "error" in r:
            lines.append(f"| {name} | {r['error']} |" + " |" * 6)
            continue
        lines.append(
            f"| {name} | {r['produced']:,} | {r['seen']:,} | {r['p50_ms']:.0f} | {r['p99_ms']:.0f} "
            f"| {r['max_ms']:.0f} | {r['peak_rss_mb']:.0f} | {r['load']} |"
        )
    return "\n".join(lines)
