"""The demo job end to end on the real embedded broker, against hand-computed results.

Expected values follow from the events in processor/examples/inventory.jsonl:
final orders are 10002 (George, 4 x product 105 @ 0.88), 10004 (Edward, 1 x 107 @
5.10 after the rocks update), 10005 (Anne, 3 x 109 @ 22.20), 10006 (moved from Sally
to Edward, 5 x 104 @ 0.75) and 10007 (Edward, 10 x 107 @ 5.10); 10001 and 10003 were
deleted, so Sally (1001) has no row, and customer 1004 was renamed to Anne Marie.
"""

from decimal import Decimal

from deltaflow.processor.demo import run_demo


def test_demo_job_produces_the_join_aggregate_result(broker, tmp_path, capsys):
    rows = run_demo(broker, tmp_path / "state")
    by_id = {r["customer_id"]: r for r in rows}
    assert sorted(by_id) == [1002, 1003, 1004]
    assert by_id[1002] == {
        "customer_id": 1002, "first_name": "George", "last_name": "Bailey",
        "orders": 1, "items": 4, "total_weight": Decimal("3.52"),
    }  # fmt: skip
    assert by_id[1003]["orders"] == 3 and by_id[1003]["items"] == 16
    assert by_id[1003]["total_weight"] == Decimal("5.10") + Decimal("3.75") + Decimal("51.00")
    assert (by_id[1004]["last_name"], by_id[1004]["items"]) == ("Marie", 3)
    assert by_id[1004]["total_weight"] == Decimal("66.60")
    assert str(by_id[1004]["total_weight"]) == "66.60"  # DECIMAL(38, 2) keeps its scale in JSON
    out = capsys.readouterr().out
    assert "+I[1001, Sally, Thomas, sally.thomas@acme.com]" in out  # decoded changelog shown
    assert "-U[1004, Anne, Kretchmar, annek@noanswer.org]" in out
    assert "GroupAggregate" in out  # the plan is shown
