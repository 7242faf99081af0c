"""Nexmark on deltaflow and on Flink: the events, the topics, one query's run, the comparison.

The events come from ``bench/nexmark_gen.py`` (seeded); deltaflow reads them from a topic of
the session's tansu broker (plain JSON, Nexmark's nested layout) and writes each query's
result to a Kafka sink topic (debezium-json, so retractions are records too); Flink reads the
same lines from the file (``nexmark_flink.py``). Both results are compared as Flink's
print-format multisets of the final table (each changelog applied).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Producer

from bench import nexmark_gen
from bench import nexmark_queries as nq
from deltaflow.connectors.broker import ensure_topics
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "jobs"))
sys.path.insert(0, str(ROOT / "bench"))  # q14's count_char: nexmark_udfs.count_char

import jobs_cases as jc  # noqa: E402

UDF = "CREATE TEMPORARY FUNCTION count_char AS 'nexmark_udfs.count_char' LANGUAGE PYTHON"
SIDE_KEYS = 10000  # q13's side input: key 0..9999, value 'v<key>'


def write_inputs(folder: Path, count: int, config: nexmark_gen.Config) -> tuple[Path, Path]:
    events, side = folder / "nexmark.jsonl", folder / "side_input.csv"
    nexmark_gen.write(str(events), count, config)
    side.write_text("".join(f"{k},v{k}\n" for k in range(SIDE_KEYS)))
    return events, side


def produce_lines(bootstrap: str, topic: str, lines: list[bytes]) -> None:
    ensure_topics(bootstrap, [topic])
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for line in lines:
        producer.produce(topic, value=line)
        producer.poll(0)
    producer.flush(60)


def produce_inputs(bootstrap: str, events: Path, topics: dict[str, str]) -> None:
    produce_lines(bootstrap, topics["datagen"], events.read_bytes().splitlines())
    side = [json.dumps({"key": k, "value": f"v{k}"}).encode() for k in range(SIDE_KEYS)]
    produce_lines(bootstrap, topics["side"], side)


def deltaflow_sql(name: str, bootstrap: str, topics: dict[str, str], sink_topic: str) -> str:
    common = f"'properties.bootstrap.servers' = '{bootstrap}'"
    bounded = "'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset'"
    source = f"'connector' = 'kafka', 'topic' = '{topics['datagen']}', {common}, {bounded}, 'format' = 'json'"
    side = f"'connector' = 'kafka', 'topic' = '{topics['side']}', {common}, {bounded}, 'format' = 'json'"
    sink = f"'connector' = 'kafka', 'topic' = '{sink_topic}', {common}, 'format' = 'debezium-json'"
    return ";\n".join(nq.statements(name, source, sink, side, UDF)) + ";"


def run_deltaflow(name: str, bootstrap: str, topics: dict[str, str], sink_topic: str,
                  state_dir: Path) -> list[str]:  # fmt: skip
    """The query's final table (Flink's print format, sorted multiset) after one bounded run."""
    ensure_topics(bootstrap, [sink_topic])
    plan = plan_job(deltaflow_sql(name, bootstrap, topics, sink_topic)).plan
    Job(plan, JobOptions(state_dir=state_dir, bootstrap=bootstrap)).run()
    sink = plan.sinks[0]
    records = jc.read_records(bootstrap, sink_topic)
    changelog = jc.retract_changelog(records, [f.name for f in sink.physical], list(sink.types))
    return jc.multiset(changelog)


def flink_results(events: Path, side: Path, work: Path, names: list[str] = nq.NAMES) -> dict:
    """Flink's result of ``names`` over ``events``: from DELTAFLOW_FLINK_CACHE when a run of the
    same queries on the same events with the same runner is there, else by running Flink (and
    caching it)."""
    digest = hashlib.sha256(" ".join(names).encode())
    for path in (events, side, ROOT / "bench" / "nexmark_queries.py", HERE / "nexmark_flink.py",
                 ROOT / "bench" / "nexmark_udfs.py"):  # fmt: skip
        digest.update(path.read_bytes())
    cache = Path(os.environ.get("DELTAFLOW_FLINK_CACHE") or work)
    cached = cache / f"nexmark-{digest.hexdigest()[:20]}.json"
    if not cached.exists():
        python = os.environ.get("DELTAFLOW_FLINK_PYTHON", "/work/flinkvenv/bin/python")
        out = work / "flink-nexmark.json"
        subprocess.run([python, str(HERE / "nexmark_flink.py"), str(events), str(side), str(out),
                        *names], check=True, timeout=3600)  # fmt: skip
        cache.mkdir(parents=True, exist_ok=True)
        cached.write_text(out.read_text())
    return json.loads(cached.read_text())
