"""``python -m bench.second_core``: would a second process shorten the job's critical path?

Issue 19 asks whether decoding or sink encoding in another process, handing batches to
the operator process through shared memory, pays on a 2-core machine. This measures it
on the bench's own data (``bench.data``: 200k order changes by default, the real
Debezium JSON bytes) with deltaflow's real codecs as the jobs build them:

- **decode W3 / decode W2**: the orders table's debezium-json decoder as the W3 / W2 job
  plans it (the columns it demands, before-images from state: ``accept_partial_images``),
  over batches of 5,000 messages (the job's ``POLL_RECORDS``); ``decode W1msg`` (with
  ``--tasks``) is W1msg's, before-images from the messages and the WHERE as pre-filter;
- **encode W3 / encode W2**: the upsert-kafka/json encoder of the job's sink (key and
  value per change, tombstones for -U/-D) over W3-shaped (an order joined with its item)
  and W2-shaped (per-merchant count and sum, -U/+U per change) output rows.

For each, the work in the job process alone (``single``) against the work in a second
process with the rows handed over by each codec of ``bench.handoff`` (a shared-memory
ring), where the job process only rebuilds (decode) or packs (encode) the rows. First, in
one process, the CPU each side costs, best of ``--repeat``: what the job process would
save, as a share of the whole job's CPU (``--job-us``, from ``python -m bench``). Then the
decode tasks as pipelines: the job process also spends the rest of the job's CPU (a spin
on its own CPU clock, spread over the batches: the normalizer, operators, state and sink
that cannot move), so the wall clock is that of a pipeline: the question is whether it
ends sooner. Each pipeline runs with the other core left to the machine (``free``) and
with a spinning process added (``busy``). The worker and the spinner run in sessions of
their own (Linux autogroups, see ``OWN_SESSION``) unless ``--same-session``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import marshal
import os
import signal
import statistics
import sys
import time
import traceback

from bench.data import Shape
from bench.handoff import CODECS, Ring, check
from bench.second_core_tasks import Task, rows_of, tasks


def cpu_best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


def handoff_costs(task: Task, codecs: list[str], repeat: int) -> list[dict]:
    """CPU seconds of the real work and of each codec's two sides, in this process."""
    handed = [rows_of(task, b) for b in task.batches]
    rows = sum(len(k) for k, _ in handed)
    work = cpu_best(lambda: [task.work(b) for b in task.batches], repeat)
    raw = 0.0  # a job process that keeps the consumer ships the values out first
    if task.direction == "decode":
        raw = cpu_best(lambda: [marshal.dumps(b.values) for b in task.batches], repeat)
    out = [{"task": task.name, "codec": "single", "work_s": work, "rows": rows, "raw_s": raw}]
    for name in codecs:
        codec = CODECS[name](task.shape)
        for kinds, batch_rows in handed:
            check(codec, kinds, batch_rows)
        packed = [codec.pack(k, r) for k, r in handed]
        pack = cpu_best(lambda c=codec: [c.pack(k, r) for k, r in handed], repeat)
        unpack = cpu_best(lambda c=codec, p=packed: [c.unpack(b) for b in p], repeat)
        out.append({"task": task.name, "codec": name, "pack_s": pack, "unpack_s": unpack,
                    "bytes_per_row": sum(map(len, packed)) / max(1, rows), "rows": rows})  # fmt: skip
    return out


# Whether the worker and the spinner run in sessions of their own (Linux autogroups: the
# scheduler shares the CPU fairly between sessions first, so a second process of the
# job's own session takes its time from the job's share of a loaded machine).
OWN_SESSION = True
# CPU us per order change of the job's own thread (python -m bench, 200k orders + 10k
# items, the child's main_thread_cpu_s: librdkafka's threads left out), load 28
JOB_US = "W3=17.7,W2=11.5,W1msg=2.6"


