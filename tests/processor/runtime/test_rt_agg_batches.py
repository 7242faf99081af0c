"""GroupAggregate's per-batch bookkeeping: the kinds written from the loop's marks, plain
accumulators kept decoded across commits, and what a discarded epoch leaves behind."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import ALL, NO_UB, fields, parse_changelog, scan, show, types

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.plan import AggCall, GroupAggregate
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.group_agg import GroupAggOperator
from deltaflow.state.backend import StateBackend

IN = types("STRING", "INT")
OUT = types("STRING", "BIGINT", "INT")


def count_sum(mode) -> GroupAggregate:
    aggs = (
        AggCall("COUNT", (), parse_type("BIGINT"), "n"),
        AggCall("SUM", (1,), parse_type("INT"), "s"),
    )
    return GroupAggregate(
        node_id=2, inputs=(scan(1, IN),), fields=fields(OUT), changelog_mode=mode,
        group_keys=(0,), aggs=aggs,
    )  # fmt: skip


def test_each_record_emits_in_order_with_update_before(backend):
    """Flink's GroupAggFunction per record: +I for a new group, -U/+U for a change, -D
    when the count reaches 0 (a -U too), +I again for the group's next row, groups
    interleaved."""
    op = GroupAggOperator(count_sum(ALL), backend, RuntimeContext())
    text = "+I[a, 1]\n+I[b, 5]\n+I[a, 2]\n-D[a, 1]\n-D[a, 2]\n+I[a, 4]\n-U[b, 5]\n+U[b, 6]"
    assert show(op.process(parse_changelog(text, IN)), OUT) == [
        "+I[a, 1, 1]",
        "+I[b, 1, 5]",
        "-U[a, 1, 1]", "+U[a, 2, 3]",
        "-U[a, 2, 3]", "+U[a, 1, 2]",
        "-D[a, 1, 2]",
        "+I[a, 1, 4]",
        "-D[b, 1, 5]",
        "+I[b, 1, 6]",
    ]  # fmt: skip


def test_each_record_emits_in_order_without_update_before(backend):
    op = GroupAggOperator(count_sum(NO_UB), backend, RuntimeContext())
    text = "+I[a, 1]\n+I[b, 5]\n+I[a, 2]\n-D[a, 1]\n-D[a, 2]\n+I[a, 4]\n-U[b, 5]\n+U[b, 6]"
    assert show(op.process(parse_changelog(text, IN)), OUT) == [
        "+I[a, 1, 1]", "+I[b, 1, 5]", "+U[a, 2, 3]", "+U[a, 1, 2]", "-D[a, 1, 2]",
        "+I[a, 1, 4]", "-D[b, 1, 5]", "+I[b, 1, 6]",
    ]  # fmt: skip


def _batches(op: GroupAggOperator, backend: StateBackend, texts: list[str]) -> list[str]:
    out: list[str] = []
    for text in texts:
        out += show(op.process(parse_changelog(text, IN)), OUT)
        backend.commit({})
    return out


def test_kept_accumulators_follow_commits_and_a_discarded_epoch(tmp_path):
    """A group's accumulator is kept decoded after a commit; an epoch dropped by
    ``discard`` (a failed checkpoint) must not leave its changes in it, and a restart
    from LMDB sees the same state."""
    for mini in (False, True):
        path = tmp_path / f"state-{mini}"
        ctx = RuntimeContext(mini_batch=mini)
        backend = StateBackend(path)
        try:
            op = GroupAggOperator(count_sum(NO_UB), backend, ctx)
            first = ["+I[a, 2, 3]"] if mini else ["+I[a, 1, 1]", "+U[a, 2, 3]"]
            assert _batches(op, backend, ["+I[a, 1]\n+I[a, 2]"]) == first
            op.process(parse_changelog("+I[a, 100]\n+I[c, 7]", IN))  # never committed
            backend.discard()
            again = _batches(op, backend, ["+I[a, 10]"])
            assert again == ["+U[a, 3, 13]"]
        finally:
            backend.close()
        backend = StateBackend(path)  # a restart reads what was committed
        try:
            op = GroupAggOperator(count_sum(NO_UB), backend, ctx)
            assert _batches(op, backend, ["-D[a, 1]\n+I[c, 7]"]) == (
                ["+U[a, 2, 12]", "+I[c, 1, 7]"]
            )
        finally:
            backend.close()


PRICES = types("STRING", "DECIMAL(10, 2)")
AVG_OUT = types("STRING", "DECIMAL(38, 6)")


def _half_up(value: Fraction, scale: int) -> Decimal:
    """``value`` rounded half away from zero to ``scale`` places, exactly."""
    scaled = abs(value) * 10**scale
    whole = int(scaled) + (1 if scaled - int(scaled) >= Fraction(1, 2) else 0)
    return Decimal(whole if value >= 0 else -whole).scaleb(-scale)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(-(10**9), 10**9), min_size=1, max_size=12),
    st.integers(0, 11),
)
def test_decimal_avg_is_the_exact_mean_rounded_half_up(tmp_path_factory, cents, drop):
    """AVG(DECIMAL(10, 2)) as DECIMAL(38, 6): after each record, the mean of the rows the
    group holds, rounded half up at 6 places (Flink's AVG of a DECIMAL), emitted when it
    changes."""
    node = GroupAggregate(
        node_id=2, inputs=(scan(1, PRICES),), fields=fields(AVG_OUT), changelog_mode=NO_UB,
        group_keys=(0,), aggs=(AggCall("AVG", (1,), parse_type("DECIMAL(38, 6)"), "a"),),
    )  # fmt: skip
    values = [Decimal(c).scaleb(-2) for c in cents]
    kinds = [INSERT] * len(values) + ([DELETE] if drop < len(values) - 1 else [])
    rows = [("g", v) for v in values] + ([("g", values[drop])] if len(kinds) > len(values) else [])
    backend = StateBackend(tmp_path_factory.mktemp("avg"))
    try:
        out = GroupAggOperator(node, backend, RuntimeContext()).process(Batch(kinds, rows))
    finally:
        backend.close()
    held: list[Decimal] = []
    expected: list[tuple] = []
    for kind, (_, v) in zip(kinds, rows, strict=True):
        held.append(v) if kind == INSERT else held.remove(v)
        mean = ("g", _half_up(sum(map(Fraction, held)) / len(held), 6))
        if not expected or mean != expected[-1]:  # an unchanged result emits nothing
            expected.append(mean)
    assert out.kinds == [INSERT] + [UPDATE_AFTER] * (len(expected) - 1)
    assert out.rows == expected
    assert [str(r[1]) for r in out.rows] == [str(r[1]) for r in expected]
