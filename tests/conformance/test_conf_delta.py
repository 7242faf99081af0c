"""The delta pass's judgements (conf_delta), on hand-written results: no Flink needed."""

from __future__ import annotations

from conf_delta import eventual_as_documented, judge, kinds_of

REGULAR = ["+I[1, a]", "+I[2, b]", "-U[1, a]", "+U[1, c]", "-D[2, b]"]


def _result(lines=None, plan="DeltaJoin(joinType=[InnerJoin]", plan_error=None, run_error=None):
    return {"plan": plan, "plan_error": plan_error, "lines": lines, "run_error": run_error}


def test_kinds_come_from_the_regular_plan_nodes():
    plan = "Sink(..)\n+- GroupAggregate(groupBy=[k])\n   +- Join(joinType=[InnerJoin])"
    assert kinds_of(plan) == ["join", "agg"]
    assert kinds_of("Sink(..)\n+- WindowAggregate(..)\n   +- LookupJoin(..)") == []
    assert kinds_of(None) == []
    auto = "Sink(..)\n+- GroupAggregate(groupBy=[k])\n   +- DeltaJoin(joinType=[InnerJoin])"
    assert kinds_of(auto) == ["join", "agg"]  # AUTO's delta join: the pass still forces joins


def test_eventual_emits_the_additions_and_keeps_what_was_retracted():
    ok, detail = eventual_as_documented(REGULAR, ["+I[1, a]", "+I[2, b]", "+U[1, c]"])
    assert ok and detail == "keeps 2 retracted rows"  # [1, a] and [2, b] stay
    assert eventual_as_documented(["+I[1, a]"], ["+I[1, a]"]) == (True, "same final table")


def test_eventual_fails_on_a_retraction_or_a_missing_addition():
    assert not eventual_as_documented(REGULAR, ["+I[1, a]", "+I[2, b]", "-D[2, b]"])[0]
    assert not eventual_as_documented(REGULAR, ["+I[1, a]", "+U[1, c]"])[0]


def test_a_refusal_is_not_eligible_with_the_planners_reason():
    error = (
        "table.optimizer.delta-agg.strategy = 'FORCE': GroupAggregate(..) cannot be a delta "
        "aggregate (rule rewrite_delta_agg): it has no GROUP BY key to look the mirror up by; "
        "SET it to 'AUTO' or 'NONE' to keep GroupAggregate"
    )
    got = judge("c1", "agg", _result(plan=None, plan_error=error), {}, {})
    assert (got.status, got.detail) == (
        "not eligible",
        "it has no GROUP BY key to look the mirror up by",
    )


def test_an_eligible_case_must_end_in_the_regular_and_flink_tables():
    regular, flink = _result(REGULAR), _result(["+I[1, c]"])
    reordered = ["+I[2, b]", "+I[1, c]", "-D[2, b]"]
    assert judge("c1", "join", _result(reordered), regular, flink).status == "agree"
    wrong = judge("c1", "join", _result(["+I[1, a]"]), regular, flink)
    assert wrong.status == "differ" and wrong.detail.startswith("vs regular")
    crash = judge("c1", "join", _result(run_error="CRASH ..."), regular, flink)
    assert crash.status == "differ"
    unplanned = judge("c1", "agg", _result(["+I[1, c]"], plan="GroupAggregate("), regular, flink)
    assert unplanned.status == "differ"
