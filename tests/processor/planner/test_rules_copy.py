"""Rules copy what they change: a rule over one INSERT's tree never changes a node that
existed before it ran, neither a tree rule nor a sink rule (which copies its sink to set a
field of it, and the nodes whose traits it infers again). A table's scan and computed-column Calc are one node
for every INSERT and self-join side reading the table, so a rule changing one in place
would change every other reader's plan.

Each rule of ``api.TREE_RULES`` and ``api.SINK_RULES`` is wrapped to snapshot the nodes
of its input before the call and compare them after, over every plan-snapshot case and a
statement set whose INSERTs share a CDC table with computed columns.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.planner import api, binder
from deltaflow.processor.planner import logical as L

CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))
SHARED_JOB = """
CREATE TABLE orders (id INT, cust INT, amount INT, status STRING, big AS amount * 2,
    PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '/tmp/o.json', 'format' = 'debezium-json');
CREATE TABLE by_cust (cust INT, total INT, PRIMARY KEY (cust) NOT ENFORCED)
  WITH ('connector' = 'print');
CREATE TABLE by_status (status STRING, n BIGINT, PRIMARY KEY (status) NOT ENFORCED)
  WITH ('connector' = 'print');
CREATE TABLE rows_out (id INT, big INT, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'print');
CREATE TABLE pairs (a INT, b INT) WITH ('connector' = 'print');
EXECUTE STATEMENT SET BEGIN
INSERT INTO by_cust SELECT cust, SUM(big) FROM orders WHERE status = 'paid' GROUP BY cust;
INSERT INTO by_status SELECT status, COUNT(*) FROM orders GROUP BY status;
INSERT INTO rows_out SELECT id, big FROM orders WHERE amount > 1;
INSERT INTO pairs SELECT x.id, y.id FROM orders AS x JOIN orders AS y ON x.cust = y.cust
  WHERE x.amount > y.amount;
END;
"""


def _nodes(root: L.LNode) -> dict[int, L.LNode]:
    seen: dict[int, L.LNode] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen[id(node)] = node
            stack.extend(node.inputs)
    return seen


def _snapshot(node: L.LNode) -> dict[str, object]:
    # lists compared by content (LNodes compare by identity: eq=False)
    return {k: tuple(v) if isinstance(v, list) else v for k, v in vars(node).items()}


def _changed(before: dict[str, object], node: L.LNode) -> list:
    after = _snapshot(node)
    return [k for k in before if before[k] != after.get(k)]


class Watch:
    """The wrapped rules and what they changed: (rule, node type, attributes)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.shared: dict[int, L.LNode] = {}
        self.found: list[tuple[str, str, list[str]]] = []
        scan = binder.bind_scan

        def bind_scan(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            node, cols = scan(*args, **kwargs)
            self.shared.update(_nodes(node))
            return node, cols

        monkeypatch.setattr(binder, "bind_scan", bind_scan)
        monkeypatch.setattr(api, "TREE_RULES", tuple(self.wrap(r) for r in api.TREE_RULES))
        monkeypatch.setattr(api, "SINK_RULES", tuple(self.wrap(r) for r in api.SINK_RULES))

    def wrap(self, rule):  # noqa: ANN001, ANN202
        def watched(node: L.LNode, settings: dict[str, str]) -> L.LNode:
            before = {k: _snapshot(n) for k, n in _nodes(node).items()}
            nodes = _nodes(node)
            try:
                return rule(node, settings)
            finally:
                for key, snap in before.items():
                    changed = _changed(snap, nodes[key])
                    if changed:
                        self.found.append((rule.__name__, type(nodes[key]).__name__, changed))

        watched.__name__ = rule.__name__
        return watched


def _plan(sql: str) -> None:
    try:
        api.plan_job(sql)
    except DeltaflowError:
        pass  # a rejected job: what its rules did before the error is checked all the same


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_no_rule_changes_a_node_of_its_input(path: Path, monkeypatch) -> None:
    watch = Watch(monkeypatch)
    _plan(yaml.safe_load(path.read_text())["sql"])
    assert watch.found == []


@pytest.mark.parametrize("strategy", ["NONE", "AUTO"])
def test_inserts_sharing_a_table_keep_its_nodes_as_bound(strategy: str, monkeypatch) -> None:
    watch = Watch(monkeypatch)
    sql = f"SET 'table.optimizer.delta-join.strategy' = '{strategy}';\n" + SHARED_JOB
    planned = api.plan_job(sql)
    assert watch.shared and watch.found == []
    assert len(planned.sink_texts) == 4
    # the four INSERTs and both sides of the self-join read one scan of orders
    from deltaflow.processor.job_tables import scans_of

    assert len(scans_of(planned.plan)) == 1


def test_the_watch_catches_a_rule_changing_a_shared_node(monkeypatch) -> None:
    """A rule that sets a field of the shared scan in place is reported."""

    def marks_scans(node: L.LNode, settings: dict[str, str]) -> L.LNode:
        for n in _nodes(node).values():
            if isinstance(n, L.Scan):
                n.watermark_expr = None if n.watermark_expr else n.watermark_expr
                n.primary_key = (*n.primary_key, 0)  # changed in place: wrong
        return node

    monkeypatch.setattr(api, "TREE_RULES", (*api.TREE_RULES, marks_scans))
    watch = Watch(monkeypatch)
    _plan(SHARED_JOB)
    assert ("marks_scans", "Scan", ["primary_key"]) in watch.found


def test_the_watch_catches_a_sink_rule_setting_its_own_sink(monkeypatch) -> None:
    """A sink rule must copy its sink too: the sink it was given is the tree before it."""

    def marks_sink(sink: L.Sink, settings: dict[str, str]) -> L.Sink:
        sink.upsert_materialize = True  # changed in place: wrong
        return sink

    monkeypatch.setattr(api, "SINK_RULES", (marks_sink, *api.SINK_RULES))
    watch = Watch(monkeypatch)
    _plan(SHARED_JOB)
    assert ("marks_sink", "Sink", ["upsert_materialize"]) in watch.found
