"""TO_CHANGELOG / FROM_CHANGELOG planned and run by deltaflow, compared with Apache Flink 2.3's
recorded plans, changelogs and error messages (changelog_ptf_flink.yaml, recorded by
record_changelog_ptf.py with the same inputs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.errors import DeltaflowError, SqlError
from deltaflow.formats.printing import row_printer
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph
from deltaflow.state.backend import StateBackend

FIXTURE = yaml.safe_load((Path(__file__).parent / "changelog_ptf_flink.yaml").read_text())
KAFKA = "'connector' = 'kafka', 'topic' = '{0}', 'properties.bootstrap.servers' = 'localhost:9092'"
DDL = f"""
CREATE TABLE cdc (id INT, name STRING, amount INT, PRIMARY KEY (id) NOT ENFORCED)
  WITH ({KAFKA.format("cdc")}, 'format' = 'debezium-json');
CREATE TABLE app (id INT, name STRING, amount INT, op STRING) WITH ({KAFKA.format("app")}, 'format' = 'json');
CREATE TABLE app2 (id INT, name STRING, amount INT, code STRING)
  WITH ({KAFKA.format("app2")}, 'format' = 'json');
"""
_MODE = re.compile(r"changelogMode=\[([^\]]*)\]")


@pytest.fixture
def backend(tmp_path):
    b = StateBackend(tmp_path / "state")
    yield b
    b.close()


def input_batches(table: str, size: int) -> list[Batch]:
    """The case inputs as batches of ``size`` changes; a -U and its +U stay in one batch."""
    batches, batch = [], Batch()
    for row in FIXTURE["inputs"][table]:
        kind, values = (
            (RowKind.parse(row[0]), tuple(row[1:])) if table == "cdc" else (0, tuple(row))
        )
        batch.append(kind, values)
        if len(batch) >= size and kind != RowKind.UPDATE_BEFORE:
            batches.append(batch)
            batch = Batch()
    return batches + ([batch] if batch else [])


def scans(node: P.Node, out: dict[str, int]) -> dict[str, int]:
    if isinstance(node, P.TableSourceScan):
        out[node.table.rsplit(".", 1)[-1]] = node.node_id
    for child in node.inputs:
        scans(child, out)
    return out


def run(query: str, sink: str, backend: StateBackend, size: int) -> list[str]:
    sql = DDL + f"CREATE TABLE out ({sink}) WITH ('connector' = 'print');\nINSERT INTO out {query};"
    plan = plan_job(sql).plan
    graph = Graph(plan, backend)
    (node,) = plan.sinks
    printer = row_printer(node.types)
    out: list[str] = []
    for table, scan_id in scans(node, {}).items():
        results = [graph.push(scan_id, b) for b in input_batches(table, size)]
        for result in results + [graph.finish()]:
            got = result.get(node.node_id, Batch())
            out += [printer(k, r) for k, r in zip(got.kinds, got.rows, strict=True)]
    return out


def explain(query: str) -> str:
    return plan_job(DDL + f"EXPLAIN CHANGELOG_MODE {query};").explains[0]


def modes(text: str) -> list[list[str]]:
    """(node, changelog mode) per operator; Calc left out, since Flink projects into its scan,
    and a Debezium source's before-images from state (an intended difference)."""
    out = []
    for line in text.splitlines():
        body = line.lstrip(" |+:-")
        name = body.split("(", 1)[0]
        if name not in ("Calc", "Exchange") and "beforeImage=[state]" not in body:
            out.append([name, _MODE.search(body).group(1)])
    return out


def unordered(message: str) -> str:
    """Bracketed lists sorted: Flink lists the valid change operations in hash-set order."""
    return re.sub(r"\[([A-Z_, ]+)\]", lambda m: str(sorted(m.group(1).split(", "))), message)


CASES = {c["name"]: c for c in FIXTURE["cases"]}
ERRORS = {c["name"]: c for c in FIXTURE["errors"]}


@pytest.mark.parametrize("size", [1, 100])
@pytest.mark.parametrize("name", CASES)
def test_changelog_equals_flinks(name: str, size: int, backend) -> None:
    case = CASES[name]
    assert run(case["query"], case["sink"], backend, size) == case["flink_output"]


