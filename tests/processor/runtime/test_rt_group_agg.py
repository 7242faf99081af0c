"""GroupAggregate against Flink's own output and the documented changelog rules."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import ALL, NO_UB, fields, lines, parse_changelog, scan, show, types

from deltaflow.formats.changelog import apply_changelog
from deltaflow.formats.types import parse_type
from deltaflow.processor.plan import AggCall, GroupAggregate
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.group_agg import GroupAggOperator

DATA = Path(__file__).parents[2] / "data" / "debezium"
PRODUCTS = types("BIGINT", "STRING", "STRING", "DECIMAL(10, 2)")
AGG_OUT = types("STRING", "DECIMAL(38, 2)", "BIGINT")


def group_agg(input_types, keys, aggs, mode=ALL, node_id=2):
    src = scan(1, input_types)
    out_types = [input_types[k] for k in keys] + [a.type for a in aggs]
    return GroupAggregate(
        node_id=node_id,
        inputs=(src,),
        fields=fields(out_types),
        changelog_mode=mode,
        group_keys=keys,
        aggs=aggs,
    )


def products_agg():
    return group_agg(
        PRODUCTS,
        (1,),
        (
            AggCall("SUM", (3,), parse_type("DECIMAL(38, 2)"), "total_weight"),
            AggCall("COUNT", (), parse_type("BIGINT NOT NULL"), "cnt"),
        ),
    )


@pytest.mark.parametrize(
    "events",
    [
        "debezium-data-schema-exclude.txt",
        "debezium-data-schema-include.txt",
        "debezium-postgres-data-schema-exclude.txt",
        "debezium-postgres-data-schema-include.txt",
        "debezium-postgres-data-replica-identity.txt",
    ],
)
@pytest.mark.parametrize("batch_size", [1, 4, 100])
def test_products_aggregate_matches_flink(backend, ctx, events, batch_size):
    """Flink's decoded changelog fed to SUM/COUNT GROUP BY name gives Flink's printed output."""
    source = parse_changelog((DATA / f"{events}.changelog.txt").read_text(), PRODUCTS)
    expected = lines((DATA / f"{events}.agg.changelog.txt").read_text())
    op = GroupAggOperator(products_agg(), backend, ctx)
    got: list[str] = []
    for start in range(0, len(source), batch_size):
        piece = type(source)(
            source.kinds[start : start + batch_size], source.rows[start : start + batch_size]
        )
        got += show(op.process(piece), AGG_OUT)
        backend.commit({})
    assert got == expected
    final = lines((DATA / f"{events}.agg.final.txt").read_text())
    kinds = [0 if ln[:2] in ("+I", "+U") else 3 for ln in got]
    table = apply_changelog(kinds, [tuple(ln[3:-1].split(", ")) for ln in got])
    assert sorted("+I[" + ", ".join(r) + "]" for r in table) == sorted(final)


def run(node, text, input_types, out_types, ctx=None, backend=None):
    op = GroupAggOperator(node, backend, ctx or RuntimeContext())
    return show(op.process(parse_changelog(text, input_types)), out_types)


T2 = types("STRING", "INT")


def test_group_count_reaches_zero_deletes_and_a_new_row_inserts_again(backend):
    node = group_agg(T2, (0,), (AggCall("COUNT", (), parse_type("BIGINT"), "n"),))
    out = run(node, "+I[a, 1]\n-D[a, 1]\n+I[a, 2]", T2, types("STRING", "BIGINT"), backend=backend)
    assert out == ["+I[a, 1]", "-D[a, 1]", "+I[a, 1]"]


def test_unchanged_result_emits_nothing_and_no_update_before_without_ub(backend):
    node = group_agg(T2, (0,), (AggCall("MAX", (1,), parse_type("INT"), "m"),), mode=NO_UB)
    text = "+I[a, 5]\n+I[a, 3]\n+I[a, 7]\n-D[a, 3]"
    assert run(node, text, T2, T2, backend=backend) == ["+I[a, 5]", "+U[a, 7]"]


def test_retraction_for_unknown_group_is_ignored(backend):
    node = group_agg(T2, (0,), (AggCall("SUM", (1,), parse_type("INT"), "s"),))
    assert run(node, "-D[a, 1]\n+I[b, 2]", T2, T2, backend=backend) == ["+I[b, 2]"]


def test_sum_is_null_when_all_inputs_are_null_and_sum0_is_zero(backend):
    node = group_agg(
        T2,
        (0,),
        (
            AggCall("SUM", (1,), parse_type("INT"), "s"),
            AggCall("SUM0", (1,), parse_type("INT"), "z"),
            AggCall("COUNT", (1,), parse_type("BIGINT"), "c"),
        ),
    )
    out = run(
        node,
        "+I[a, null]\n+I[a, 4]\n-D[a, 4]",
        T2,
        types("STRING", "INT", "INT", "BIGINT"),
        backend=backend,
    )
    assert out == [
        "+I[a, null, 0, 0]",
        "-U[a, null, 0, 0]",
        "+U[a, 4, 4, 1]",
        "-U[a, 4, 4, 1]",
        "+U[a, null, 0, 0]",
    ]


def test_integer_avg_truncates_and_decimal_avg_rounds_half_up(backend):
    t = types("STRING", "INT", "DECIMAL(10, 2)")
    node = group_agg(
        t,
        (0,),
        (
            AggCall("AVG", (1,), parse_type("INT"), "ai"),
            AggCall("AVG", (2,), parse_type("DECIMAL(38, 6)"), "ad"),
        ),
        mode=NO_UB,
    )
    text = "+I[a, -7, 1.00]\n+I[a, 0, 0.00]\n+I[a, 0, 0.00]"
    out = run(node, text, t, types("STRING", "INT", "DECIMAL(38, 6)"), backend=backend)
    # -7 / 2 = -3 (Java truncation), 1.00 / 3 = 0.333333
    assert out == ["+I[a, -7, 1.000000]", "+U[a, -3, 0.500000]", "+U[a, -2, 0.333333]"]


def test_min_max_with_retraction_and_listagg_first_last_value(backend):
    node = group_agg(
        T2,
        (),
        (
            AggCall("MIN", (1,), parse_type("INT"), "mn"),
            AggCall("MAX", (1,), parse_type("INT"), "mx"),
            AggCall("FIRST_VALUE", (1,), parse_type("INT"), "f"),
            AggCall("LAST_VALUE", (1,), parse_type("INT"), "l"),
        ),
        mode=NO_UB,
    )
    text = "+I[a, 3]\n+I[a, 1]\n+I[a, 9]\n-D[a, 1]\n-D[a, 9]"
    out = run(node, text, T2, types("INT", "INT", "INT", "INT"), backend=backend)
    assert out == [
        "+I[3, 3, 3, 3]",
        "+U[1, 3, 3, 1]",
        "+U[1, 9, 3, 9]",
        "+U[3, 9, 3, 9]",
        "+U[3, 3, 3, 3]",
    ]


def test_listagg_default_and_custom_separator_and_count_distinct(backend):
    t = types("STRING", "STRING")
    node = group_agg(
        t,
        (),
        (
            AggCall("LISTAGG", (1,), parse_type("STRING"), "l"),
            AggCall("LISTAGG", (1,), parse_type("STRING"), "l2", params=("|",)),
            AggCall("COUNT", (1,), parse_type("BIGINT"), "d", distinct=True),
        ),
        mode=NO_UB,
    )
    text = "+I[g, x]\n+I[g, y]\n+I[g, x]\n-D[g, x]"
    out = run(node, text, t, types("STRING", "STRING", "BIGINT"), backend=backend)
    assert out == ["+I[x, x, 1]", "+U[x,y, x|y, 2]", "+U[x,y,x, x|y|x, 2]", "+U[y,x, y|x, 2]"]


def test_filter_clause_counts_only_matching_rows(backend):
    t = types("STRING", "INT", "BOOLEAN")
    node = group_agg(
        t, (0,), (AggCall("COUNT", (), parse_type("BIGINT"), "n", filter_arg=2),), mode=NO_UB
    )
    text = "+I[a, 1, false]\n+I[a, 2, true]\n+I[a, 3, null]"
    assert run(node, text, t, types("STRING", "BIGINT"), backend=backend) == [
        "+I[a, 0]",
        "+U[a, 1]",
    ]


def test_mini_batch_folds_an_update_pair_into_one_output_pair(backend):
    node = products_agg()
    events = DATA / "debezium-data-schema-exclude.txt.changelog.txt"
    source = parse_changelog(events.read_text(), PRODUCTS)
    op = GroupAggOperator(node, backend, RuntimeContext(mini_batch=True))
    first = show(op.process(type(source)(source.kinds[:9], source.rows[:9])), AGG_OUT)
    assert first == [
        "+I[scooter, 3.14, 1]",
        "+I[car battery, 8.10, 1]",
        "+I[12-pack drill bits, 0.80, 1]",
        "+I[hammer, 2.63, 3]",
        "+I[rocks, 5.30, 1]",
        "+I[jacket, 0.10, 1]",
        "+I[spare tire, 22.20, 1]",
    ]
    # the hammer -U/+U pair leaves the result unchanged: nothing; rocks moves once
    second = show(op.process(type(source)(source.kinds[9:13], source.rows[9:13])), AGG_OUT)
    assert second == ["-U[rocks, 5.30, 1]", "+U[rocks, 5.10, 1]"]


# -- property: the output changelog describes the aggregate of the input's multiset --

rows_st = st.lists(
    st.tuples(st.sampled_from("abc"), st.one_of(st.none(), st.integers(-5, 5))), max_size=25
)


def consistent_changelog(draw_rows, picks):
    """Add the drawn rows, retracting an existing one whenever a pick says so."""
    kinds, rows, live = [], [], []
    for row, pick in zip(draw_rows, picks, strict=False):
        if pick is not None and live:
            old = live.pop(pick % len(live))
            kinds.append(3 if pick % 2 else 1)
            rows.append(old)
            if pick % 2 == 0:
                kinds.append(2)
                rows.append(row)
                live.append(row)
            continue
        kinds.append(0)
        rows.append(row)
        live.append(row)
    return kinds, rows, live


def expected_aggregate(live):
    groups: dict[str, list] = {}
    for k, v in live:
        groups.setdefault(k, []).append(v)
    out = []
    for k, vs in groups.items():
        nn = [v for v in vs if v is not None]
        out.append((k, len(vs), sum(nn) if nn else None, min(nn) if nn else None, len(set(nn))))
    return sorted(out, key=repr)


@settings(max_examples=60, deadline=None)
@given(
    rows_st,
    st.lists(st.one_of(st.none(), st.integers(0, 50)), max_size=25),
    st.integers(1, 7),
    st.booleans(),
)
def test_output_changelog_equals_recomputed_aggregate(
    tmp_path_factory, draw_rows, picks, size, mini
):
    from deltaflow.formats.changelog import Batch
    from deltaflow.state.backend import StateBackend

    kinds, rows, live = consistent_changelog(draw_rows, picks)
    node = group_agg(
        T2,
        (0,),
        (
            AggCall("COUNT", (), parse_type("BIGINT"), "n"),
            AggCall("SUM", (1,), parse_type("INT"), "s"),
            AggCall("MIN", (1,), parse_type("INT"), "m"),
            AggCall("COUNT", (1,), parse_type("BIGINT"), "d", distinct=True),
        ),
    )
    backend = StateBackend(tmp_path_factory.mktemp("s"))
    try:
        op = GroupAggOperator(node, backend, RuntimeContext(mini_batch=mini))
        out = Batch()
        for i in range(0, len(kinds), size):
            out.extend(op.process(Batch(kinds[i : i + size], rows[i : i + size])))
            backend.commit({})
        assert sorted(apply_changelog(out.kinds, out.rows), key=repr) == expected_aggregate(live)
        # with UB in the mode every -U is directly followed by its +U
        assert all(out.kinds[i + 1] == 2 for i, k in enumerate(out.kinds) if k == 1)
    finally:
        backend.close()


def test_decimal_sum_keeps_the_result_scale(backend):
    t = types("STRING", "DECIMAL(10, 2)")
    node = group_agg(t, (), (AggCall("SUM", (1,), parse_type("DECIMAL(38, 2)"), "s"),), mode=NO_UB)
    op = GroupAggOperator(node, backend, RuntimeContext())
    out = op.process(parse_changelog("+I[a, 1.10]\n+I[a, 2.90]", t))
    assert out.rows == [(Decimal("1.10"),), (Decimal("4.00"),)]
    assert str(out.rows[1][0]) == "4.00"


@pytest.mark.parametrize(
    "events",
    [
        "debezium-data-schema-exclude.txt",
        "debezium-postgres-data-schema-include.txt",
        "debezium-postgres-data-replica-identity.txt",
    ],
)
def test_decoded_debezium_events_through_the_graph_match_flink(backend, events):
    """The debezium-json decoder's batch, pushed through scan -> GROUP BY -> sink."""
    from deltaflow.formats.changelog import RawBatch
    from deltaflow.formats.registry import create_decoder
    from deltaflow.formats.spec import FormatSpec
    from deltaflow.processor.plan import JobPlan, Sink
    from deltaflow.processor.runtime.graph import Graph

    sql = (DATA / f"{events}.sql").read_text()
    options = {
        key: "true"
        for key in ("schema-include", "ignore-parse-errors")
        if f"'debezium-json.{key}' = 'true'" in sql
    }
    names = ("id", "name", "description", "weight")
    decoder = create_decoder(
        "debezium-json", FormatSpec(list(zip(names, PRODUCTS, strict=True)), [], options)
    )
    lines_ = (DATA / events).read_bytes().split(b"\n")
    batch = decoder.decode(RawBatch("products", 0, list(range(len(lines_))), lines_))
    agg = products_agg()
    sink = Sink(
        node_id=3,
        inputs=(agg,),
        fields=agg.fields,
        changelog_mode=ALL,
        table="agg_out",
        options={"connector": "print"},
        physical=agg.fields,
    )
    out = Graph(JobPlan(sinks=(sink,)), backend).push(1, batch)
    assert show(out[3], AGG_OUT) == lines((DATA / f"{events}.agg.changelog.txt").read_text())


