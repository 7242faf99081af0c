"""The generated GroupAggregate loop: exact DECIMAL sums, Java integer overflow, and a
column-selecting Calc folded into the aggregate."""

from __future__ import annotations

from decimal import Decimal

import pytest
from rt_helpers import ALL, NO_UB, fields, parse_changelog, print_sink, scan, show, types

from deltaflow.formats.errors import DeltaflowError
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.nodes import Call, InputRef, Literal
from deltaflow.processor.plan import AggCall, Calc, GroupAggregate, JobPlan, Sink
from deltaflow.processor.planner.physical_rules import apply_physical_rules
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.graph import Graph
from deltaflow.processor.runtime.group_agg import GroupAggOperator
from deltaflow.processor.runtime.simple import PassThrough

ORDERS = types("BIGINT", "INT", "DECIMAL(10, 2)", "STRING")  # id, merchant, amount, status
OUT = types("INT", "BIGINT", "DECIMAL(38, 2)")


def planned(sinks: tuple) -> JobPlan:
    """A hand-built plan through the planner's physical rules, which decide the fusions."""
    return JobPlan(sinks=apply_physical_rules(sinks, {}))


def agg_node(child, keys, calls, node_id=3, mode=NO_UB):
    child_types = list(child.types)
    out_types = [child_types[k] for k in keys] + [c.type for c in calls]
    return GroupAggregate(
        node_id=node_id,
        inputs=(child,),
        fields=fields(out_types),
        changelog_mode=mode,
        group_keys=keys,
        aggs=calls,
    )


def count_and_sum(child, amount):
    return (
        AggCall("COUNT", (), parse_type("BIGINT NOT NULL"), "n"),
        AggCall("SUM", (amount,), parse_type("DECIMAL(38, 2)"), "s"),
    )


def select_merchant_amount(condition=None):
    """Calc(select=[merchant, amount]) over the orders scan."""
    src = scan(1, ORDERS)
    return Calc(
        node_id=2,
        inputs=(src,),
        fields=fields([ORDERS[1], ORDERS[2]]),
        changelog_mode=ALL,
        projection=(InputRef(ORDERS[1], 1), InputRef(ORDERS[2], 2)),
        condition=condition,
    )


CHANGES = """+I[1, 7, 10.50, NEW]
+I[2, 7, 4.25, NEW]
+I[3, 8, 1.00, NEW]
-U[1, 7, 10.50, NEW]
+U[1, 7, 12.00, PAID]
-D[3, 8, 1.00, NEW]
-D[2, 7, 4.25, NEW]"""

# COUNT(*), SUM(amount) GROUP BY merchant, one output per change (Flink's GroupAggFunction,
# no UPDATE_BEFORE): the -U of order 1 leaves (1, 4.25) for a moment, then +U gives 16.25.
PER_RECORD = [
    "+I[7, 1, 10.50]",
    "+U[7, 2, 14.75]",
    "+I[8, 1, 1.00]",
    "+U[7, 1, 4.25]",
    "+U[7, 2, 16.25]",
    "-D[8, 1, 1.00]",
    "+U[7, 1, 12.00]",
]


@pytest.mark.parametrize("mini_batch", [False, True])
def test_a_column_selecting_calc_is_folded_into_the_aggregate(backend, mini_batch):
    calc = select_merchant_amount()
    agg = agg_node(calc, (0,), count_and_sum(calc, 1))
    graph = Graph(planned((print_sink(4, agg),)), backend, RuntimeContext(mini_batch=mini_batch))
    assert isinstance(graph.ops[2], PassThrough)
    out = show(graph.push(1, parse_changelog(CHANGES, ORDERS))[4], OUT)
    # mini-batch: one result per key of the batch; merchant 8 came and went within it
    assert out == (["+I[7, 1, 12.00]"] if mini_batch else PER_RECORD)


def test_a_filtering_calc_stays_its_own_operator(backend):
    b = parse_type("BOOLEAN")
    paid = Call(b, "=", (InputRef(ORDERS[3], 3), Literal(ORDERS[3], "PAID")))
    calc = select_merchant_amount(condition=paid)
    agg = agg_node(calc, (0,), count_and_sum(calc, 1))
    graph = Graph(planned((print_sink(4, agg),)), backend)
    assert not isinstance(graph.ops[2], PassThrough)
    out = show(graph.push(1, parse_changelog(CHANGES, ORDERS))[4], OUT)
    assert out == ["+I[7, 1, 12.00]"]


