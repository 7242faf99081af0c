"""SinkUpsertMaterializer whose input's upsert key is the sink key (issue 19).

Each sink key then holds at most one row and the operator takes a loop without a search
(``keyed._single``). Expected: Flink's rules for that case (an addition gives +I or +U
and replaces the row, a retraction of the held row gives -D, one of a key holding
nothing is dropped), written out here, and the same changelog and state as the general
loop gives for the same input.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import fields, parse_changelog, scan, show, types

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor.plan import SinkUpsertMaterializer
from deltaflow.processor.runtime.keyed import UpsertMaterializer
from deltaflow.state.backend import StateBackend

T = types("INT", "STRING")
MODE = frozenset({0, 2, 3})


def test_rules_when_the_upsert_key_is_the_sink_key(backend):
    op = UpsertMaterializer(2, (0,), backend, (0,), T)
    assert op.single
    out = op.process(parse_changelog("+I[1, a]\n+U[1, b]\n-U[1, b]\n+U[1, c]\n-D[2, x]", T))
    assert show(out, T) == ["+I[1, a]", "+U[1, b]", "-D[1, b]", "+I[1, c]"]
    backend.commit({})
    out = op.process(parse_changelog("-D[1, zz]\n-D[1, c]\n+I[3, q]", T))
    assert show(out, T) == ["-D[1, zz]", "+I[3, q]"]
    assert backend.table("2:SinkUpsertMaterializer:rows").items() == [((3,), [(3, "q")])]


def _changes(seed: int) -> list[tuple[int, tuple]]:
    rnd = random.Random(seed)
    out: list[tuple[int, tuple]] = []
    for _ in range(60):
        key, value = rnd.randrange(5), rnd.choice("abc")
        kind = rnd.choice([INSERT, UPDATE_AFTER, UPDATE_AFTER, UPDATE_BEFORE, DELETE])
        out.append((kind, (key, value)))
    return out


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), batch=st.sampled_from([1, 4, 25]))
def test_same_changelog_and_state_as_the_general_loop(tmp_path_factory, seed, batch):
    changes = _changes(seed)
    results = []
    for single in (True, False):
        with StateBackend(tmp_path_factory.mktemp("s")) as backend:
            op = UpsertMaterializer(2, (0,), backend, (0,), T)
            op.single = single
            kinds: list[int] = []
            rows: list[tuple] = []
            for i in range(0, len(changes), batch):
                part = changes[i : i + batch]
                out = op.process(Batch([k for k, _ in part], [r for _, r in part]))
                kinds += out.kinds
                rows += out.rows
                backend.commit({})
            table = backend.table("2:SinkUpsertMaterializer:rows").items()
            results.append((kinds, rows, table))
    assert results[0] == results[1]


def test_the_plan_node_takes_the_single_row_loop_only_for_its_own_key(backend):
    node = SinkUpsertMaterializer(
        node_id=3, inputs=(scan(1, T),), fields=fields(T), changelog_mode=MODE, key=(0,)
    )
    assert node.key == (0,)
    assert not UpsertMaterializer(3, (0,), backend, (1,), T).single
    assert not UpsertMaterializer(4, (0,), backend, (), T).single
    assert UpsertMaterializer(5, (0, 1), backend, (1, 0), T).single
