"""LATERAL TABLE over Python table functions. Expected changelogs are Apache Flink 2.3's
(PyFlink 2.3.0, the same functions over the same Debezium changelog, parallelism 1)."""

from __future__ import annotations

import pytest
import udtf_funcs

from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.errors import DeltaflowError, SqlError
from deltaflow.formats.printing import row_printer
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.graph import Graph

FUNCTIONS = "".join(
    f"CREATE TEMPORARY FUNCTION {n} AS 'udtf_funcs.{n}' LANGUAGE PYTHON;\n"
    for n in ("split_words", "upto", "pairs", "broken", "Counted")
)
SRC = FUNCTIONS + (
    "CREATE TABLE src (id INT, s STRING) WITH ('connector' = 'kafka', 'topic' = 'src', "
    "'format' = 'debezium-json');\n"
)
# The Debezium events Flink read: c(1, 'a bb'), c(2, 'ccc'), u(1 -> 'x yy zzz'), c(3, ''), d(2)
EVENTS = [
    (RowKind.INSERT, (1, "a bb")),
    (RowKind.INSERT, (2, "ccc")),
    (RowKind.UPDATE_BEFORE, (1, "a bb")),
    (RowKind.UPDATE_AFTER, (1, "x yy zzz")),
    (RowKind.INSERT, (3, "")),
    (RowKind.DELETE, (2, "ccc")),
]


def run(select: str, sink_columns: str) -> tuple[list[str], P.Sink]:
    sql = (
        SRC
        + f"CREATE TABLE o ({sink_columns}) WITH ('connector' = 'print');\nINSERT INTO o {select};"
    )
    job = plan_job(sql)
    sink = job.plan.sinks[0]
    scan = next(n for n in _nodes(sink) if isinstance(n, P.TableSourceScan))
    graph = Graph(job.plan, None, RuntimeContext())
    batch = Batch([k for k, _ in EVENTS], [r for _, r in EVENTS])
    out = graph.push(scan.node_id, batch)[sink.node_id]
    printer = row_printer(sink.types)
    return [printer(k, r) for k, r in zip(out.kinds, out.rows, strict=True)], sink


def _nodes(node: P.Node) -> list[P.Node]:
    return [node, *(n for c in node.inputs for n in _nodes(c))]


FLINK_INNER = [
    "+I[1, a, 1]", "+I[1, bb, 2]", "+I[2, ccc, 3]", "-U[1, a, 1]", "-U[1, bb, 2]",
    "+U[1, x, 1]", "+U[1, yy, 2]", "+U[1, zzz, 3]", "-D[2, ccc, 3]",
]  # fmt: skip


@pytest.mark.parametrize(
    "from_",
    [
        "src, LATERAL TABLE(split_words(s)) AS T(w, n)",
        "src CROSS JOIN LATERAL TABLE(split_words(s)) AS T(w, n)",
        "src JOIN LATERAL TABLE(split_words(s)) AS T(w, n) ON TRUE",
    ],
)
def test_inner_correlate_emits_each_row_with_the_input_kind(from_: str) -> None:
    got, _ = run(f"SELECT id, w, n FROM {from_}", "id INT, w STRING, n INT")
    assert got == FLINK_INNER


def test_left_correlate_keeps_a_row_the_function_yields_nothing_for() -> None:
    got, _ = run(
        "SELECT id, w, n FROM src LEFT JOIN LATERAL TABLE(split_words(s)) AS T(w, n) ON TRUE",
        "id INT, w STRING, n INT",
    )
    # Flink 2.3 prints the NULL row of id 3 as +U (its Python operator reuses the kind of the
    # row emitted before); the input row is an insert, so deltaflow emits +I.
    assert got == [*FLINK_INNER[:8], "+I[3, null, null]", FLINK_INNER[8]]


def test_declared_names_and_an_atomic_result() -> None:
    got, sink = run(
        "SELECT * FROM src, LATERAL TABLE(split_words(s))", "a INT, b STRING, c STRING, d INT"
    )
    assert sink.inputs[0].names == ["id", "s", "f0", "f1"]
    assert got[:3] == ["+I[1, a bb, a, 1]", "+I[1, a bb, bb, 2]", "+I[2, ccc, ccc, 3]"]
    got, sink = run("SELECT * FROM src, LATERAL TABLE(upto(id))", "a INT, b STRING, c INT")
    assert sink.inputs[0].names == ["id", "s", "EXPR$0"]
    assert got == [
        "+I[1, a bb, 0]", "+I[2, ccc, 0]", "+I[2, ccc, 1]", "-U[1, a bb, 0]", "+U[1, x yy zzz, 0]",
        "+I[3, , 0]", "+I[3, , 1]", "+I[3, , 2]", "-D[2, ccc, 0]", "-D[2, ccc, 1]",
    ]  # fmt: skip


def test_row_result_type_names_the_columns_and_alias_maps_by_position() -> None:
    _, sink = run("SELECT * FROM src, LATERAL TABLE(pairs(s))", "a INT, b STRING, c STRING, d INT")
    assert sink.inputs[0].names == ["id", "s", "word", "cnt"]
    # the alias renames by position, not by name: T(cnt, word) gives word's values to cnt
    got, _ = run(
        "SELECT id, cnt FROM src, LATERAL TABLE(pairs(s)) AS T(cnt, word)", "id INT, cnt STRING"
    )
    assert got[:2] == ["+I[1, a bb]", "+I[2, ccc]"]


