"""Cascading delta joins against the chain of regular joins on the same valid CDC input
(hypothesis): per batch the same multiset of changes, so the same result, and that result is
the join of the final tables computed here from SQL's definition of each join."""

from __future__ import annotations

from collections import Counter

import pytest
from dl_helpers import FORCE_JOIN, baseline, final, find, run, scan_ids
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import ADDS, DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph
from deltaflow.state.backend import StateBackend

# a (id, k, v), b (rid, k, w), c (cid, w, z), d (did, z, t): three columns each, a primary
# key first; small value ranges so that rows match, NULL now and then.
TABLES = "".join(
    f"CREATE TABLE {name} ({cols}, PRIMARY KEY ({cols.split()[0]}) NOT ENFORCED)\n"
    f"  WITH ('connector' = 'kafka', 'topic' = '{name}', 'format' = 'debezium-json');\n"
    for name, cols in (
        ("a", "id INT, k INT, v INT"),
        ("b", "rid INT, k INT, w INT"),
        ("c", "cid INT, w INT, z INT"),
        ("d", "did INT, z INT, t INT"),
    )
)
NAMES = "abcd"

op_st = st.tuples(
    st.integers(0, 3),
    st.integers(0, 4),
    st.booleans(),
    st.one_of(st.none(), st.integers(0, 2)),
    st.one_of(st.none(), st.integers(0, 2)),
)


def history(ops: list[tuple], size: int, tables: int) -> list[tuple[str, Batch]]:
    """Ops as (table, Batch): an op inserts an absent key, updates (-U, +U) or deletes a
    present one; consecutive ops of one table share a batch of at most ``size`` ops."""
    live: list[dict] = [{} for _ in range(tables)]
    out: list[list] = []
    for side, pk, delete, x, y in ops:
        side %= tables
        old, new = live[side].get(pk), (pk, x, y)
        if old is None:
            changes = [(INSERT, new)]
        elif delete:
            changes = [(DELETE, old)]
        else:
            changes = [(UPDATE_BEFORE, old), (UPDATE_AFTER, new)]
        if changes[-1][0] == DELETE:
            del live[side][pk]
        else:
            live[side][pk] = new
        if not out or out[-1][0] != NAMES[side] or out[-1][2] >= size:
            out.append([NAMES[side], Batch(), 0])
        for kind, row in changes:
            out[-1][1].append(kind, row)
        out[-1][2] += 1
    return [(name, batch) for name, batch, _ in out]


def tables_at_end(steps) -> dict[str, list[tuple]]:
    rows: dict[str, dict] = {n: {} for n in NAMES}
    for name, batch in steps:
        for kind, row in zip(batch.kinds, batch.rows, strict=True):
            if ADDS[kind]:
                rows[name][row[0]] = row
            else:
                rows[name].pop(row[0], None)
    return {n: list(r.values()) for n, r in rows.items()}


def join(left, right, kind: str, on, lw: int, rw: int) -> list[tuple]:
    """SQL's join of two row lists: ``on(l, r)`` true (NULL never equals), outer rows padded."""
    out = [x + y for x in left for y in right if on(x, y)]
    if kind in ("LEFT", "FULL"):
        out += [x + (None,) * rw for x in left if not any(on(x, y) for y in right)]
    if kind in ("RIGHT", "FULL"):
        out += [(None,) * lw + y for y in right if not any(on(x, y) for x in left)]
    return out


def eq(x, y) -> bool:
    return x is not None and x == y


SINK = "CREATE TABLE out_t ({cols}) WITH ('connector' = 'print');\n"
ALL_COLS = "id INT, ak INT, v INT, rid INT, bk INT, w INT, cid INT, cw INT, z INT"


def chain(j1: str, j2: str, on_a: bool = False, where: str = "", delta: str = "") -> str:
    """a j1 b ON a.k = b.k, then j2 c ON b.w = c.w (or a.v = c.w)."""
    on = "a.v = c.w" if on_a else "b.w = c.w"
    query = f"SELECT * FROM a {j1} JOIN b ON a.k = b.k {j2} JOIN c ON {on}{where}"
    return delta + TABLES + SINK.format(cols=ALL_COLS) + f"INSERT INTO out_t {query};"


