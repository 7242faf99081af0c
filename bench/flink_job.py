"""One Flink SQL workload in a local mini-cluster, run by the Flink interpreter.

``<flink-python> bench/flink_job.py W1 orders.json items.json [parallelism] [delta]``
prints one JSON line: events, seconds (submit to finish), and whether the plan has
a delta join. A warm-up job over the first 2,000 lines runs first in the same JVM,
so the timed job does not pay for class loading and JIT warm-up (the warm-up's own
time is reported beside it). Only the standard library and pyflink are imported.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

WARMUP_LINES = 2000


def environment(workload: str, parallelism: int, files: dict[str, str]):
    """A table environment with the workload's tables declared; returns (env, insert)."""
    from pyflink.table import EnvironmentSettings, TableEnvironment

    from bench.jobs import SETTINGS, flink_statements

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("parallelism.default", str(parallelism))
    conf.set("table.local-time-zone", "UTC")
    # Flink 2.3 refuses an upsert sink whose key differs from the query's upsert key
    # unless INSERT says ON CONFLICT; false is Flink's earlier default and deltaflow's.
    conf.set("table.exec.sink.require-on-conflict", "false")
    for key, value in SETTINGS.get(workload, {}).items():
        conf.set(key, value)
    *ddl, insert = flink_statements(workload, files)
    for statement in ddl:
        env.execute_sql(statement)
    return env, insert


def head(path: str, folder: str) -> str:
    """The first WARMUP_LINES lines of ``path``, copied into ``folder``."""
    target = Path(folder) / Path(path).name
    with open(path, "rb") as src, open(target, "wb") as dst:
        for _, line in zip(range(WARMUP_LINES), src, strict=False):
            dst.write(line)
    return str(target)


def timed(env, insert: str) -> float:
    started = time.perf_counter()
    env.execute_sql(insert).wait()
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.jobs import uses_items

    workload, orders, items = argv[0], argv[1], argv[2]
    parallelism = int(argv[3]) if len(argv) > 3 else 1
    env, insert = environment(workload, parallelism, {"orders": orders, "items": items})
    try:
        plan = env.explain_sql(insert)
    except Exception as err:  # the planner's refusal, reported as data
        causes = [line for line in str(err).splitlines() if "Exception" in line] or [str(err)]
        print(json.dumps({"error": causes[0].strip()[:400]}), flush=True)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        small = {"orders": head(orders, folder), "items": head(items, folder)}
        warmup = timed(*environment(workload, parallelism, small))
    events = sum(1 for _ in open(orders, "rb"))
    if uses_items(workload):
        events += sum(1 for _ in open(items, "rb"))
    seconds = timed(env, insert)
    print(json.dumps({"events": events, "seconds": seconds, "warmup_seconds": warmup,
                      "delta_join": "DeltaJoin" in plan}), flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
