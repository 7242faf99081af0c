"""The physical rules stage: its decisions are fields of the recorded plan, EXPLAIN prints
them as Flink prints its pushdowns, the runtime builds what they say, the fingerprint
covers them, and no rule changes a node another INSERT shares."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from deltaflow.formats.errors import StateError
from deltaflow.formats.prefilter import Check, PreFilter
from deltaflow.processor import plan as P
from deltaflow.processor.identity import SCHEME_KEY, bind_plan
from deltaflow.processor.job_tables import scans_of
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.planner.fingerprint import SCHEME, plan_fingerprint
from deltaflow.processor.planner.physical_rules import apply_physical_rules, index, rebuild
from deltaflow.processor.runtime.graph import Graph
from deltaflow.processor.runtime.simple import PassThrough
from deltaflow.state.backend import StateBackend
from deltaflow.state.checkpoint import EPOCH_KEY

ORDERS = """CREATE TABLE orders (id BIGINT, c INT, amount INT, note STRING, status STRING)
  WITH ('connector' = 'filesystem', 'path' = '/tmp/orders.json', 'format' = 'json'{extra});
CREATE TABLE o (c INT, total INT) WITH ('connector' = 'print');
"""
FILTERED = "INSERT INTO o SELECT c, SUM(amount) FROM orders WHERE status = 'paid' GROUP BY c;"
PLAIN = "INSERT INTO o SELECT c, SUM(amount) FROM orders GROUP BY c;"


def job(insert: str, extra: str = ""):
    return plan_job(ORDERS.format(extra=extra) + insert)


def nodes_of(plan: P.JobPlan) -> dict[int, P.Node]:
    return index(plan.sinks)[0]


def test_explain_prints_the_pushed_projection_and_filter_in_the_scan_as_flink() -> None:
    # Flink 2.3 (filesystem source, same job) prints: TableSourceScan(table=[[default_catalog,
    # default_database, orders, filter=[=(status, _UTF-16LE'paid':VARCHAR(2147483647) ...)],
    # project=[c, amount, status], metadata=[]]], fields=[c, amount, status])
    planned = job(FILTERED)
    assert (
        "TableSourceScan(table=[[default_catalog, default_database, orders, "
        "filter=[=(status, 'paid')], project=[c, amount, status], metadata=[]]], "
        "fields=[c, amount, status], changelogMode=[I])"
    ) in planned.explain()
    (scan,) = scans_of(planned.plan)
    assert scan.project == ("c", "amount", "status")
    assert scan.prefilter == PreFilter((Check("status", "=", "paid"),))


def test_several_pushed_conjuncts_print_as_flinks_and() -> None:
    text = job(FILTERED.replace("'paid'", "'paid' AND note IS NOT NULL")).explain()
    assert "filter=[and(=(status, 'paid'), IS NOT NULL(note))]" in text


def test_a_fused_calc_is_named_on_its_operator_and_the_runtime_follows_the_plan(
    tmp_path,
) -> None:
    plan = job(PLAIN).plan
    assert "fusedCalc=[input]" in job(PLAIN).explain()
    agg = next(n for n in nodes_of(plan).values() if type(n) is P.GroupAggregate)
    calc = agg.inputs[0]
    assert isinstance(calc, P.Calc) and (agg.fused_calc, calc.fused_into) == (
        calc.node_id,
        agg.node_id,
    )
    with StateBackend(tmp_path / "s") as backend:
        assert isinstance(Graph(plan, backend).ops[calc.node_id], PassThrough)
        # without the recorded fusion the runtime runs the Calc on its own: it decides nothing
        unfused = rebuild(
            plan.sinks, {agg.node_id: {"fused_calc": None}, calc.node_id: {"fused_into": None}}
        )
        graph = Graph(replace(plan, sinks=unfused), backend)
        assert not isinstance(graph.ops[calc.node_id], PassThrough)


def test_the_fingerprint_covers_every_recorded_decision() -> None:
    plan = job(FILTERED).plan
    (scan,) = scans_of(plan)
    calc = next(n for n in nodes_of(plan).values() if type(n) is P.Calc)
    base = plan_fingerprint(plan, False)
    changed = [
        {scan.node_id: {"project": ("c", "amount", "status", "note")}},
        {scan.node_id: {"prefilter": None}},
        {calc.node_id: {"fused_into": 99}},
    ]
    for change in changed:
        other = replace(plan, sinks=rebuild(plan.sinks, change))
        assert plan_fingerprint(other, False) != base, change
    assert plan_fingerprint(plan, True) != base  # TTL state is another layout
    assert plan.fingerprint == base


def test_the_fingerprint_does_not_depend_on_where_the_sql_wrote_an_expression() -> None:
    """A SET line above the job (a new checkpoint interval) moves every expression's SQL
    position, which errors name; the state the plan keeps is the same, so is its name."""
    shifted = plan_job("SET 'execution.checkpointing.interval' = '10 ms';\n\n"
                       + ORDERS.format(extra="") + FILTERED).plan  # fmt: skip
    plan = job(FILTERED).plan
    conditions = [next(n for n in nodes_of(p).values() if type(n) is P.Calc).condition
                  for p in (plan, shifted)]  # fmt: skip
    assert conditions[0].pos != conditions[1].pos  # the positions differ
    assert shifted.fingerprint == plan.fingerprint


def test_the_fingerprint_covers_the_tables_identity_not_credentials_or_servers() -> None:
    base = job(PLAIN).plan.fingerprint
    assert job(PLAIN, ", 'json.timestamp-format.standard' = 'ISO-8601'").plan.fingerprint != base
    assert job(PLAIN, ", 'json.ignore-parse-errors' = 'true'").plan.fingerprint == base
    moved = ORDERS.format(extra="").replace("/tmp/orders.json", "/tmp/other.json")
    assert plan_job(moved + PLAIN).plan.fingerprint != base


def test_the_fingerprint_is_the_same_in_every_process() -> None:
    """IN lists are frozensets of strings, ordered by the process's hash seed."""
    insert = FILTERED.replace("= 'paid'", "IN ('paid', 'new', 'open', 'held', 'late')")
    code = (
        "from deltaflow.processor.planner.api import plan_job; import sys; "
        "print(plan_job(sys.stdin.read()).plan.fingerprint)"
    )
    prints = set()
    for seed in ("1", "2", "3"):
        done = subprocess.run(
            [sys.executable, "-c", code],
            input=ORDERS.format(extra="") + insert,
            capture_output=True,
            text=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
            check=True,
        )
        prints.add(done.stdout.strip())
    assert prints == {job(insert).plan.fingerprint}


