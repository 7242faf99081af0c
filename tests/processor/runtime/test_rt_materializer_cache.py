"""SinkUpsertMaterializer: the decoded row lists kept between batches change nothing.

The same changes, batched and committed the same way, give the same changelog and the
same state whether the operator keeps its lists (a large cache, a tiny one that starts
over every batch or so) or reads every list from state (TTL: no cache); and a reopened
operator continues from the committed state.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import NO_UB, fields, parse_changelog, scan, show, types

from deltaflow.formats.changelog import Batch
from deltaflow.processor.plan import SinkUpsertMaterializer
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.keyed import SinkUpsertMaterializerOperator
from deltaflow.processor.runtime.ttl import TtlBackend

T = types("INT", "STRING")


def node() -> SinkUpsertMaterializer:
    return SinkUpsertMaterializer(
        node_id=2, inputs=(scan(1, T),), fields=fields(T), changelog_mode=NO_UB, key=(0,)
    )


def test_a_reopened_operator_continues_from_the_committed_lists(backend, ctx):
    op = SinkUpsertMaterializerOperator(node(), backend, ctx)
    op.process(parse_changelog("+I[1, a]\n+I[1, b]\n+I[2, x]", T))
    backend.commit({})
    op.process(parse_changelog("-D[2, x]", T))  # cached, not yet committed
    backend.commit({})
    again = SinkUpsertMaterializerOperator(node(), backend, ctx)
    out = again.process(parse_changelog("-D[1, b]\n+I[2, y]", T))
    assert show(out, T) == ["+U[1, a]", "+I[2, y]"]
    assert backend.table("2:SinkUpsertMaterializer:rows").items() == [
        ((1,), [(1, "a")]),
        ((2,), [(2, "y")]),
    ]


def test_with_state_ttl_nothing_is_cached(backend):
    ttl = TtlBackend(backend, 60_000, lambda: 0)
    op = SinkUpsertMaterializerOperator(node(), ttl, RuntimeContext(state_ttl_ms=60_000))
    op.process(parse_changelog("+I[1, a]", T))
    assert op.inner.cache_limit == 0 and op.inner.cache == {}


change = st.tuples(st.booleans(), st.integers(0, 4), st.sampled_from("ab"))


@settings(max_examples=60, deadline=None)
@given(changes=st.lists(change, max_size=40), size=st.integers(1, 6))
def test_cached_lists_give_the_changelog_and_state_of_reading_state(
    tmp_path_factory, changes, size
):
    from deltaflow.state.backend import StateBackend

    results = []
    for limit in (100_000, 2, 0):
        backend = StateBackend(tmp_path_factory.mktemp("s"))
        try:
            op = SinkUpsertMaterializerOperator(node(), backend, RuntimeContext())
            op.inner.cache_limit = limit
            live: list[tuple] = []  # retract only rows that were added: a sink's changelog
            out = Batch()
            for start in range(0, len(changes), size):
                batch = Batch()
                for add, key, text in changes[start : start + size]:
                    row = (key, text)
                    if add or row not in live:
                        batch.append(0, row)
                        live.append(row)
                    else:
                        batch.append(3, row)
                        live.remove(row)
                out.extend(op.process(batch))
                backend.commit({})
            table = backend.table("2:SinkUpsertMaterializer:rows").items()
            results.append((list(zip(out.kinds, out.rows, strict=True)), table))
            upserted: dict = {}  # the sink topic folded: the last value per key wins
            for kind, row in zip(out.kinds, out.rows, strict=True):
                if kind == 3:
                    upserted.pop(row[0], None)
                else:
                    upserted[row[0]] = row
            assert upserted == {r[0]: r for r in live}  # each key's last live row
        finally:
            backend.close()
    assert results[0] == results[1] == results[2]