@pytest.mark.parametrize("name", CASES)
def test_plan_equals_flinks(name: str) -> None:
    case = CASES[name]
    text = explain(case["query"])
    ptf = [ln.lstrip(" |+:-") for ln in text.splitlines() if "ProcessTableFunction(" in ln]
    assert ptf == case["flink_ptf"]
    ours, flink = modes(text), [m for m in case["flink_modes"] if m[0] != "Calc"]
    assert [m[0] for m in ours] == [m[0] for m in flink]
    # From the (first) ProcessTableFunction down; above it, the root of a SELECT differs: Flink's
    # collecting root asks for no -U rows, deltaflow's EXPLAIN of a SELECT keeps them.
    first = [m[0] for m in flink].index("ProcessTableFunction")
    assert ours[first:] == flink[first:]


@pytest.mark.parametrize("name", ERRORS)
def test_wrong_usage_fails_in_flinks_words(name: str) -> None:
    case = ERRORS[name]
    with pytest.raises(SqlError) as info:
        explain(case["query"])
    assert unordered(case["flink_error"]) in unordered(str(info.value))
    assert info.value.line == DDL.count("\n") + 1 and info.value.col > 0  # the query line


def test_unmapped_op_code_stops_the_job_naming_the_code(backend) -> None:
    """Flink: 'Received invalid op code 'r'. Defined op codes are: [...]' at runtime."""
    query = (
        "SELECT * FROM FROM_CHANGELOG(input => TABLE app2, op => DESCRIPTOR(code), op_mapping => "
        "MAP['c', 'INSERT', 'b', 'UPDATE_BEFORE', 'u', 'UPDATE_AFTER', 'd', 'DELETE'])"
    )
    with pytest.raises(DeltaflowError, match="Received invalid op code 'r'. Defined op codes"):
        run(query, "id INT, name STRING, amount INT", backend, 100)


def test_to_changelog_after_an_upsert_source_gets_full_deletes() -> None:
    """TO_CHANGELOG requires UPDATE_BEFORE and full deletes: an upsert-kafka source is normalized."""
    sql = DDL.replace(
        "'format' = 'debezium-json'", "'key.format' = 'json', 'value.format' = 'json'"
    )
    sql = sql.replace(
        "'connector' = 'kafka', 'topic' = 'cdc'", "'connector' = 'upsert-kafka', 'topic' = 'cdc'"
    )
    text = plan_job(sql + "EXPLAIN CHANGELOG_MODE SELECT * FROM TO_CHANGELOG(TABLE cdc);").explains[
        0
    ]
    assert modes(text) == [
        ["ProcessTableFunction", "I"],
        ["ChangelogNormalize", "I,UB,UA,D"],
        ["TableSourceScan", "UA,D"],
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("TABLE cdc, foo => 'x'", "Unknown argument 'foo'"),
        ("TABLE cdc, uid => 'x'", "does not support the 'uid' argument of TO_CHANGELOG"),
        ("TABLE cdc, on_time => DESCRIPTOR(id)", "does not support the 'on_time' argument"),
        ("op => DESCRIPTOR(kind)", "Argument 'input' is missing"),
        ("TABLE cdc, op_mapping => MAP['INSERT', 1]", "MAP of string literals"),
    ],
)
def test_arguments_deltaflow_rejects(arguments: str, message: str) -> None:
    """Flink 2.3 ignores an unknown named argument; deltaflow names it (a likely typo)."""
    with pytest.raises(SqlError, match=re.escape(message)) as info:
        explain(f"SELECT * FROM TO_CHANGELOG({arguments})")
    assert info.value.line == DDL.count("\n") + 1


def test_operators_on_batches_keep_order_and_drop_unmapped(backend) -> None:
    """TO_CHANGELOG with a mapping that leaves out updates, then FROM_CHANGELOG back: the
    inserts and deletes survive in order, the update pairs are gone."""
    query = (
        "SELECT * FROM FROM_CHANGELOG(input => (SELECT * FROM TO_CHANGELOG(input => TABLE cdc, "
        "op_mapping => MAP['INSERT', 'I', 'DELETE', 'D'])), op_mapping => MAP['I', 'INSERT', "
        "'B', 'UPDATE_BEFORE', 'D', 'DELETE'])"
    )
    got = run(query, "id INT, name STRING, amount INT", backend, 3)
    assert got == ["+I[1, a, 10]", "+I[2, b, 20]", "+I[3, a, 5]", "-D[2, b, 20]"]