def test_a_checkpoint_of_the_earlier_fingerprint_scheme_is_refused_with_its_reason(
    tmp_path,
) -> None:
    plan = job(PLAIN).plan
    with StateBackend(tmp_path / "old") as backend:
        # as an earlier deltaflow left it: a fingerprint of the EXPLAIN text, a checkpoint
        backend.commit({"plan.fingerprint": "0123456789abcdef", EPOCH_KEY: 3})
        with pytest.raises(StateError, match="written by an earlier deltaflow") as info:
            bind_plan(backend, plan, "job o.sql")
        assert "--from earliest" in str(info.value)
    with StateBackend(tmp_path / "fresh") as backend:
        # no checkpoint yet: the directory takes the plan, and then refuses another one
        backend.commit({"plan.fingerprint": "0123456789abcdef"})
        bind_plan(backend, plan, "job o.sql")
        assert backend.meta(SCHEME_KEY) == SCHEME
        backend.commit({EPOCH_KEY: 1})
        bind_plan(backend, plan, "job o.sql")
        with pytest.raises(StateError, match="belongs to a different job or plan"):
            bind_plan(backend, job(FILTERED).plan, "job o.sql")


def test_rules_rebuild_shared_scans_once_and_leave_their_input_as_it_was() -> None:
    two = (
        ORDERS.format(extra="")
        + "CREATE TABLE p (n BIGINT) WITH ('connector' = 'print');\n"
        + "EXECUTE STATEMENT SET BEGIN\n"
        + FILTERED
        + "\nINSERT INTO p SELECT id FROM orders;\nEND;"
    )
    plan = plan_job(two).plan
    (scan,) = scans_of(plan)  # one scan read by both INSERTs
    assert scan.project == ("id", "c", "amount", "status")  # what both read
    assert scan.prefilter is None  # the second INSERT reads every row
    bare = rebuild(plan.sinks, {scan.node_id: {"project": None}})
    again = apply_physical_rules(bare, plan.settings)
    scans = {id(n) for n in index(again)[0].values() if isinstance(n, P.TableSourceScan)}
    assert len(scans) == 1 and again == plan.sinks
    assert scans_of(replace(plan, sinks=bare))[0].project is None  # the input is unchanged
    with pytest.raises(AttributeError):  # frozen: no rule can change a node in place
        scan.project = None  # type: ignore[misc]
