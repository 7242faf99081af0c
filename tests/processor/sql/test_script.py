"""The Flink SQL front end: statement kinds, positions and error sentences."""

from __future__ import annotations

import pytest

from deltaflow.formats.errors import PlanError, SqlError
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.sql import statements as S
from deltaflow.processor.sql.ddl import CreateTable
from deltaflow.processor.sql.script import parse_script

DDL = """CREATE TABLE src (
  id BIGINT,
  name STRING,
  ts TIMESTAMP(3),
  ts2 AS ts + INTERVAL '1' SECOND,
  op_ts TIMESTAMP_LTZ(3) METADATA FROM 'value.source.timestamp' VIRTUAL,
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
  PRIMARY KEY (id) NOT ENFORCED
) WITH ('connector' = 'kafka', 'topic' = 'src', 'format' = 'debezium-json');
"""


def test_create_table_columns_watermark_key_options() -> None:
    (table,) = parse_script(DDL)
    assert isinstance(table, CreateTable)
    assert [c.name for c in table.columns] == ["id", "name", "ts", "ts2", "op_ts"]
    assert table.columns[3].expr is not None and table.columns[3].type is None
    assert table.columns[4].metadata_key == "value.source.timestamp" and table.columns[4].virtual
    assert table.primary_key == ("id",)
    assert table.watermark is not None and table.watermark[0] == "ts"
    assert table.options == {"connector": "kafka", "topic": "src", "format": "debezium-json"}


def test_statement_kinds_and_statement_sets() -> None:
    sql = (
        DDL
        + """SET 'table.exec.sink.upsert-materialize' = 'NONE';
RESET;
CREATE FUNCTION f AS 'mod.f' LANGUAGE PYTHON;
CREATE VIEW v AS SELECT id FROM src;
BEGIN STATEMENT SET;
INSERT INTO a SELECT 1;
INSERT INTO b SELECT 2;
END;
EXECUTE STATEMENT SET BEGIN INSERT INTO c SELECT 3; END;
EXPLAIN CHANGELOG_MODE INSERT INTO a SELECT 1 ON CONFLICT DO NOTHING;
"""
    )
    kinds = [type(s).__name__ for s in parse_script(sql)]
    assert kinds == ["CreateTable", "SetStatement", "ResetStatement", "CreateFunction", "CreateView",
                     "StatementSet", "StatementSet", "Explain"]  # fmt: skip
    stmts = parse_script(sql)
    assert [i.table for i in stmts[5].inserts] == ["a", "b"]
    explain = stmts[7]
    assert isinstance(explain, S.Explain) and explain.details == ("CHANGELOG_MODE",)
    assert explain.body.on_conflict == "NOTHING"


def test_parse_error_has_line_and_column_of_the_whole_file() -> None:
    with pytest.raises(SqlError) as info:
        parse_script("SET 'a' = 'b';\n\nSELECT (id FROM t;")
    assert (info.value.line, info.value.col) == (3, 12)


def test_primary_key_must_be_not_enforced() -> None:
    with pytest.raises(SqlError, match="NOT ENFORCED"):
        parse_script("CREATE TABLE t (a INT, PRIMARY KEY (a)) WITH ('connector' = 'print')")


def test_unknown_table_and_column_name_the_closest_candidates() -> None:
    with pytest.raises(SqlError, match="did you mean 'src'"):
        plan_job(
            DDL
            + "CREATE TABLE o (id BIGINT) WITH ('connector' = 'print');\nINSERT INTO o SELECT id FROM srcc;"
        )
    with pytest.raises(SqlError, match="did you mean 'name'") as info:
        plan_job(
            DDL
            + "CREATE TABLE o (n STRING) WITH ('connector' = 'print');\nINSERT INTO o SELECT nmae FROM src;"
        )
    assert info.value.line == 11


def test_upsert_kafka_source_is_normalized_and_upsert_sink_drops_update_before() -> None:
    sql = """CREATE TABLE u (id BIGINT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'upsert-kafka', 'topic' = 'u', 'key.format' = 'json', 'value.format' = 'json');
CREATE TABLE o (v BIGINT, n BIGINT, PRIMARY KEY (v) NOT ENFORCED)
  WITH ('connector' = 'upsert-kafka', 'topic' = 'o', 'key.format' = 'json', 'value.format' = 'json');
INSERT INTO o SELECT v, COUNT(*) AS n FROM u GROUP BY v;"""
    text = plan_job(sql).explain()
    assert (
        "GroupAggregate(groupBy=[v], select=[v, COUNT_RETRACT(*) AS n], fusedCalc=[input], "
        "changelogMode=[I,UA,D])"
        in text
    )
    assert "ChangelogNormalize(key=[id], changelogMode=[I,UB,UA,D])" in text
    assert text.splitlines()[-1].endswith("changelogMode=[UA,D])")


def test_metadata_column_of_cdc_source_without_key_fails_with_try_resolve() -> None:
    sql = """SET 'table.optimizer.non-deterministic-update.strategy' = 'TRY_RESOLVE';
CREATE TABLE c (id BIGINT, op_ts TIMESTAMP_LTZ(3) METADATA FROM 'value.source.timestamp' VIRTUAL)
  WITH ('connector' = 'kafka', 'topic' = 'c', 'format' = 'debezium-json');
CREATE TABLE o (id BIGINT, t TIMESTAMP_LTZ(3)) WITH ('connector' = 'print');
INSERT INTO o SELECT id, op_ts FROM c;"""
    with pytest.raises(PlanError, match="The metadata column\\(s\\): 'op_ts' in cdc source"):
        plan_job(sql)


def test_ddl_with_nested_types_comments_and_partitioning() -> None:
    (table,) = parse_script(
        "CREATE TEMPORARY TABLE IF NOT EXISTS t (\n"
        "  tags ARRAY<STRING>, attrs MAP<STRING, INT> COMMENT 'a map',\n"
        "  pos ROW<x DOUBLE, y DOUBLE>, flag AS tags IS NULL,\n"
        "  id INT PRIMARY KEY NOT ENFORCED\n"
        ") COMMENT 'table' PARTITIONED BY (id) WITH ('connector' = 'print')"
    )
    assert isinstance(table, CreateTable)
    assert [c.name for c in table.columns] == ["tags", "attrs", "pos", "flag", "id"]
    assert table.columns[0].type.sql() == "ARRAY<STRING>"
    assert table.columns[1].type.sql() == "MAP<STRING, INT>"
    assert table.columns[2].type.root == "ROW" and len(table.columns[2].type.fields) == 2
    assert table.columns[3].expr is not None
    assert table.primary_key == ("id",)
    assert table.options == {"connector": "print"}


def test_bad_column_type_names_the_column_and_position() -> None:
    with pytest.raises(SqlError, match="column 'b'") as info:
        parse_script("CREATE TABLE t (\n  a INT,\n  b INTEGR\n) WITH ('connector' = 'print')")
    assert (info.value.line, info.value.col) == (3, 5)


def test_explain_plan_for_and_statement_set_body() -> None:
    (stmt,) = parse_script("EXPLAIN PLAN FOR STATEMENT SET BEGIN INSERT INTO a SELECT 1; END;")
    assert isinstance(stmt, S.Explain) and isinstance(stmt.body, S.StatementSet)
    assert stmt.details == ()


def test_execute_insert_is_an_insert() -> None:
    (stmt,) = parse_script("EXECUTE INSERT INTO a SELECT 1")
    assert isinstance(stmt, S.Insert) and stmt.table == "a"
