"""State TTL (``table.exec.state.ttl``): Flink's OnCreateAndWrite / NeverReturnExpired TTL over
real LMDB state, with an injected processing-time clock."""

from __future__ import annotations

from rt_helpers import parse_changelog, show, types

from deltaflow.formats.changelog import Batch
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.graph import Graph
from deltaflow.processor.runtime.ttl import TtlBackend

TTL = 1000


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def test_setting_is_read_in_flink_duration_syntax() -> None:
    assert RuntimeContext.from_settings({"table.exec.state.ttl": "1 h"}).state_ttl_ms == 3_600_000
    assert RuntimeContext.from_settings({"table.exec.state.ttl": "500 ms"}).state_ttl_ms == 500
    assert RuntimeContext.from_settings({"table.exec.state.ttl": "2 d"}).state_ttl_ms == 172_800_000
    assert RuntimeContext.from_settings({}).state_ttl_ms == 0


def test_a_value_expires_ttl_after_its_last_write_and_reads_do_not_extend_it(backend) -> None:
    clock = Clock()
    table = TtlBackend(backend, TTL, clock).table("t")
    table.put(("a",), [1, 2])
    backend.commit()
    clock.now = TTL - 1
    assert table.get(("a",)) == [1, 2]  # a read does not refresh the write time
    clock.now = TTL
    assert table.get_many([("a",), ("b",)]) == [None, None]
    backend.commit()
    assert backend.table("t").items() == []  # the expired read deleted it
    table.put(("a",), "x")
    clock.now = 2 * TTL - 1
    table.put(("a",), "y")  # a write restarts the TTL
    clock.now = 3 * TTL - 2
    assert table.get(("a",)) == "y"


def test_sweep_deletes_expired_entries_a_bounded_number_at_a_time(backend) -> None:
    clock = Clock()
    ttl = TtlBackend(backend, TTL, clock)
    table = ttl.table("t")
    for i in range(5):
        table.put((i,), i)
    clock.now = 600
    table.put((5,), 5)
    backend.commit()
    clock.now = TTL
    assert table.sweep(backend, limit=2) == 2  # looks at keys 0 and 1 only
    backend.commit()
    assert [k for k, _ in backend.table("t").items()] == [(2,), (3,), (4,), (5,)]
    assert ttl.sweep(limit=10) == 3  # resumes at key 2; key 5 is not expired yet
    backend.commit()
    assert [k for k, _ in backend.table("t").items()] == [(5,)]


SRC = (
    "CREATE TABLE t (k STRING, v INT) WITH ('connector' = 'kafka', 'topic' = 't', "
    "'format' = 'debezium-json');\n"
)


def graph_of(sql: str, backend, clock: Clock) -> tuple[Graph, P.Sink, dict[str, int]]:
    job = plan_job(sql)
    sink = job.plan.sinks[0]
    scans: dict[str, int] = {}
    stack: list[P.Node] = [sink]
    while stack:
        node = stack.pop()
        if isinstance(node, P.TableSourceScan):
            scans[node.table.rsplit(".", 1)[1]] = node.node_id
        stack += node.inputs
    ctx = RuntimeContext(state_ttl_ms=TTL, clock=clock)
    return Graph(job.plan, backend, ctx), sink, scans


def test_group_aggregate_emits_unchanged_results_and_forgets_idle_groups(backend) -> None:
    sql = SRC + (
        "CREATE TABLE o (k STRING, m INT) WITH ('connector' = 'print');\n"
        "INSERT INTO o SELECT k, MAX(v) FROM t GROUP BY k;"
    )
    clock = Clock()
    graph, sink, scans = graph_of(sql, backend, clock)
    T = types("STRING", "INT")

    def push(text: str) -> list[str]:
        out = graph.push(scans["t"], parse_changelog(text, T)).get(sink.node_id, Batch())
        backend.commit()
        return show(out, sink.types)

    assert push("+I[a, 5]") == ["+I[a, 5]"]
    # Flink's GroupAggFunction with state TTL emits a result even when it did not change
    assert push("+I[a, 3]") == ["-U[a, 5]", "+U[a, 5]"]
    clock.now = 1 + TTL  # the last write was at 0
    assert push("-D[a, 5]") == []  # the group expired: its retraction is ignored
    assert push("+I[a, 2]") == ["+I[a, 2]"]  # and the key starts over


