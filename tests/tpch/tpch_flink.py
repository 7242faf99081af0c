"""Flink 2.3 on the TPC-H change stream: the same events as the Kafka topics, table by
table in the same order, as one debezium-json file per table (Flink's filesystem
connector reads them), and the requests ``bench/tpch_flink_job.py`` (run by PyFlink's
interpreter) answers. Used by test_tpch_flink.py and ``python -m bench.tpch``.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from decimal import Decimal
from pathlib import Path

from tpch_data import Dataset, encode
from tpch_queries import QUERIES, VIEWS
from tpch_run import result_types

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "tpch_flink_job.py"
WARMUP_LINES = 2000


def write_files(data: Dataset, folder: Path) -> tuple[dict[str, str], dict[str, str]]:
    """One debezium-json file per table, and a copy of its first WARMUP_LINES."""
    folder.mkdir(parents=True, exist_ok=True)
    full, head = {}, {}
    for table, events in data.events.items():
        full[table], head[table] = str(folder / f"{table}.json"), str(folder / f"{table}-head.json")
        lines = [encode(e) + b"\n" for e in events]
        Path(full[table]).write_bytes(b"".join(lines))
        Path(head[table]).write_bytes(b"".join(lines[:WARMUP_LINES]))
    return full, head


def file_ddl(data: Dataset, files: dict[str, str]) -> list[str]:
    options = "'connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json'"
    return [data.ddl(t, options.format(path)).strip().rstrip(";") for t, path in files.items()]


def queries(sources: str, numbers: list[int]) -> list[dict]:
    """Each query with its views, its column count and which columns are DATEs (JSON_ARRAY
    takes no DATE: the answer job casts them to ISO text)."""
    out = []
    for q in numbers:
        views = [VIEWS[q]] if q in VIEWS else []
        types = result_types(sources + "".join(v + ";\n" for v in views), q)
        dates = [i for i, t in enumerate(types) if t.startswith("DATE")]
        out.append({"q": q, "sql": QUERIES[q], "views": views, "columns": len(types),
                    "dates": dates})  # fmt: skip
    return out


def command(flink_python: str, work: Path, request: dict, tag: str) -> tuple[list[str], Path]:
    """The command answering ``request``, and where its result will be."""
    request_path, result_path = work / f"flink-{tag}.json", work / f"flink-{tag}.result.json"
    request_path.write_text(json.dumps(request), encoding="utf-8")
    return [flink_python, str(SCRIPT), str(request_path), str(result_path)], result_path


def answers(flink_python: str, work: Path, data: Dataset, sources: str, numbers: list[int]):
    """Flink's final table (or error) and plan per query, all in one JVM."""
    files, _ = write_files(data, work / "data")
    request = {"mode": "answer", "ddl": file_ddl(data, files), "queries": queries(sources, numbers)}
    cmd, result_path = command(flink_python, work, request, "answers")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    assert result_path.exists(), f"Flink exited {done.returncode}: {done.stderr[-2000:]}"
    return json.loads(result_path.read_text(encoding="utf-8"))


def fold_lines(lines: list[str]) -> Counter:
    """Flink's ``q<n>> +I[[...]]`` print lines (one JSON_ARRAY column) as a final table."""
    table: Counter = Counter()
    for line in lines:
        kind, _, rest = line.split("> ", 1)[1].partition("[")
        row = tuple(json.loads(rest[:-1], parse_float=Decimal))
        table[row] += 1 if kind in ("+I", "+U") else -1
    return +table


_JOIN = re.compile(r"(?<![A-Za-z])(Delta)?Join\(joinType=\[(\w+)\], where=\[(.*?)\], ")
_EQUALITY = re.compile(r"(?<![<>!])=\(")


def joins(plan: str) -> list[tuple[bool, str, bool]]:
    """(delta?, join type, keyless?) of each join of a physical plan (Flink's or
    deltaflow's EXPLAIN), top first; keyless: no equality in its condition."""
    return [(bool(d), kind, not _EQUALITY.search(where)) for d, kind, where in _JOIN.findall(plan)]


def keyless_joins(plan: str) -> int:
    return sum(1 for _, _, keyless in joins(plan) if keyless)