def chain_expected(tables, j1: str, j2: str, on_a: bool) -> Counter:
    ab = join(tables["a"], tables["b"], j1, lambda x, y: eq(x[1], y[1]), 3, 3)
    col = 2 if on_a else 5
    return Counter(join(ab, tables["c"], j2, lambda x, y: eq(x[col], y[1]), 6, 3))


def compare(sql: str, steps) -> list:
    """Runs ``sql`` regular and FORCE'd to delta joins; checks both changelogs per batch."""
    assert find(FORCE_JOIN + sql, P.DeltaJoinCascade) is not None
    assert find(sql, P.DeltaJoinCascade) is None
    regular = run(sql, steps)
    delta = run(FORCE_JOIN + sql, steps)
    for got, want in zip(delta, regular, strict=True):
        assert Counter(got) == Counter(want)
    assert_retracts_only_emitted_rows(delta)
    return delta


def assert_retracts_only_emitted_rows(outputs) -> None:
    live: Counter = Counter()
    for step in outputs:
        for kind, row in step:
            if ADDS[kind]:
                live[row] += 1
            else:
                assert live[row] > 0, f"{kind} retracts {row}, which is not in the result"
                live[row] -= 1


PAIRS = [
    ("INNER", "INNER"),
    ("LEFT", "LEFT"),
    ("INNER", "LEFT"),
    ("LEFT", "INNER"),
    ("RIGHT", "INNER"),
    ("INNER", "RIGHT"),
    ("FULL", "LEFT"),
    ("LEFT", "FULL"),
    ("FULL", "FULL"),
]


@pytest.mark.parametrize("j1,j2", PAIRS)
@pytest.mark.parametrize("on_a", [False, True])
@settings(max_examples=20, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=40), size=st.integers(1, 5))
def test_three_way_cascade_equals_the_regular_joins(j1, j2, on_a, ops, size):
    steps = history(ops, size, 3)
    delta = compare(chain(j1, j2, on_a), steps)
    assert final(delta) == chain_expected(tables_at_end(steps), j1, j2, on_a)


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=40), size=st.integers(1, 5))
def test_filters_and_a_non_equi_condition_between_the_joins(ops, size):
    """WHERE on both sources' columns lands in a Calc between the joins."""
    sql = chain("LEFT", "INNER", where=" WHERE a.v IS NULL OR b.w <= c.z")
    sql = sql.replace("ON b.w = c.w", "ON b.w = c.w AND a.v < 2")
    steps = history(ops, size, 3)
    delta = compare(sql, steps)
    t = tables_at_end(steps)
    ab = join(t["a"], t["b"], "LEFT", lambda x, y: eq(x[1], y[1]), 3, 3)
    abc = join(
        ab, t["c"], "INNER", lambda x, y: eq(x[5], y[1]) and x[2] is not None and x[2] < 2, 6, 3
    )

    def where(r):
        return r[2] is None or (r[5] is not None and r[8] is not None and r[5] <= r[8])

    assert final(delta) == Counter(r for r in abc if where(r))


