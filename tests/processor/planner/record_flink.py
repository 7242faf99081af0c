"""Record Apache Flink's plan for every planner case (runs in the PyFlink venv, not in make test).

    /work/flinkvenv/bin/python tests/processor/planner/record_flink.py [case.yaml ...]

For each case it runs the DDL and SET statements in a fresh streaming TableEnvironment,
then ``EXPLAIN CHANGELOG_MODE`` over the case's INSERT statements (as one statement set
when there are several), and stores in the YAML file either ``flink_modes`` (the
operators of Flink's optimized physical plan with their changelog modes, Exchange and
WatermarkAssigner left out since deltaflow has neither) or ``flink_error`` (the first
line of Flink's error message). ``table.exec.sink.require-on-conflict`` starts as false,
deltaflow's default; Flink 2.3 defaults to true, which a case gets by SETting it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml
from pyflink.table import EnvironmentSettings, TableEnvironment

CASES = Path(__file__).parent / "cases"
SKIPPED_NODES = {"Exchange", "WatermarkAssigner", "MiniBatchAssigner"}
_MODE = re.compile(r"changelogMode=\[([^\]]*)\]")


def statements(sql: str) -> list[str]:
    text = re.sub(r"--[^\n]*", "", sql)
    text = re.sub(r"(?is)\b(EXECUTE\s+)?STATEMENT\s+SET\s+BEGIN\b", "", text)
    text = re.sub(r"(?is)\bBEGIN\s+STATEMENT\s+SET\s*;", "", text)
    text = re.sub(r"(?im)^\s*END\s*;?\s*$", "", text)
    return [s.strip() for s in text.split(";") if s.strip()]


def extract_modes(explain: str) -> list[list[str]]:
    """(node name, changelog mode) of every operator in the optimized physical plan."""
    section = explain.split("== Optimized Physical Plan ==")[1].split(
        "== Optimized Execution Plan"
    )[0]
    out = []
    for line in section.splitlines():
        body = line.lstrip(" |+:-")
        if not body:
            continue
        name = body.split("(", 1)[0]
        mode = _MODE.search(body)
        if name not in SKIPPED_NODES:
            out.append([name, mode.group(1) if mode else ""])
    return out


def record(sql: str) -> dict[str, object]:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    # deltaflow's default (Flink 2.3's is true); a case may SET it to true to get Flink's check.
    env.get_config().set("table.exec.sink.require-on-conflict", "false")
    inserts = []
    for stmt in statements(sql):
        head = stmt.split(None, 1)[0].upper()
        if head == "SET":
            key, value = stmt[3:].split("=", 1)
            env.get_config().set(key.strip().strip("'"), value.strip().strip("'"))
        elif head == "INSERT":
            inserts.append(stmt)
        elif head == "EXPLAIN":
            continue
        else:
            env.execute_sql(stmt)
    body = (
        inserts[0] if len(inserts) == 1 else "STATEMENT SET BEGIN " + "; ".join(inserts) + "; END"
    )
    try:
        result = env.execute_sql("EXPLAIN CHANGELOG_MODE " + body)
        text = "\n".join(row[0] for row in result.collect())
    except Exception as err:  # noqa: BLE001 - Flink's error text is what we record
        message = str(err)
        for marker in ("ValidationException: ", "TableException: ", "SqlValidatorException: "):
            if marker in message:
                message = message.split(marker, 1)[1]
                break
        return {"flink_error": message.split("\n\tat ")[0].strip().splitlines()[0]}
    return {
        "flink_modes": extract_modes(text),
        "flink_explain": text.split("== Optimized Physical Plan ==")[1]
        .split("== Optimized Execution Plan")[0]
        .strip(),
    }


def _str_presenter(dumper: yaml.Dumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def main(paths: list[str]) -> None:
    yaml.add_representer(str, _str_presenter)
    files = [Path(p) for p in paths] or sorted(CASES.glob("*.yaml"))
    for path in files:
        case = yaml.safe_load(path.read_text())
        for key in ("flink_modes", "flink_error", "flink_explain"):
            case.pop(key, None)
        try:
            case.update(record(case["sql"]))
        except Exception as err:  # noqa: BLE001 - a broken case is reported, the others still run
            print(path.name, "FAILED:", str(err).splitlines()[:3])
            continue
        path.write_text(yaml.dump(case, sort_keys=False, width=120, allow_unicode=True))
        print(path.name, "error" if "flink_error" in case else len(case["flink_modes"]))


if __name__ == "__main__":
    main(sys.argv[1:])