def spin(seconds: float) -> None:
    """Spends ``seconds`` of this process's CPU (the rest of the job, which stays here)."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> dict:
    wall, cpu = _clock()
    return {"wall_s": wall - start[0], "cpu_s": cpu - start[1]}


def single(task: Task, per_batch: float) -> dict:
    start = _clock()
    for batch in task.batches:
        task.work(batch)
        spin(per_batch)
    return {"job": _since(start), "worker": None, "done_s": _since(start)["wall_s"]}


def _decode_worker(task: Task, codec, ring: Ring) -> None:
    for raw in task.batches:
        done = task.work(raw)
        ring.put(codec.pack(done.kinds, done.rows))
    ring.end()


def _encode_worker(task: Task, codec, ring: Ring) -> None:
    while True:
        slot, view = ring.get()
        if view is None:
            return
        batch = codec.unpack(view)
        ring.release(slot, view)
        task.work(batch)


def _job_receives(task: Task, codec, ring: Ring, per_batch: float) -> None:
    while True:
        slot, view = ring.get()
        if view is None:
            return
        codec.unpack(view)
        ring.release(slot, view)
        spin(per_batch)


def _job_sends(task: Task, codec, ring: Ring, per_batch: float) -> None:
    for kinds, rows in task.batches:
        spin(per_batch)
        ring.put(codec.pack(kinds, rows))
    ring.end()


def _fork(body) -> tuple[int, int]:
    """A child process running ``body()``; it writes its JSON result to the pipe returned."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.close(read)
            if OWN_SESSION:  # its own autogroup: a share of the machine of its own
                os.setsid()
            os.write(write, json.dumps(body()).encode())
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write)
    return pid, read


def _collect(pid: int, read: int) -> dict:
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not chunks:
        raise RuntimeError(f"the worker process failed (wait status {status})")
    return json.loads(b"".join(chunks))


def split(task: Task, codec_name: str, per_batch: float) -> dict:
    """The task's real work in a second process, the rows through the ring."""
    codec, ring = CODECS[codec_name](task.shape), Ring()
    worker = _decode_worker if task.direction == "decode" else _encode_worker

    def body() -> dict:
        start = _clock()
        worker(task, codec, ring)
        return _since(start)

    try:
        start = _clock()
        pid, read = _fork(body)
        job = _job_receives if task.direction == "decode" else _job_sends
        job(task, codec, ring, per_batch)
        mine = _since(start)
        theirs = _collect(pid, read)
        return {"job": mine, "worker": theirs, "done_s": _since(start)["wall_s"]}
    finally:
        ring.close(unlink=True)


class Busy:
    """A process spinning on the machine while the block runs (the other core taken)."""

    def __enter__(self) -> Busy:
        self.pid = os.fork()
        if self.pid == 0:
            try:
                if OWN_SESSION:
                    os.setsid()
                while True:
                    pass
            finally:
                os._exit(0)
        return self

    def __exit__(self, *exc) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)


def pipelines(task: Task, codecs: list[str], rest_s: float, repeat: int) -> list[dict]:
    """Each scenario ``repeat`` times, interleaved, with the other core free and busy; the
    job process spends ``rest_s`` CPU seconds besides, spread over the batches."""
    per_batch = rest_s / len(task.batches)
    scenarios = ["single", *codecs]
    out = []
    for load in ("free", "busy"):
        runs: dict[str, list] = {s: [] for s in scenarios}
        for _ in range(repeat):
            for name in scenarios:
                loadavg = os.getloadavg()[0]
                with Busy() if load == "busy" else contextlib.nullcontext():
                    got = _scenario(task, name, per_batch)
                runs[name].append({**got, "load": loadavg})
        out += [_median(task.name, load, name, got) for name, got in runs.items()]
    return out


def _scenario(task: Task, name: str, per_batch: float) -> dict:
    return single(task, per_batch) if name == "single" else split(task, name, per_batch)


def _median(task: str, load: str, scenario: str, runs: list[dict]) -> dict:
    def med(fn) -> float:
        return statistics.median(fn(r) for r in runs)

    worker = None
    if runs[0]["worker"] is not None:
        worker = med(lambda r: r["worker"]["cpu_s"])
    return {"task": task, "other_core": load, "scenario": scenario,
            "job_wall_s": med(lambda r: r["job"]["wall_s"]), "job_cpu_s": med(lambda r: r["job"]["cpu_s"]),
            "done_s": med(lambda r: r["done_s"]), "worker_cpu_s": worker,
            "loads": [round(r["load"], 1) for r in runs], "runs": len(runs)}  # fmt: skip


