"""Planned jobs run by the streaming runtime on real LMDB state: the planner's physical plan is
what the operators expect. Expected changelogs follow Flink's documented semantics."""

from __future__ import annotations

import pytest

from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.printing import row_printer
from deltaflow.formats.types import DataType
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph
from deltaflow.state.backend import StateBackend

LOGS = """CREATE TABLE logs (user_id BIGINT, msg STRING, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'datagen');
"""


@pytest.fixture
def backend(tmp_path):
    b = StateBackend(tmp_path / "state")
    yield b
    b.close()


def scans(node: P.Node, out: dict[str, P.TableSourceScan]) -> dict[str, P.TableSourceScan]:
    if isinstance(node, P.TableSourceScan):
        out[node.table.rsplit(".", 1)[-1]] = node
    for child in node.inputs:
        scans(child, out)
    return out


def run(sql: str, backend: StateBackend, table: str, rows: list[tuple]) -> list[str]:
    """Push ``rows`` (inserts) into ``table``, end the input, print what the one sink receives."""
    plan = plan_job(sql).plan
    graph = Graph(plan, backend)
    (sink,) = plan.sinks
    scan = scans(sink, {})[table]
    batch = Batch()
    for row in rows:
        batch.append(RowKind.INSERT, row)
    printer = row_printer(sink.types)
    out = []
    for result in (graph.push(scan.node_id, batch), graph.finish()):
        got = result.get(sink.node_id)
        if got is not None:
            out += [printer(k, r) for k, r in zip(got.kinds, got.rows, strict=True)]
    return out


def ts(seconds: int):
    import datetime as dt

    return dt.datetime(2024, 1, 1) + dt.timedelta(seconds=seconds)


def test_count_per_user_emits_update_pairs(backend) -> None:
    sql = LOGS + (
        "CREATE TABLE r (user_id BIGINT, cnt BIGINT) WITH ('connector' = 'print');\n"
        "INSERT INTO r SELECT user_id, COUNT(*) AS cnt FROM logs GROUP BY user_id;"
    )
    rows = [(1, "a", ts(1)), (1, "b", ts(2)), (2, "c", ts(3))]
    assert run(sql, backend, "logs", rows) == ["+I[1, 1]", "-U[1, 1]", "+U[1, 2]", "+I[2, 1]"]


def test_tumbling_window_fires_once_per_window_at_end_of_input(backend) -> None:
    sql = LOGS + (
        "CREATE TABLE r (ws TIMESTAMP(3), we TIMESTAMP(3), cnt BIGINT) WITH ('connector' = 'print');\n"
        "INSERT INTO r SELECT window_start, window_end, COUNT(*) FROM "
        "TABLE(TUMBLE(TABLE logs, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;"
    )
    rows = [(1, "a", ts(1)), (1, "b", ts(2)), (2, "c", ts(63))]
    assert run(sql, backend, "logs", rows) == [
        "+I[2024-01-01T00:00, 2024-01-01T00:01, 2]",
        "+I[2024-01-01T00:01, 2024-01-01T00:02, 1]",
    ]


def test_first_row_per_key_on_event_time(backend) -> None:
    sql = LOGS + (
        "CREATE TABLE r (user_id BIGINT, msg STRING) WITH ('connector' = 'print');\n"
        "INSERT INTO r SELECT user_id, msg FROM (SELECT user_id, msg, ROW_NUMBER() OVER "
        "(PARTITION BY user_id ORDER BY ts ASC) AS rn FROM logs) WHERE rn = 1;"
    )
    rows = [(1, "a", ts(1)), (1, "b", ts(2)), (2, "c", ts(3))]
    assert run(sql, backend, "logs", rows) == ["+I[1, a]", "+I[2, c]"]


def test_top_1_with_rank_number_updates_the_rank(backend) -> None:
    sql = LOGS + (
        "CREATE TABLE r (user_id BIGINT, msg STRING, rn BIGINT) WITH ('connector' = 'print');\n"
        "INSERT INTO r SELECT user_id, msg, rn FROM (SELECT user_id, msg, ROW_NUMBER() OVER "
        "(PARTITION BY user_id ORDER BY msg DESC) AS rn FROM logs) WHERE rn <= 1;"
    )
    rows = [(1, "a", ts(1)), (1, "b", ts(2))]
    assert run(sql, backend, "logs", rows) == ["+I[1, a, 1]", "-U[1, a, 1]", "+U[1, b, 1]"]


def test_watermark_on_a_computed_rowtime_column(backend) -> None:
    sql = (
        "CREATE TABLE ev (id BIGINT, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), "
        "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'datagen');\n"
        "CREATE TABLE r (ws TIMESTAMP(3), n BIGINT) WITH ('connector' = 'print');\n"
        "INSERT INTO r SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), "
        "INTERVAL '1' SECOND)) GROUP BY window_start, window_end;"
    )
    plan = plan_job(sql).plan
    scan = scans(plan.sinks[0], {})["ev"]
    assert scan.watermark is not None and scan.watermark.rowtime == -1
    assert run(sql, backend, "ev", [(1, 1000), (2, 1500), (3, 2500)]) == [
        "+I[1970-01-01T00:00:01, 2]",
        "+I[1970-01-01T00:00:02, 1]",
    ]


def test_sink_columns_are_widened_to_the_table_types(backend) -> None:
    sql = LOGS + (
        "CREATE TABLE r (user_id DECIMAL(20, 0), cnt DOUBLE) WITH ('connector' = 'print');\n"
        "INSERT INTO r SELECT user_id, COUNT(*) FROM logs GROUP BY user_id;"
    )
    sink = plan_job(sql).plan.sinks[0]
    assert sink.types == [
        DataType("DECIMAL", precision=20, scale=0),
        DataType("DOUBLE", nullable=False),
    ]
    assert run(sql, backend, "logs", [(7, "a", ts(1))]) == ["+I[7, 1.0]"]