def test_inner_join_condition_filters_the_function_rows() -> None:
    got, _ = run(
        "SELECT id, w FROM src JOIN LATERAL TABLE(split_words(s)) AS T(w, n) ON n > 1",
        "id INT, w STRING",
    )
    assert got == ["+I[1, bb]", "+I[2, ccc]", "-U[1, bb]", "+U[1, yy]", "+U[1, zzz]", "-D[2, ccc]"]


def test_explain_prints_flinks_python_correlate() -> None:
    job = plan_job(
        SRC
        + "EXPLAIN SELECT id, w, n FROM src LEFT JOIN LATERAL TABLE(split_words(s)) AS T(w, n) ON TRUE;"
    )
    text = job.explains[0]
    # Flink 2.3: PythonCorrelate(invocation=[split_words($1)], correlate=[table(split_words(s))],
    # select=[id,s,f0,f1], rowType=[RecordType(INTEGER id, ...)], joinType=[LEFT]) under
    # Calc(select=[id, f0 AS w, f1 AS n]); deltaflow prints function names upper-case and the
    # row type in Flink SQL type names (INT, STRING) rather than Calcite's.
    line = next(ln for ln in text.splitlines() if "PythonCorrelate" in ln).lower()
    assert (
        "pythoncorrelate(invocation=[split_words($1)], correlate=[table(split_words(s))], " in line
    )
    assert "select=[id,s,f0,f1]" in line and "joinType=[LEFT]".lower() in line
    assert text.startswith("Calc(select=[id, f0 AS w, f1 AS n]")


def test_alias_count_mismatch_is_a_sql_error_with_position() -> None:
    sql = SRC + "CREATE TABLE o (id INT, w STRING) WITH ('connector' = 'print');\n"
    with pytest.raises(
        SqlError, match=r"T names 1 columns but the table function returns 2"
    ) as err:
        plan_job(
            sql + "INSERT INTO o SELECT id, w\nFROM src, LATERAL TABLE(split_words(s)) AS T(w);"
        )
    assert (err.value.line, err.value.col) == (9, 44)  # the alias T(w) on the FROM line


def test_left_join_needs_on_true_and_the_function_must_exist() -> None:
    sql = SRC + "CREATE TABLE o (id INT, w STRING) WITH ('connector' = 'print');\n"
    with pytest.raises(SqlError, match="takes only ON TRUE"):
        plan_job(
            sql
            + "INSERT INTO o SELECT id, w FROM src LEFT JOIN LATERAL TABLE(split_words(s)) AS T(w, n) ON n > 1;"
        )
    with pytest.raises(SqlError, match="no table function NOPE"):
        plan_job(sql + "INSERT INTO o SELECT id, w FROM src, LATERAL TABLE(nope(s)) AS T(w);")


def test_a_row_of_the_wrong_width_is_a_clear_error() -> None:
    with pytest.raises(DeltaflowError, match="table function BROKEN yielded"):
        run("SELECT id, w FROM src, LATERAL TABLE(broken(s)) AS T(w, n)", "id INT, w STRING")


def test_a_function_class_is_instantiated_once_per_operator() -> None:
    before = udtf_funcs.Counted.instances
    got, _ = run("SELECT id, v FROM src, LATERAL TABLE(Counted(id)) AS T(v)", "id INT, v INT")
    assert udtf_funcs.Counted.instances == before + 1
    assert got == ["+I[1, 1]", "+I[2, 2]", "-U[1, 1]", "+U[1, 1]", "+I[3, 3]", "-D[2, 2]"]


def test_a_pyflink_style_wrapper_is_read_through_its_private_attributes() -> None:
    from deltaflow.processor.planner.correlate import udtf_signature

    columns, deterministic = udtf_signature("WRAPPED", "udtf_funcs.wrapped")
    assert [(n, t.sql()) for n, t in columns] == [("EXPR$0", "STRING")] and not deterministic
    sql = SRC.replace("'udtf_funcs.Counted' LANGUAGE PYTHON;\n", "'udtf_funcs.Counted' LANGUAGE PYTHON;\n"
        "CREATE TEMPORARY FUNCTION wrapped AS 'udtf_funcs.wrapped' LANGUAGE PYTHON;\n")  # fmt: skip
    job = plan_job(sql + "CREATE TABLE o (id INT, c STRING) WITH ('connector' = 'print');\n"
                   "INSERT INTO o SELECT id, c FROM src, LATERAL TABLE(wrapped(s)) AS T(c);")  # fmt: skip
    graph = Graph(job.plan, None, RuntimeContext())
    scan = next(n for n in _nodes(job.plan.sinks[0]) if isinstance(n, P.TableSourceScan))
    out = graph.push(scan.node_id, Batch([RowKind.INSERT], [(1, "xyz")]))
    assert out[job.plan.sinks[0].node_id].rows == [(1, "x"), (1, "y")]
