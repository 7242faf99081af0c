"""Planning of cascading delta joins: EXPLAIN shows one DeltaJoin per join with the index
each input is looked up by, the physical plan is one DeltaJoinCascade over the sources, AUTO
derives the indexes as FORCE does, a table may be read twice, and FORCE names why a cascade
is refused."""

from __future__ import annotations

import pytest
from dl_helpers import FORCE_JOIN, find

from deltaflow.formats.errors import PlanError
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job

TABLE = (
    "CREATE TABLE {name} ({cols}, PRIMARY KEY ({pk}) NOT ENFORCED) WITH ('connector' = "
    "'kafka', 'topic' = '{name}', 'format' = 'debezium-json'{opts});\n"
)
COLS = {"a": "id INT, k INT, v INT", "b": "rid INT, k INT, w INT", "c": "cid INT, w INT, z INT"}
SINK = "CREATE TABLE out_t (id INT, rid INT, cid INT) WITH ('connector' = 'print');\n"
CHAIN = "SELECT a.id, b.rid, c.cid FROM a JOIN b ON a.k = b.k JOIN c ON b.w = c.w"


def job(query: str = CHAIN, settings: str = FORCE_JOIN, **bucket_keys: str) -> str:
    tables = "".join(
        TABLE.format(
            name=name, cols=cols, pk=cols.split()[0],
            opts=f", 'bucket.key' = '{bucket_keys[name]}'" if name in bucket_keys else "",
        )
        for name, cols in COLS.items()
    )  # fmt: skip
    return settings + tables + SINK + f"INSERT INTO out_t {query};"


def test_explain_shows_each_join_of_the_cascade_with_its_lookups():
    text = plan_job(job()).explain()
    assert (
        "+- DeltaJoin(joinType=[InnerJoin], where=[=(w, w0)], leftIndex=[b.w], rightIndex=[w], "
        "select=[id, k, v, rid, k0, w, cid, w0, z], fusedCalc=[output], changelogMode=[I,UB,UA,D])\n"
        "      :- DeltaJoin(joinType=[InnerJoin], where=[=(k, k0)], leftIndex=[k], "
        "rightIndex=[k], select=[id, k, v, rid, k0, w], changelogMode=[I,UB,UA,D])\n"
        "      :  :- ChangelogNormalize(key=[id], beforeImage=[state], changelogMode=[I,UB,UA,D])\n"
        "      :  :  +- TableSourceScan(table=[[default_catalog, default_database, a, "
        "project=[id, k], metadata=[]]], fields=[id, k]"  # v is read by no one
    ) in text


def test_one_operator_reads_the_three_scans_and_b_is_looked_up_two_ways():
    node = find(job(), P.DeltaJoinCascade)
    assert [scan.table.rsplit(".", 1)[-1] for scan in node.inputs] == ["a", "b", "c"]
    assert find(job(), P.Join) is None and find(job(), P.DeltaJoin) is None
    tree = node.tree
    assert tree.kind == "join" and [v.kind for v in tree.inputs] == ["join", "source"]
    a, b = tree.inputs[0].inputs
    assert (a.port, b.port, tree.inputs[1].port) == (0, 1, 2)
    # b by its k (a's changes), and by its w (c's changes reach a-join-b through b)
    assert sorted(lk.side.index for lk in b.lookups) == [(1,), (2,)]
    assert {lk.side.mirror for lk in b.lookups} == {
        f"{node.inputs[1].node_id}:Mirror:" + node.inputs[1].table
    }
    (ab_by_w,) = tree.inputs[0].lookups
    assert (ab_by_w.key, ab_by_w.via, ab_by_w.via_key) == ((5,), 1, (2,))


def test_auto_by_default_plans_the_cascade_force_plans_deriving_the_indexes():
    assert plan_job(job(CHAIN, "")).explain() == plan_job(job(CHAIN)).explain()
    auto = "SET 'table.optimizer.delta-join.strategy' = 'AUTO';\n"  # find() defaults to NONE
    node = find(job(CHAIN, auto, b="k"), P.DeltaJoinCascade)
    b = node.tree.inputs[0].inputs[1]
    # b by its declared bucket key k (a's changes) and by a derived index on w (c's changes)
    assert sorted(lk.side.index for lk in b.lookups) == [(1,), (2,)]


def test_a_table_read_twice_in_a_cascade_is_one_scan_at_two_ports():
    query = "SELECT a.id, b.rid, x.id FROM a JOIN b ON a.k = b.k JOIN a AS x ON b.w = x.k"
    node = find(job(query), P.DeltaJoinCascade)
    assert [scan.table.rsplit(".", 1)[-1] for scan in node.inputs] == ["a", "b", "a"]
    assert node.inputs[0] is node.inputs[2]
    text = plan_job(job(query, "")).explain()
    assert text.count("DeltaJoin(") == 2 and "deltaJoin=[not rewritten" not in text


@pytest.mark.parametrize(
    "query,reason",
    [
        (
            # keyed as Flink keys it (a computed $f6 = c.w), but the key is no source column
            "SELECT a.id, b.rid, c.cid FROM a JOIN b ON a.k = b.k JOIN c ON a.v + b.w = c.w",
            r"the left input key \[\$f6\] is computed from joined rows",
        ),
        (
            "SELECT s.id, b.rid, c.cid FROM (SELECT id, k, RAND_INTEGER(3) AS r FROM a) AS s "
            "JOIN b ON s.k = b.k JOIN c ON b.w = c.w",
            "non-deterministic function RAND_INTEGER",
        ),
    ],
)
def test_force_refuses_a_cascade_naming_the_reason(query, reason):
    with pytest.raises(PlanError, match=reason) as err:
        plan_job(job(query))
    assert "rewrite_delta_join" in str(err.value)


def test_a_regular_join_below_is_named_as_such():
    lower_without_equality = CHAIN.replace("ON a.k = b.k", "ON a.k < b.k")
    text = plan_job(job(lower_without_equality, "")).explain()
    assert "not rewritten: the left input is a join that is not a delta join itself" in text
    assert "not rewritten: it has no equality between the two sides" in text


EVENTUAL = "SET 'table.optimizer.delta-join.strategy' = 'EVENTUAL';\n"
IGNORE = "SET 'table.optimizer.delta-join.ignore-non-unique-key-filter' = 'true';\n"


def test_eventual_cascades_are_inner_and_refuse_a_filter_between_the_joins():
    node = find(job(settings=EVENTUAL), P.DeltaJoinCascade)
    assert node.eventual and node.changelog_mode == frozenset({0, 2})
    with pytest.raises(PlanError, match="EVENTUAL delta joins are INNER joins, this one is LEFT"):
        plan_job(job(CHAIN.replace("JOIN c", "LEFT JOIN c"), EVENTUAL))
    filtered = CHAIN + " WHERE a.v < b.w"  # pushed into the lower join's condition
    with pytest.raises(PlanError, match="a join condition besides the join keys' equalities"):
        plan_job(job(filtered, EVENTUAL))
    assert find(job(filtered, EVENTUAL + IGNORE), P.DeltaJoinCascade).eventual