def test_join_forgets_a_side_not_written_for_the_ttl(backend) -> None:
    sql = SRC + (
        "CREATE TABLE u (k STRING, w INT) WITH ('connector' = 'kafka', 'topic' = 'u', "
        "'format' = 'debezium-json');\n"
        "CREATE TABLE o (k STRING, v INT, w INT) WITH ('connector' = 'print');\n"
        "INSERT INTO o SELECT t.k, v, w FROM t JOIN u ON t.k = u.k;"
    )
    clock = Clock()
    graph, sink, scans = graph_of(sql, backend, clock)
    T = types("STRING", "INT")
    assert sink.node_id not in graph.push(scans["t"], parse_changelog("+I[a, 1]", T))
    clock.now = TTL - 1
    graph.push(scans["t"], parse_changelog("+I[b, 3]", T))
    backend.commit()
    clock.now = TTL
    out = graph.push(scans["u"], parse_changelog("+I[a, 10]\n+I[b, 20]", T)).get(
        sink.node_id, Batch()
    )
    assert show(out, sink.types) == ["+I[b, 3, 20]"]  # a's row was written at 0: expired


def test_flush_sweeps_expired_state_of_keys_never_read_again(backend) -> None:
    sql = SRC + (
        "CREATE TABLE o (k STRING, c BIGINT) WITH ('connector' = 'print');\n"
        "INSERT INTO o SELECT k, COUNT(*) FROM t GROUP BY k;"
    )
    clock = Clock()
    graph, sink, scans = graph_of(sql, backend, clock)
    graph.push(scans["t"], parse_changelog("+I[a, 1]\n+I[b, 1]", types("STRING", "INT")))
    backend.commit()
    agg = sink.inputs[0]
    while not isinstance(agg, P.GroupAggregate):
        agg = agg.inputs[0]
    name = f"{agg.node_id}:GroupAggregate:acc"
    assert len(backend.table(name).items()) == 2
    clock.now = TTL
    graph.flush()
    backend.commit()
    assert backend.table(name).items() == []


def test_changelog_normalize_treats_an_expired_key_as_new(backend) -> None:
    sql = (
        "CREATE TABLE u (k STRING, v INT, PRIMARY KEY (k) NOT ENFORCED) WITH ("
        "'connector' = 'upsert-kafka', 'topic' = 'u', 'key.format' = 'json', 'value.format' = 'json');\n"
        "CREATE TABLE o (k STRING, v INT) WITH ('connector' = 'print');\n"
        "INSERT INTO o SELECT k, v FROM u;"
    )
    clock = Clock()
    graph, sink, scans = graph_of(sql, backend, clock)
    assert any(isinstance(n, P.ChangelogNormalize) for n in graph.nodes.values())
    T = types("STRING", "INT")

    def push(text: str) -> list[str]:
        out = graph.push(scans["u"], parse_changelog(text, T)).get(sink.node_id, Batch())
        backend.commit()
        return show(out, sink.types)

    assert push("+U[a, 1]\n+U[b, 1]") == ["+I[a, 1]", "+I[b, 1]"]
    clock.now = TTL - 1
    assert push("+U[b, 2]") == ["-U[b, 1]", "+U[b, 2]"]
    clock.now = TTL
    # a's last row expired: its update is an insert and its delete finds nothing to delete
    assert push("+U[a, 2]\n-D[b, null]") == ["+I[a, 2]", "-D[b, 2]"]
    clock.now = 2 * TTL
    assert push("-D[a, null]") == []


def test_keep_first_deduplication_emits_a_key_again_once_its_state_expired(backend) -> None:
    sql = (
        "CREATE TABLE e (k STRING, v INT, pt AS PROCTIME()) WITH ('connector' = 'kafka', "
        "'topic' = 'e', 'format' = 'json');\n"
        "CREATE TABLE o (k STRING, v INT) WITH ('connector' = 'print');\n"
        "INSERT INTO o SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY pt) "
        "AS rn FROM e) WHERE rn = 1;"
    )
    clock = Clock()
    graph, sink, scans = graph_of(sql, backend, clock)
    assert any(isinstance(n, P.Deduplicate | P.Rank) for n in graph.nodes.values())
    T = types("STRING", "INT")

    def push(text: str) -> list[str]:
        out = graph.push(scans["e"], parse_changelog(text, T)).get(sink.node_id, Batch())
        backend.commit()
        return show(out, sink.types)

    assert push("+I[a, 1]\n+I[a, 2]") == ["+I[a, 1]"]
    clock.now = TTL - 1
    assert push("+I[a, 3]") == []  # keep-first writes nothing: the TTL runs from the first row
    clock.now = TTL
    assert push("+I[a, 4]") == ["+I[a, 4]"]  # a is new again, as in Flink with state TTL


def test_state_with_and_without_ttl_belongs_to_different_plans() -> None:
    sql = SRC + (
        "CREATE TABLE o (k STRING, c BIGINT) WITH ('connector' = 'print');\n"
        "INSERT INTO o SELECT k, COUNT(*) FROM t GROUP BY k;"
    )
    plain = plan_job(sql).plan.fingerprint
    hour = plan_job("SET 'table.exec.state.ttl' = '1 h';\n" + sql).plan.fingerprint
    day = plan_job("SET 'table.exec.state.ttl' = '1 d';\n" + sql).plan.fingerprint
    assert plain != hour == day  # the values' layout differs; the duration may change
