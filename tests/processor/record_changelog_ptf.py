"""Record Apache Flink 2.3's answers for changelog_ptf_flink.yaml (runs in the PyFlink venv).

    /work/flinkvenv/bin/python tests/processor/record_changelog_ptf.py

The inputs become files read by Flink's filesystem connector: ``cdc`` as debezium-json (a -U
row and the +U row after it are one update event), ``app``/``app2`` as CSV. For each case it
stores the operators of ``EXPLAIN CHANGELOG_MODE`` with their modes (``flink_modes``, Exchange
left out), the ProcessTableFunction lines (``flink_ptf``) and the collected changelog in print
format (``flink_output``); for each error case the root cause's message (``flink_error``).
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import yaml
from pyflink.table import EnvironmentSettings, TableEnvironment

FIXTURE = Path(__file__).parent / "changelog_ptf_flink.yaml"
_MODE = re.compile(r"changelogMode=\[([^\]]*)\]")
COLUMNS = {"cdc": ("id", "name", "amount"), "app": ("id", "name", "amount", "op")}
_SHORT = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}
COLUMNS["app2"] = ("id", "name", "amount", "code")


def debezium_events(changes: list[list]) -> list[str]:
    out, before = [], None
    for kind, *values in changes:
        row = dict(zip(COLUMNS["cdc"], values, strict=True))
        if kind == "-U":
            before = row
            continue
        op = {"+I": "c", "+U": "u", "-D": "d"}[kind]
        event = {"before": before if op == "u" else (row if op == "d" else None)}
        event.update(after=None if op == "d" else row, op=op)
        out.append(json.dumps(event))
    return out


def environment(inputs: dict[str, list], folder: Path) -> TableEnvironment:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    (folder / "cdc.json").write_text("\n".join(debezium_events(inputs["cdc"])) + "\n")
    env.execute_sql(
        "CREATE TABLE cdc (id INT, name STRING, amount INT, PRIMARY KEY (id) NOT ENFORCED) WITH "
        f"('connector' = 'filesystem', 'path' = '{folder / 'cdc.json'}', 'format' = 'debezium-json')"
    )
    for table in ("app", "app2"):
        lines = [",".join(str(v) for v in row) for row in inputs[table]]
        (folder / f"{table}.csv").write_text("\n".join(lines) + "\n")
        op = COLUMNS[table][-1]
        env.execute_sql(
            f"CREATE TABLE {table} (id INT, name STRING, amount INT, {op} STRING) WITH ("
            f"'connector' = 'filesystem', 'path' = '{folder / table}.csv', 'format' = 'csv')"
        )
    return env


def plan_of(env: TableEnvironment, query: str) -> dict[str, object]:
    text = "\n".join(r[0] for r in env.execute_sql("EXPLAIN CHANGELOG_MODE " + query).collect())
    section = text.split("== Optimized Physical Plan ==")[1].split("== Optimized Execution")[0]
    modes, ptf = [], []
    for line in section.splitlines():
        body = line.lstrip(" |+:-")
        name = body.split("(", 1)[0]
        if body and name != "Exchange":
            mode = _MODE.search(body)
            modes.append([name, mode.group(1) if mode else ""])
        if name == "ProcessTableFunction":
            ptf.append(body)
    return {"flink_modes": modes, "flink_ptf": ptf}


def changelog(env: TableEnvironment, query: str) -> list[str]:
    out = []
    with env.execute_sql(query).collect() as rows:
        for row in rows:
            values = ", ".join("null" if v is None else str(v) for v in row)
            out.append(f"{_SHORT[row.get_row_kind().name]}[{values}]")
    return out


def root_cause(err: Exception) -> str:
    lines = [ln for ln in str(err).splitlines() if "Exception: " in ln]
    return lines[-1].split("Exception: ", 1)[1].strip() if lines else str(err).splitlines()[0]


def main() -> None:
    data = yaml.safe_load(FIXTURE.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        env = environment(data["inputs"], Path(tmp))
        for case in data["cases"]:
            case.update(plan_of(env, case["query"]))
            case["flink_output"] = changelog(env, case["query"])
            print(case["name"], len(case["flink_output"]))
        for case in data["errors"]:
            try:
                env.execute_sql("EXPLAIN " + case["query"])
            except Exception as err:  # noqa: BLE001 - Flink's message is what we record
                case["flink_error"] = root_cause(err)
            print(case["name"], case.get("flink_error"))
    header = FIXTURE.read_text().split("inputs:", 1)[0]
    FIXTURE.write_text(header + yaml.dump(data, sort_keys=False, width=100, allow_unicode=True))


if __name__ == "__main__":
    main()