def cost_table(costs: list[dict], messages: int, job_us: dict) -> str:
    """Markdown: CPU s per side, and what the job process would save."""
    lines = ["| task | rows | job process today (work) | codec | pack | unpack | bytes/row | "
             "job process saves | of the job's CPU | ... if it ships the raw values |",
             "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in costs:
        if row["codec"] == "single":
            work, task, rows, raw = row["work_s"], row["task"], row["rows"], row["raw_s"]
            job = messages * job_us[task.split()[-1]] * 1e-6
            continue
        left = row["unpack_s"] if task.startswith("decode") else row["pack_s"]
        saved = work - left
        lines.append(f"| {task} | {rows:,} | {work:.3f} | {row['codec']} | {row['pack_s']:.3f} | "
                     f"{row['unpack_s']:.3f} | {row['bytes_per_row']:.0f} | {saved:.3f} | "
                     f"{100 * saved / job:.1f}% | "
                     f"{100 * (saved - raw) / job:.1f}% |")  # fmt: skip
    return "\n".join(lines)


def pipeline_table(results: list[dict]) -> str:
    lines = ["| task | other core | scenario | job wall s | job CPU s | worker CPU s | all done s | "
             "job wall vs single | loads |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    base: dict = {}
    for r in results:
        key = (r["task"], r["other_core"])
        if r["scenario"] == "single":
            base[key] = r["job_wall_s"]
        worker = "-" if r["worker_cpu_s"] is None else f"{r['worker_cpu_s']:.2f}"
        change = 100 * (r["job_wall_s"] / base[key] - 1)
        lines.append(f"| {r['task']} | {r['other_core']} | {r['scenario']} | {r['job_wall_s']:.2f} | "
                     f"{r['job_cpu_s']:.2f} | {worker} | {r['done_s']:.2f} | {change:+.1f}% | "
                     f"{' '.join(map(str, r['loads']))} |")  # fmt: skip
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.second_core", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--orders", type=int, default=200_000, help="order changes (default 200k)")
    p.add_argument("--items", type=int, default=10_000, help="item changes (default 10k)")
    p.add_argument("--job-us", default=JOB_US,
                   help="CPU us per order change of the job's thread, per workload (python -m bench: "
                   "main_thread_cpu_s / orders); the pipelines spend what the task does not")  # fmt: skip
    p.add_argument("--repeat", type=int, default=3, help="in-process cost runs (best of)")
    p.add_argument("--pipeline-repeat", type=int, default=2, help="pipeline runs (median of)")
    p.add_argument("--tasks", default="decode W3,decode W2,encode W3,encode W2")
    p.add_argument("--pipeline-tasks", default="decode W3,decode W2")
    p.add_argument("--codecs", default=",".join(CODECS))
    p.add_argument("--pipeline-codecs", default="pickle5,msgpack")
    p.add_argument("--same-session", action="store_true",
                   help="keep the worker in the job's session (autogroup)")  # fmt: skip
    p.add_argument("--results", default="", help="write every figure as JSON here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    shape = Shape(args.orders, args.items)
    chosen = [t for t in tasks(shape) if t.name in args.tasks.split(",")]
    codecs = [c for c in args.codecs.split(",") if c]
    piped_codecs = [c for c in args.pipeline_codecs.split(",") if c]
    job_us = {k: float(v) for k, v in (p.split("=") for p in args.job_us.split(","))}
    where = "the job's session" if args.same_session else "sessions of their own"
    print(f"# second core: {args.orders:,} order changes, the job {args.job_us} CPU us per "
          f"change, worker in {where}, load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs",
          flush=True)  # fmt: skip
    costs = [row for t in chosen for row in handoff_costs(t, codecs, args.repeat)]
    print("\nCPU seconds in one process, best of", args.repeat)
    print(cost_table(costs, args.orders, job_us), flush=True)
    global OWN_SESSION
    OWN_SESSION = not args.same_session
    piped = [t for t in chosen if t.name in args.pipeline_tasks.split(",")]
    work = {r["task"]: r["work_s"] for r in costs if r["codec"] == "single"}
    runs = []
    for t in piped:
        rest = args.orders * job_us[t.name.split()[-1]] * 1e-6 - work[t.name]
        runs += pipelines(t, piped_codecs, rest, args.pipeline_repeat)
    print(f"\nPipelines, median of {args.pipeline_repeat}")
    print(pipeline_table(runs), flush=True)
    if args.results:
        with open(args.results, "w", encoding="utf-8") as out:
            json.dump({"args": vars(args), "costs": costs, "pipelines": runs}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
