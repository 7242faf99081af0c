"""One measured run of one system on one workload, with its output checked."""

from __future__ import annotations

import json
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from bench import measure
from bench.jobs import base, skewed
from bench.kafka_io import fold_upsert
from bench.load import Dataset, expected, normalise

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 1800


@dataclass
class Run:
    system: str
    workload: str
    events: int
    seconds: float
    wall_s: float
    peak_rss_mb: float
    cpu_s: float
    load: str
    correct: str = "n/a"  # "yes", "NO (...)" or "n/a" (output not checked)
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Context:
    bootstrap: str
    data: Dataset
    topics: dict[str, str]
    work: Path
    flink_python: str
    flink_parallelism: int
    env: dict | None = None  # child environment (PYTHONPATH of a code snapshot)
    skewed: tuple[Dataset, dict[str, str]] | None = None  # W3S's data and topics

    def of(self, workload: str) -> tuple[Dataset, dict[str, str]]:
        """The data set and topics ``workload`` reads."""
        if skewed(workload):
            if self.skewed is None:
                raise RuntimeError(f"{workload} needs the skewed data set")
            return self.skewed
        return self.data, self.topics


def child_command(
    ctx: Context, system: str, workload: str, out: str, profile: str = ""
) -> list[str]:
    data, topics = ctx.of(workload)
    return [sys.executable, "-m", "bench.child", system, workload, "--bootstrap", ctx.bootstrap,
            "--orders", topics["orders"], "--items", topics["items"], "--out", out,
            "--events", str(data.events(workload)),
            "--state-dir", str(ctx.work / f"state-{uuid.uuid4().hex[:8]}"),
            *(["--profile", profile] if profile else [])]  # fmt: skip


def run_once(ctx: Context, system: str, workload: str, check: bool) -> Run:
    from bench.kafka_io import create_topics

    load = measure.load()
    if system == "flink":
        return run_flink(ctx, workload, load)
    out = f"out-{system}-{workload}-{uuid.uuid4().hex[:8]}"
    create_topics(ctx.bootstrap, [out])
    got = measure.run(child_command(ctx, system, workload, out), str(ROOT), TIMEOUT_S, ctx.env)
    result = parse(got, system, workload)
    events = ctx.of(workload)[0].events(workload)
    run = Run(system, workload, events, result.get("seconds", 0.0), got.wall_s,
              got.peak_rss_mb, got.cpu_s, load, extra=result)  # fmt: skip
    if "error" in result:
        run.correct, run.note = "failed", result["error"]
    elif check and not workload.startswith("W0"):
        run.correct = verify(ctx, workload, out)
    if (
        workload in ("W3", "W3D", "W3S", "W4")
        and system == "deltaflow"
        and not result.get("delta_join")
    ):
        run.note = "the planner did not plan a DeltaJoin; this ran the regular join"
    return run


def parse(got: measure.Measured, system: str, workload: str) -> dict:
    lines = [line for line in got.stdout.splitlines() if line.startswith("{")]
    if got.returncode != 0 or not lines:
        tail = got.stderr.strip().splitlines()[-3:]
        return {"error": f"{system} {workload} exited {got.returncode}: {' | '.join(tail)}"}
    return json.loads(lines[-1])


def verify(ctx: Context, workload: str, out: str) -> str:
    want = expected(ctx.of(workload)[0], base(workload))
    have = normalise(fold_upsert(ctx.bootstrap, out))
    if have == want:
        return "yes"
    wrong = sum(1 for k, v in want.items() if have.get(k) != v)
    extra = len(set(have) - set(want))
    return f"NO ({wrong} of {len(want)} keys wrong or missing, {extra} extra)"


def run_flink(ctx: Context, workload: str, load: str) -> Run:
    cmd = [ctx.flink_python, str(ROOT / "bench" / "flink_job.py"), workload,
           ctx.data.files["orders"], ctx.data.files["items"], str(ctx.flink_parallelism)]  # fmt: skip
    got = measure.run(cmd, str(ROOT), TIMEOUT_S)
    result = parse(got, "flink", workload)
    run = Run("flink", workload, result.get("events", 0), result.get("seconds", 0.0), got.wall_s,
              got.peak_rss_mb, got.cpu_s, load, extra=result)  # fmt: skip
    if "error" in result:
        run.correct, run.note = "failed", result["error"]
    else:
        run.note = "files in, blackhole out (no Kafka I/O)"
    return run
