"""One TPC-H job of deltaflow in its own process: ``python -m bench.tpch_child JOB STATE``.

Plans the job file (the query's tables from their Kafka topics, debezium-json, earliest
to the end offsets at start; its result into a kafka sink in debezium-json), runs it to
the end of its input and prints one JSON line: ``events`` read, ``seconds`` from the
moment the job is planned to the moment its output is flushed (the process's imports and
planning excluded, as ``bench.child`` times), the plan, and the state's LMDB MB.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    from bench.measure import state_mb
    from deltaflow.processor.job import Job, JobOptions
    from deltaflow.processor.planner.api import plan_job

    job_file, state_dir, bootstrap = argv[0], argv[1], argv[2]
    planned = plan_job(Path(job_file).read_text(encoding="utf-8"), source_name=job_file)
    plan = planned.explain()
    started, cpu = time.perf_counter(), _cpu()
    job = Job(planned.plan, JobOptions(state_dir=Path(state_dir), bootstrap=bootstrap))
    if len(argv) > 3:  # a profile file: cProfile the run (bench.tpch --profile)
        import cProfile

        cProfile.runctx("job.run()", globals(), {"job": job}, argv[3])
    else:
        job.run()
    seconds, cpu = time.perf_counter() - started, _cpu() - cpu
    print(json.dumps({"events": job.stats.total_in, "seconds": seconds, "cpu_s": cpu,
                      "plan": plan, "state_mb": state_mb(state_dir)}), flush=True)  # fmt: skip
    return 0


def _cpu() -> float:
    """CPU seconds of this process (every thread) and its waited-for children."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