@pytest.mark.parametrize("j1,j2,j3", [("INNER", "INNER", "INNER"), ("LEFT", "INNER", "LEFT")])
@settings(max_examples=20, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=50), size=st.integers(1, 5))
def test_bushy_four_way_join(j1, j2, j3, ops, size):
    """(a j1 b) j3 (c j2 d) ON b.w = c.w: each side a delta join of its own."""
    cols = ALL_COLS + ", did INT, dz INT, t INT"
    query = (
        "SELECT ab.*, cd.* FROM (SELECT a.id, a.k, a.v, b.rid, b.k AS bk, b.w FROM a "
        f"{j1} JOIN b ON a.k = b.k) AS ab {j3} JOIN (SELECT c.cid, c.w AS cw, c.z, d.did, "
        f"d.z AS dz, d.t FROM c {j2} JOIN d ON c.z = d.z) AS cd ON ab.w = cd.cw"
    )
    sql = TABLES + SINK.format(cols=cols) + f"INSERT INTO out_t {query};"
    steps = history(ops, size, 4)
    delta = compare(sql, steps)
    t = tables_at_end(steps)
    ab = join(t["a"], t["b"], j1, lambda x, y: eq(x[1], y[1]), 3, 3)
    cd = join(t["c"], t["d"], j2, lambda x, y: eq(x[2], y[1]), 3, 3)
    assert final(delta) == Counter(join(ab, cd, j3, lambda x, y: eq(x[5], y[1]), 6, 6))


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=50), size=st.integers(1, 5))
def test_four_way_chain_with_a_key_from_both_lower_sources(ops, size):
    """a JOIN b JOIN c ON a.v = c.w AND b.w = c.z LEFT JOIN d ON c.z = d.z."""
    cols = ALL_COLS + ", did INT, dz INT, t INT"
    query = (
        "SELECT * FROM a JOIN b ON a.k = b.k JOIN c ON a.v = c.w AND b.w = c.z "
        "LEFT JOIN d ON c.z = d.z"
    )
    sql = TABLES + SINK.format(cols=cols) + f"INSERT INTO out_t {query};"
    steps = history(ops, size, 4)
    delta = compare(sql, steps)
    t = tables_at_end(steps)
    ab = join(t["a"], t["b"], "INNER", lambda x, y: eq(x[1], y[1]), 3, 3)
    abc = join(ab, t["c"], "INNER", lambda x, y: eq(x[2], y[1]) and eq(x[5], y[2]), 6, 3)
    assert final(delta) == Counter(join(abc, t["d"], "LEFT", lambda x, y: eq(x[8], y[1]), 9, 3))


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=40), size=st.integers(1, 5))
def test_eventual_cascade_emits_the_regular_joins_additions_only(ops, size):
    steps = history(ops, size, 3)
    eventual = "SET 'table.optimizer.delta-join.strategy' = 'EVENTUAL';\n"
    sql = chain("INNER", "INNER")
    assert find(eventual + sql, P.DeltaJoinCascade).eventual
    regular = run(sql, steps)
    delta = run(eventual + sql, steps)
    for got, want in zip(delta, regular, strict=True):
        assert all(ADDS[k] for k, _ in got)
        assert Counter(got) == Counter(c for c in want if ADDS[c[0]])


def run_sinks(sql: str, steps, path, cut: int | None = None) -> list[list[Counter]]:
    """Each step pushed through the planned job on LMDB at ``path``: per sink, the changes
    of each step. With ``cut``, the graph is dropped after that many steps (state committed)
    and a new one continues on the reopened directory. Joins regular unless ``sql`` SETs a
    strategy."""
    plan = plan_job(baseline(sql)).plan
    ids: dict[str, int] = {}
    for sink in plan.sinks:
        scan_ids(sink, ids)
    out: list[list[Counter]] = [[] for _ in plan.sinks]
    parts = [steps] if cut is None else [steps[:cut], steps[cut:]]
    for part in parts:
        with StateBackend(path) as backend:
            graph = Graph(plan, backend)
            for table, batch in part:
                got = graph.push(ids[table], Batch(list(batch.kinds), list(batch.rows)))
                for i, sink in enumerate(plan.sinks):
                    result = got.get(sink.node_id, Batch())
                    out[i].append(Counter(zip(result.kinds, result.rows, strict=True)))
                backend.commit()
    return out


@settings(max_examples=15, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=40), size=st.integers(1, 5), cut=st.integers(0, 30))
def test_a_cascade_continues_from_its_committed_mirrors(tmp_path_factory, ops, size, cut):
    """The mirrors are the cascade's whole state: a new graph on the reopened directory
    continues exactly where the first one stopped."""
    steps = history(ops, size, 3)
    sql = chain("LEFT", "FULL")
    path = tmp_path_factory.mktemp("cascade")
    (delta,) = run_sinks(FORCE_JOIN + sql, steps, path, cut)
    assert delta == [Counter(step) for step in run(sql, steps)]