def test_a_calc_read_by_two_nodes_is_not_folded(backend):
    calc = select_merchant_amount()
    agg = agg_node(calc, (0,), count_and_sum(calc, 1))
    plan = planned((print_sink(4, agg), print_sink(5, calc)))
    graph = Graph(plan, backend)
    assert not isinstance(graph.ops[2], PassThrough)
    out = graph.push(1, parse_changelog(CHANGES, ORDERS))
    assert show(out[4], OUT) == PER_RECORD
    assert show(out[5], types("INT", "DECIMAL(10, 2)"))[:2] == ["+I[7, 10.50]", "+I[7, 4.25]"]


@pytest.mark.parametrize("mini_batch", [False, True])
def test_decimal_sum_beyond_28_digits_is_exact(backend, mini_batch):
    """DECIMAL(38, 2) holds 38 digits; Python's default context keeps 28."""
    t = types("STRING", "DECIMAL(38, 2)")
    node = agg_node(scan(1, t), (), (AggCall("SUM", (1,), parse_type("DECIMAL(38, 2)"), "s"),))
    op = GroupAggOperator(node, backend, RuntimeContext(mini_batch=mini_batch))
    big = "123456789012345678901234567890123.45"
    first = op.process(parse_changelog(f"+I[a, {big}]\n+I[b, 0.01]", t))
    assert first.rows[-1] == (Decimal("123456789012345678901234567890123.46"),)
    backend.commit({})
    second = op.process(parse_changelog(f"-D[a, {big}]", t))
    assert [str(r[0]) for r in second.rows] == ["0.01"]


def test_decimal_sum_of_another_scale_is_rounded_half_up_to_the_result_scale(backend):
    t = types("STRING", "DECIMAL(10, 3)")
    node = agg_node(scan(1, t), (), (AggCall("SUM", (1,), parse_type("DECIMAL(38, 2)"), "s"),))
    op = GroupAggOperator(node, backend, RuntimeContext())
    out = op.process(parse_changelog("+I[a, 1.004]\n+I[a, 0.001]", t))
    assert [str(r[0]) for r in out.rows] == ["1.00", "1.01"]


def test_bigint_sum_overflows_as_a_java_long(backend):
    t = types("STRING", "BIGINT")
    node = agg_node(
        scan(1, t),
        (),
        (
            AggCall("SUM", (1,), parse_type("BIGINT"), "s"),
            AggCall("SUM0", (1,), parse_type("BIGINT"), "z"),
        ),
    )
    op = GroupAggOperator(node, backend, RuntimeContext())
    text = "+I[a, 9223372036854775807]\n+I[b, 1]\n-D[a, 9223372036854775807]\n-D[b, 1]"
    out = op.process(parse_changelog(text, t))
    assert show(out, types("BIGINT", "BIGINT")) == [
        "+I[9223372036854775807, 9223372036854775807]",
        "+U[-9223372036854775808, -9223372036854775808]",
        "+U[1, 1]",
        "-D[1, 1]",
    ]


def test_sum0_over_a_filtered_out_group_is_zero_and_sum_is_null(backend):
    t = types("STRING", "INT", "BOOLEAN")
    calls = (
        AggCall("SUM", (1,), parse_type("INT"), "s", filter_arg=2),
        AggCall("SUM0", (1,), parse_type("INT"), "z", filter_arg=2),
    )
    node = agg_node(scan(1, t), (0,), calls, mode=ALL)
    op = GroupAggOperator(node, backend, RuntimeContext())
    out = op.process(parse_changelog("+I[a, 5, false]\n+I[a, 2, true]", t))
    assert show(out, types("STRING", "INT", "INT")) == [
        "+I[a, null, 0]",
        "-U[a, null, 0]",
        "+U[a, 2, 2]",
    ]


def keyed_sink(child):
    return Sink(
        node_id=9,
        inputs=(child,),
        fields=child.fields,
        changelog_mode=child.changelog_mode,
        table="keyed",
        options={"connector": "print"},
        physical=child.fields,
        primary_key=(child.fields[0].name,),
    )


def test_sink_primary_key_null_fails_the_job_or_is_dropped(backend):
    """Flink's sink NOT NULL enforcer: ERROR (the default) fails, DROP drops the row."""
    t = types("STRING", "INT")
    plan = JobPlan(sinks=(keyed_sink(scan(1, t)),))
    text = "+I[a, 1]\n+I[null, 2]\n+I[b, 3]"
    with pytest.raises(DeltaflowError, match="NOT NULL"):
        Graph(plan, backend).push(1, parse_changelog(text, t))
    dropping = Graph(plan, backend, RuntimeContext(drop_not_null_violations=True))
    assert show(dropping.push(1, parse_changelog(text, t))[9], t) == ["+I[a, 1]", "+I[b, 3]"]
    clean = Graph(plan, backend).push(1, parse_changelog("+I[a, 1]\n+I[b, 3]", t))
    assert show(clean[9], t) == ["+I[a, 1]", "+I[b, 3]"]


