"""Record what Apache Flink 2.3 computes for every job case (runs in the PyFlink venv, not in make test).

    /work/flinkvenv/bin/python tests/jobs/record_flink.py [case-name ...]

A case is a folder under ``cases/`` holding ``job.sql``. Its source tables say
``WITH (@source)`` (a Debezium topic), or ``WITH (@upsert_source)`` (an upsert-kafka topic
in the deltaflow run; here the same history as Debezium events with
``table.exec.source.cdc-events-duplicate``, which gives Flink's ChangelogNormalize), and
its sink says ``WITH (@sink)``. The events of table ``t`` are ``events/t.jsonl``, one
Debezium JSON event a line (shared between cases).

Here the sources become ``filesystem`` tables over those files with ``debezium-json``,
the sink a ``print`` table of the same schema, and the INSERT runs as a streaming job,
parallelism 1, time zone UTC. The print connector writes to the JVM's standard output,
which this script points at a capture file before the JVM starts. The lines it printed
are saved as ``flink.changelog.txt``; ``flink.final.txt`` is that changelog applied:
by the sink's primary key when it has one (the row left per key), else as a multiset
(each remaining row once per copy); both sorted.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
EVENTS = HERE / "events"
_TABLE = re.compile(r"CREATE\s+TABLE\s+(\w+)\s*\((.*?)\)\s*WITH\s*\(\s*(@\w+)\s*\)", re.S | re.I)
_PRIMARY = re.compile(r"PRIMARY\s+KEY\s*\(([^)]*)\)", re.I)


def statements(sql: str) -> list[str]:
    text = re.sub(r"--[^\n]*", "", sql)
    return [s.strip() for s in text.split(";") if s.strip()]


def flink_sql(sql: str) -> str:
    def options(match: re.Match) -> str:
        name, body, marker = match.group(1), match.group(2), match.group(3)
        if marker == "@sink":
            with_ = "'connector' = 'print'"
        else:
            path = EVENTS / f"{name}.jsonl"
            fmt = "json" if marker == "@json_source" else "debezium-json"
            with_ = f"'connector' = 'filesystem', 'path' = '{path}', 'format' = '{fmt}'"
        return f"CREATE TABLE {name} ({body}) WITH ({with_})"

    return _TABLE.sub(options, sql)


def sink_key(sql: str) -> list[int] | None:
    """Positions of the sink's primary key columns, or None for a sink without one."""
    for _name, body, marker in _TABLE.findall(sql):
        if marker != "@sink":
            continue
        found = _PRIMARY.search(body)
        if not found:
            return None
        columns = [c.strip().split()[0] for c in re.split(r",(?![^(]*\))", body)]
        columns = [c for c in columns if c.upper() not in ("PRIMARY", "WATERMARK")]
        return [columns.index(k.strip()) for k in found.group(1).split(",")]
    raise ValueError("the job has no table WITH (@sink)")


def split_row(text: str) -> list[str]:
    """The top-level fields of a printed row ``+I[a, b]`` (nested brackets kept whole)."""
    body, fields, depth, current = text[3:-1], [], 0, ""
    for ch in body:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            fields.append(current.strip())
            current = ""
        else:
            current += ch
    fields.append(current.strip())
    return fields


def final_table(lines: list[str], key: list[int] | None) -> list[str]:
    """The changelog applied: per key (upsert) or as a multiset (retract)."""
    if key is not None:
        table: dict[tuple, str] = {}
        for line in lines:
            fields = split_row(line)
            k = tuple(fields[i] for i in key)
            if line[0] == "+":
                table[k] = "+I" + line[2:]
            else:
                table.pop(k, None)
        return sorted(table.values())
    counts: dict[str, int] = {}
    for line in lines:
        row = "+I" + line[2:]
        counts[row] = counts.get(row, 0) + (1 if line[0] == "+" else -1)
        if counts[row] < 0:
            raise ValueError(f"the changelog retracts {row} which is not there")
    return sorted(r for r, n in counts.items() for _ in range(n))


class Flink:
    """One JVM for every case; stdout (the print sink) goes to a capture file."""

    def __init__(self) -> None:
        self.capture_path = Path(tempfile.mkstemp(prefix="flink-print-")[1])
        self.capture = open(self.capture_path)  # noqa: SIM115 - read as the jobs print
        out = os.open(self.capture_path, os.O_WRONLY)
        sys.stdout.flush()
        os.dup2(out, 1)
        sys.stdout = os.fdopen(os.dup(2), "w")  # this script's own prints go to stderr

    def run(self, case: Path) -> list[str]:
        from pyflink.table import EnvironmentSettings, TableEnvironment

        env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
        config = env.get_config()
        config.set("parallelism.default", "1")
        config.set("table.local-time-zone", "UTC")
        config.set("table.exec.sink.require-on-conflict", "false")
        config.set("python.executable", sys.executable)
        config.set("python.files", str(HERE))
        sql = (case / "job.sql").read_text()
        if "@upsert_source" in sql:
            config.set("table.exec.source.cdc-events-duplicate", "true")
        insert = None
        for stmt in statements(flink_sql(sql)):
            head = stmt.split(None, 1)[0].upper()
            if head == "SET":
                k, v = stmt[3:].split("=", 1)
                config.set(k.strip().strip("'"), v.strip().strip("'"))
            elif head == "INSERT":
                insert = stmt
            else:
                env.execute_sql(stmt)
        self.capture.read()
        env.execute_sql(insert).wait()
        return [ln for ln in self.printed().splitlines() if ln[:3] in ("+I[", "-U[", "+U[", "-D[")]

    def printed(self) -> str:
        """What the job printed: read until the capture ends a line and stops growing."""
        text = ""
        while True:
            time.sleep(0.2)
            more = self.capture.read()
            text += more
            if not more and (not text or text.endswith("\n")):
                return text


def main(names: list[str]) -> None:
    flink = Flink()
    cases = [CASES / n for n in names] or sorted(p for p in CASES.iterdir() if p.is_dir())
    for case in cases:
        try:
            lines = flink.run(case)
            final = final_table(lines, sink_key((case / "job.sql").read_text()))
        except Exception as err:  # noqa: BLE001 - a broken case is reported, the others still run
            causes = [ln for ln in str(err).splitlines() if "Exception:" in ln]
            print(case.name, "FAILED:", (causes or str(err).splitlines())[-1][:400])
            continue
        (case / "flink.changelog.txt").write_text("".join(ln + "\n" for ln in lines))
        (case / "flink.final.txt").write_text("".join(ln + "\n" for ln in final))
        print(case.name, len(lines), "changes,", len(final), "final rows")


if __name__ == "__main__":
    main(sys.argv[1:])