@settings(max_examples=15, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=40), size=st.integers(1, 5))
def test_a_join_and_a_cascade_over_it_share_the_mirrors(tmp_path_factory, ops, size):
    """A statement set: a JOIN b into one sink, a JOIN b JOIN c into another; the delta
    operators share a's and b's mirrors (each adds its indexes) and each sink gets what the
    regular joins give it."""
    sinks = (
        "CREATE TABLE ab_t (id INT, ak INT, v INT, rid INT, bk INT, w INT) "
        "WITH ('connector' = 'print');\n" + SINK.format(cols=ALL_COLS)
    )
    sql = (
        TABLES + sinks + "EXECUTE STATEMENT SET BEGIN\n"
        "INSERT INTO ab_t SELECT * FROM a JOIN b ON a.k = b.k;\n"
        "INSERT INTO out_t SELECT * FROM a JOIN b ON a.k = b.k RIGHT JOIN c ON b.w = c.w;\nEND;"
    )
    steps = history(ops, size, 3)
    delta = run_sinks(FORCE_JOIN + sql, steps, tmp_path_factory.mktemp("d"))
    regular = run_sinks(sql, steps, tmp_path_factory.mktemp("r"))
    assert delta == regular
    plan = plan_job(FORCE_JOIN + sql).plan
    mirrors = {lk.side.mirror for node in _all(plan.sinks[1]) if type(node) is P.DeltaJoinCascade
               for leaf in _leaves(node.tree) for lk in leaf.lookups}  # fmt: skip
    two_way = next(n for n in _all(plan.sinks[0]) if type(n) is P.DeltaJoin)
    assert {two_way.left.mirror, two_way.right.mirror} < mirrors


def _all(node: P.Node) -> list[P.Node]:
    return [node, *(n for child in node.inputs for n in _all(child))]


def _leaves(view: P.DeltaView) -> list[P.DeltaView]:
    if view.kind == "source":
        return [view]
    return [leaf for child in view.inputs for leaf in _leaves(child)]


@pytest.mark.parametrize("j2", ["INNER", "LEFT", "FULL"])
@settings(max_examples=20, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=40), size=st.integers(1, 5))
def test_filtered_sources_in_a_cascade(j2, ops, size):
    """Filters on the sources themselves (each source under its own Calc): a row updated
    into or out of the filter enters or leaves the joins."""
    query = (
        "SELECT * FROM a JOIN (SELECT * FROM b WHERE w > 0) AS b ON a.k = b.k "
        f"{j2} JOIN (SELECT * FROM c WHERE z < 2) AS c ON b.w = c.w"
    )
    sql = TABLES + SINK.format(cols=ALL_COLS) + f"INSERT INTO out_t {query};"
    steps = history(ops, size, 3)
    delta = compare(sql, steps)
    t = tables_at_end(steps)
    b = [r for r in t["b"] if r[2] is not None and r[2] > 0]
    c = [r for r in t["c"] if r[2] is not None and r[2] < 2]
    ab = join(t["a"], b, "INNER", lambda x, y: eq(x[1], y[1]), 3, 3)
    assert final(delta) == Counter(join(ab, c, j2, lambda x, y: eq(x[5], y[1]), 6, 3))


@pytest.mark.parametrize("j2", ["INNER", "FULL"])
@settings(max_examples=20, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=40), size=st.integers(1, 5))
def test_a_lower_outer_join_with_a_condition_looked_up_by_its_preserved_side(j2, ops, size):
    """c's changes look up a LEFT JOIN b (with a non-equi condition) by a's column: a's rows
    that no b row satisfies come back null-padded from the lookup, as the regular join's
    state holds them."""
    query = f"SELECT * FROM a LEFT JOIN b ON a.k = b.k AND a.v <= b.w {j2} JOIN c ON a.v = c.w"
    sql = TABLES + SINK.format(cols=ALL_COLS) + f"INSERT INTO out_t {query};"
    steps = history(ops, size, 3)
    delta = compare(sql, steps)
    t = tables_at_end(steps)

    def on(x, y):
        return eq(x[1], y[1]) and x[2] is not None and y[2] is not None and x[2] <= y[2]

    ab = join(t["a"], t["b"], "LEFT", on, 3, 3)
    assert final(delta) == Counter(join(ab, t["c"], j2, lambda x, y: eq(x[2], y[1]), 6, 3))