@pytest.mark.parametrize("mini_batch", [False, True])
def test_two_key_columns_in_another_order_than_the_input(backend, mini_batch):
    """Calc(select=[status, merchant, amount]) -> GROUP BY status, merchant: MAX(amount)."""
    src = scan(1, ORDERS)
    calc = Calc(
        node_id=2,
        inputs=(src,),
        fields=fields([ORDERS[3], ORDERS[1], ORDERS[2]]),
        changelog_mode=ALL,
        projection=(InputRef(ORDERS[3], 3), InputRef(ORDERS[1], 1), InputRef(ORDERS[2], 2)),
    )
    calls = (AggCall("MAX", (2,), parse_type("DECIMAL(10, 2)"), "m"),)
    agg = agg_node(calc, (0, 1), calls, mode=ALL)
    graph = Graph(planned((print_sink(4, agg),)), backend, RuntimeContext(mini_batch=mini_batch))
    assert isinstance(graph.ops[2], PassThrough)
    out = show(
        graph.push(1, parse_changelog(CHANGES, ORDERS))[4], types("STRING", "INT", "DECIMAL(10, 2)")
    )
    if mini_batch:  # one result per group of the batch; (NEW, 7) came and went within it
        assert out == ["+I[PAID, 7, 12.00]"]
    else:  # a second NEW row below the maximum changes nothing: no output for it
        assert out == [
            "+I[NEW, 7, 10.50]",
            "+I[NEW, 8, 1.00]",
            "-U[NEW, 7, 10.50]",
            "+U[NEW, 7, 4.25]",
            "+I[PAID, 7, 12.00]",
            "-D[NEW, 8, 1.00]",
            "-D[NEW, 7, 4.25]",
        ]


@pytest.mark.parametrize("mini_batch", [False, True])
def test_count_star_reads_the_row_count_beside_a_filtered_count(backend, mini_batch):
    """COUNT(*) equals the group's row count (it is read from it); COUNT(*) FILTER counts
    its own rows; both continue across a commit and a reopened operator."""
    t = types("STRING", "BOOLEAN")
    calls = (
        AggCall("COUNT", (), parse_type("BIGINT NOT NULL"), "n"),
        AggCall("COUNT", (), parse_type("BIGINT NOT NULL"), "f", filter_arg=1),
    )
    node = agg_node(scan(1, t), (0,), calls, mode=ALL)
    ctx = RuntimeContext(mini_batch=mini_batch)
    out_types = types("STRING", "BIGINT", "BIGINT")
    op = GroupAggOperator(node, backend, ctx)
    first = show(op.process(parse_changelog("+I[a, true]\n+I[a, false]", t)), out_types)
    backend.commit({})
    op = GroupAggOperator(node, backend, ctx)
    second = show(op.process(parse_changelog("-D[a, true]\n+I[b, false]", t)), out_types)
    if mini_batch:
        assert first == ["+I[a, 2, 1]"]
        assert second == ["-U[a, 2, 1]", "+U[a, 1, 0]", "+I[b, 1, 0]"]
    else:
        assert first == ["+I[a, 1, 1]", "-U[a, 1, 1]", "+U[a, 2, 1]"]
        assert second == ["-U[a, 2, 1]", "+U[a, 1, 0]", "+I[b, 1, 0]"]


def test_a_result_with_count_star_is_emitted_for_every_record(backend):
    """Each record of an update pair changes COUNT(*), so each emits -U/+U (Flink without
    mini-batch), though the pair leaves the group's result as it was."""
    node = agg_node(scan(1, ORDERS), (1,), count_and_sum(None, 2), mode=ALL)
    op = GroupAggOperator(node, backend, RuntimeContext())
    text = (
        "+I[1, 7, 2.50, PAID]\n+I[2, 7, 1.00, PAID]\n-U[1, 7, 2.50, PAID]\n+U[1, 7, 2.50, SHIPPED]"
    )
    assert show(op.process(parse_changelog(text, ORDERS)), OUT) == [
        "+I[7, 1, 2.50]",
        "-U[7, 1, 2.50]",
        "+U[7, 2, 3.50]",
        "-U[7, 2, 3.50]",
        "+U[7, 1, 1.00]",
        "-U[7, 1, 1.00]",
        "+U[7, 2, 3.50]",
    ]
