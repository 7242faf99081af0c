"""ROW field access, ARRAY/MAP access and the constructors: how dotted names resolve, the
errors a user gets, and that a field read is compiled into the Calc's generated code."""

from __future__ import annotations

import pytest

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.codegen import Gen
from deltaflow.processor.exprs.compile import compile_calc
from deltaflow.processor.exprs.nodes import Call, InputRef
from deltaflow.processor.planner.api import plan_job

SOURCE = (
    "CREATE TABLE t (id INT, r ROW<a INT, s ROW<b STRING, c INT>>, arr ARRAY<INT>, "
    "m MAP<STRING, INT>) WITH ('connector' = 'datagen');\n"
    "CREATE TABLE r (a INT) WITH ('connector' = 'datagen');\n"
)


def explain(select: str, sink: str) -> str:
    sql = (
        SOURCE
        + f"CREATE TABLE o ({sink}) WITH ('connector' = 'blackhole');\nINSERT INTO o {select};"
    )
    return plan_job(sql).explain()


def error(select: str, sink: str = "x INT") -> str:
    with pytest.raises(SqlError) as info:
        explain(select, sink)
    return str(info.value)


def test_a_dotted_name_reads_the_longest_column_prefix_then_fields():
    text = explain("SELECT r.a, t.r.s.b, r.s.c, (r).s.c FROM t", "a INT, b STRING, c INT, d INT")
    assert "select=[r.a AS a, r.s.b AS b, r.s.c AS c, r.s.c AS " in text


def test_a_table_alias_wins_over_a_row_column_of_the_same_name():
    # Calcite's order: r.a is column a of table r, not field a of t's ROW column r
    text = explain("SELECT r.a FROM r JOIN t ON r.a = t.id", "a INT")
    assert "r.a" not in text and "select=[a]" in text


def test_unknown_fields_and_fields_of_non_rows_are_named_with_their_position():
    assert "line 4, column 24: Unknown field 'z' in ROW<`a` INT" in error("SELECT r.z FROM t")
    assert "its fields are a, s" in error("SELECT r.z FROM t")
    assert "cannot read field 'x' of a INT value" in error("SELECT id.x FROM t")
    assert "[] applies to an ARRAY or a MAP, not to ROW" in error("SELECT r[1] FROM t")
    assert "an ARRAY is indexed by an integer, not" in error("SELECT arr['a'] FROM t")


def test_access_types_follow_flink():
    text = explain(
        "SELECT arr[1], m['k'], CARDINALITY(arr), ELEMENT(arr), (id, r.a) FROM t",
        "a INT, b INT, c INT, d INT, e ROW<x INT, y INT>",
    )
    assert "ITEM(arr, 1)" in text and "CARDINALITY(arr)" in text


def test_a_field_read_is_a_tuple_index_in_the_generated_calc():
    row = parse_type("ROW<a INT, s ROW<b STRING>>")
    ref = InputRef(row, 0)
    inner = Call(parse_type("ROW<b STRING>"), "FIELD", (ref, _int(1)))
    field = Call(parse_type("STRING"), "FIELD", (inner, _int(0)))
    assert "[1]" in Gen("UTC").expr(field) and "[0]" in Gen("UTC").expr(field)
    calc = compile_calc([field], None)
    rows = [((1, ("x",)),), ((2, None),), (None,)]
    assert calc([0, 0, 0], rows)[1] == [("x",), (None,), (None,)]


def test_array_access_is_one_based_and_below_one_is_flinks_error():
    from deltaflow.processor.exprs.errors import EvalError
    from deltaflow.processor.exprs.gen_nested import array_item

    assert array_item([5, 6], 1) == 5 and array_item([5, 6], 3) is None
    with pytest.raises(EvalError, match="index starting at 1 but was 0"):
        array_item([5, 6], 0)


def _int(v: int):
    from deltaflow.processor.exprs.nodes import Literal

    return Literal(parse_type("INT NOT NULL"), v)


def test_collections_group_by_content_but_are_refused_as_join_keys():
    # a GroupAggregate groups ARRAY / MAP values by content (runtime/collection_keys.py)
    explain("SELECT arr, COUNT(*) FROM t GROUP BY arr", "a ARRAY<INT>, n BIGINT")
    explain("SELECT DISTINCT m FROM t", "m MAP<STRING, INT>")
    assert "join key" in error("SELECT t.id FROM t JOIN t AS u ON t.arr = u.arr", "id INT")
    # an element, a field, or a ROW of plain fields is a fine key
    explain(
        "SELECT arr[1], r.s, COUNT(*) FROM t GROUP BY arr[1], r.s",
        "a INT, s ROW<b STRING, c INT>, n BIGINT",
    )


def test_row_types_declared_with_parentheses_and_backquoted_field_names():
    sql = (
        "CREATE TABLE p (r ROW(`dateTime` TIMESTAMP(3), n INT), q ROW<a ARRAY<ROW<b INT>>>) "
        "WITH ('connector' = 'datagen');\n"
        "CREATE TABLE o (ts TIMESTAMP(3), b INT) WITH ('connector' = 'blackhole');\n"
        "INSERT INTO o SELECT r.`dateTime`, q.a[1].b FROM p;"
    )
    assert "select=[r.dateTime AS dateTime, ITEM(q.a, 1).b AS " in plan_job(sql).explain()


def test_a_self_join_of_a_table_with_computed_columns_filters_each_side_by_its_own_where():
    # the two scans share the table's computed-column Calc; each side gets only its filter
    sql = (
        "CREATE TABLE d (e INT, k BIGINT, ts0 TIMESTAMP(3), ts AS ts0) WITH ('connector' = 'datagen');\n"
        "CREATE TABLE o (k BIGINT) WITH ('connector' = 'blackhole');\n"
        "INSERT INTO o SELECT a.k FROM d AS a JOIN d AS p ON a.k = p.k WHERE a.e = 1 AND p.e = 0;"
    )
    text = plan_job(sql).explain()
    assert "where=[=(e, 1)]" in text and "where=[=(e, 0)]" in text and "AND(" not in text