@pytest.mark.parametrize("j1,j2", [("INNER", "INNER"), ("LEFT", "LEFT"), ("INNER", "FULL"), ("RIGHT", "LEFT")])
@settings(max_examples=25, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=40), size=st.integers(1, 5))
def test_a_table_read_twice_in_a_cascade(j1, j2, ops, size):
    """a j1 b ON a.k = b.k j2 a AS x ON b.w = x.v (TPC-H Q7's two nations): a batch of a
    changes two leaves of the cascade; each of its changes is joined once per leaf, against
    the other leaf as the regular joins' states hold it."""
    query = f"SELECT * FROM a {j1} JOIN b ON a.k = b.k {j2} JOIN a AS x ON b.w = x.v"
    cols = "id INT, ak INT, v INT, rid INT, bk INT, w INT, xid INT, xk INT, xv INT"
    sql = TABLES + SINK.format(cols=cols) + f"INSERT INTO out_t {query};"
    steps = history(ops, size, 2)
    delta = compare(sql, steps)
    t = tables_at_end(steps)
    ab = join(t["a"], t["b"], j1, lambda x, y: eq(x[1], y[1]), 3, 3)
    assert final(delta) == Counter(join(ab, t["a"], j2, lambda x, y: eq(x[5], y[2]), 6, 3))


@pytest.mark.parametrize("j", ["INNER", "LEFT", "FULL"])
@settings(max_examples=25, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=50), size=st.integers(1, 5))
def test_a_table_read_on_both_sides_of_a_bushy_cascade(j, ops, size):
    """(a JOIN b) j (c JOIN a AS x): the two leaves of a meet only at the top join."""
    query = (
        "SELECT ab.*, cx.* FROM (SELECT a.id, a.k, a.v, b.rid, b.k AS bk, b.w FROM a "
        "JOIN b ON a.k = b.k) AS ab "
        f"{j} JOIN (SELECT c.cid, c.w AS cw, c.z, x.id AS xid, x.k AS xk, x.v AS xv FROM c "
        "JOIN a AS x ON c.z = x.v) AS cx ON ab.w = cx.cw"
    )
    cols = ALL_COLS + ", xid INT, xk INT, xv INT"
    sql = TABLES + SINK.format(cols=cols) + f"INSERT INTO out_t {query};"
    steps = history(ops, size, 3)
    delta = compare(sql, steps)
    t = tables_at_end(steps)
    ab = join(t["a"], t["b"], "INNER", lambda x, y: eq(x[1], y[1]), 3, 3)
    cx = join(t["c"], t["a"], "INNER", lambda x, y: eq(x[2], y[2]), 3, 3)
    assert final(delta) == Counter(join(ab, cx, j, lambda x, y: eq(x[5], y[1]), 6, 6))


@pytest.mark.parametrize("j", ["INNER", "LEFT"])
@settings(max_examples=25, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=40), size=st.integers(1, 5))
def test_a_filter_fixing_a_column_to_a_constant_is_looked_up_through_the_index(j, ops, size):
    """c filtered on z = 1 is looked up by (w, z) with z = 1, reading only rows the filter
    keeps; rows updated into and out of the filter enter and leave the join."""
    query = f"SELECT * FROM a JOIN b ON a.k = b.k {j} JOIN (SELECT * FROM c WHERE z = 1) AS c ON b.w = c.w"
    sql = TABLES + SINK.format(cols=ALL_COLS) + f"INSERT INTO out_t {query};"
    (lookup,) = [lk for lk in find(FORCE_JOIN + sql, P.DeltaJoinCascade).tree.inputs[1].lookups]
    assert lookup.side.index == (1, 2) and lookup.side.fixed == ((1, 1),)
    steps = history(ops, size, 3)
    delta = compare(sql, steps)
    t = tables_at_end(steps)
    c = [r for r in t["c"] if r[2] == 1]
    ab = join(t["a"], t["b"], "INNER", lambda x, y: eq(x[1], y[1]), 3, 3)
    assert final(delta) == Counter(join(ab, c, j, lambda x, y: eq(x[5], y[1]), 6, 3))