def test_listagg_with_a_separator_column(backend):
    t = types("STRING", "STRING", "STRING")
    node = group_agg(t, (), (AggCall("LISTAGG", (1, 2), parse_type("STRING"), "l"),), mode=NO_UB)
    out = run(
        node,
        "+I[g, x, ;]\n+I[g, null, ;]\n+I[g, y, ;]\n-D[g, x, ;]",
        t,
        types("STRING"),
        backend=backend,
    )
    assert out == ["+I[x]", "+U[x;y]", "+U[y]"]


def test_group_by_without_aggregates_is_a_distinct(backend):
    node = group_agg(T2, (0,), ())
    out = run(node, "+I[a, 1]\n+I[a, 2]\n-D[a, 1]\n-D[a, 2]", T2, types("STRING"), backend=backend)
    assert out == ["+I[a]", "-D[a]"]


def test_global_aggregate_state_survives_a_commit(backend):
    node = group_agg(T2, (), (AggCall("COUNT", (), parse_type("BIGINT"), "n"),), mode=NO_UB)
    assert run(node, "+I[a, 1]", T2, types("BIGINT"), backend=backend) == ["+I[1]"]
    backend.commit({})
    assert run(node, "+I[b, 1]", T2, types("BIGINT"), backend=backend) == ["+U[2]"]
