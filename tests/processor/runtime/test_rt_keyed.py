"""ChangelogNormalize, Deduplicate, SinkUpsertMaterializer, DropUpdateBefore."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import ALL, NO_UB, fields, parse_changelog, scan, show, types

from deltaflow.processor.plan import ChangelogNormalize, Deduplicate, SinkUpsertMaterializer
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.keyed import (
    ChangelogNormalizeOperator,
    DeduplicateOperator,
    SinkUpsertMaterializerOperator,
)
from deltaflow.processor.runtime.simple import DropUpdateBeforeOperator

T = types("INT", "STRING")


def normalize(mode=ALL):
    return ChangelogNormalize(
        node_id=2, inputs=(scan(1, T),), fields=fields(T), changelog_mode=mode, key=(0,)
    )


def run(op, text, t=T):
    return show(op.process(parse_changelog(text, t)), t)


def test_changelog_normalize_turns_upserts_into_a_full_changelog(backend, ctx):
    op = ChangelogNormalizeOperator(normalize(), backend, ctx)
    # an upsert delete carries only the key: -D emits the stored row
    # a repeated +I is dropped; a repeated +U is not (Flink's equaliser compares the kind)
    text = "+I[1, a]\n+I[1, a]\n+U[1, b]\n+U[1, b]\n-D[1, null]\n-D[2, null]\n+U[1, c]"
    assert run(op, text) == [
        "+I[1, a]",
        "-U[1, a]",
        "+U[1, b]",
        "-U[1, b]",
        "+U[1, b]",
        "-D[1, b]",
        "+I[1, c]",
    ]


def test_changelog_normalize_without_update_before(backend, ctx):
    op = ChangelogNormalizeOperator(normalize(NO_UB), backend, ctx)
    assert run(op, "+U[1, a]\n+U[1, b]") == ["+I[1, a]", "+U[1, b]"]


def test_changelog_normalize_keeps_state_across_batches_and_commits(backend, ctx):
    op = ChangelogNormalizeOperator(normalize(), backend, ctx)
    run(op, "+U[1, a]")
    backend.commit({})
    op2 = ChangelogNormalizeOperator(normalize(), backend, ctx)
    assert run(op2, "+U[1, z]") == ["-U[1, a]", "+U[1, z]"]


def test_changelog_normalize_mini_batch_keeps_the_last_change_per_key(backend):
    op = ChangelogNormalizeOperator(normalize(), backend, RuntimeContext(mini_batch=True))
    assert run(op, "+U[1, a]\n+U[2, x]\n+U[1, b]") == ["+I[2, x]", "+I[1, b]"]


def dedup(keep_last, order_column=None, is_rowtime=False, mode=ALL, t=T):
    return Deduplicate(
        node_id=2,
        inputs=(scan(1, t),),
        fields=fields(t),
        changelog_mode=mode,
        keys=(0,),
        keep_last_row=keep_last,
        order_column=order_column,
        is_rowtime=is_rowtime,
    )


def test_deduplicate_keep_first_on_arrival(backend, ctx):
    op = DeduplicateOperator(dedup(False, mode=frozenset({0})), backend, ctx)
    assert run(op, "+I[1, a]\n+I[1, b]\n+I[2, c]") == ["+I[1, a]", "+I[2, c]"]


def test_deduplicate_keep_last_on_arrival(backend, ctx):
    op = DeduplicateOperator(dedup(True), backend, ctx)
    assert run(op, "+I[1, a]\n+I[1, b]") == ["+I[1, a]", "-U[1, a]", "+U[1, b]"]


def test_deduplicate_on_rowtime_keeps_earliest_or_latest(backend, ctx):
    t = types("INT", "TIMESTAMP(3)")
    text = "+I[1, 2024-01-01T00:00:05]\n+I[1, 2024-01-01T00:00:01]\n+I[1, 2024-01-01T00:00:03]"
    first = DeduplicateOperator(dedup(False, 1, True, t=t), backend, ctx)
    assert run(first, text, t) == [
        "+I[1, 2024-01-01T00:00:05]",
        "-U[1, 2024-01-01T00:00:05]",
        "+U[1, 2024-01-01T00:00:01]",
    ]
    node = Deduplicate(
        node_id=5,
        inputs=(scan(1, t),),
        fields=fields(t),
        changelog_mode=NO_UB,
        keys=(0,),
        keep_last_row=True,
        order_column=1,
        is_rowtime=True,
    )
    last = DeduplicateOperator(node, backend, ctx)
    assert run(last, text, t) == ["+I[1, 2024-01-01T00:00:05]"]


def materializer():
    node = SinkUpsertMaterializer(
        node_id=2, inputs=(scan(1, T),), fields=fields(T), changelog_mode=NO_UB, key=(0,)
    )
    return node


def test_sink_upsert_materializer_follows_flink(backend, ctx):
    op = SinkUpsertMaterializerOperator(materializer(), backend, ctx)
    out = run(op, "+I[1, a]\n+I[1, b]\n-D[1, a]\n-D[1, b]\n+I[1, c]\n+I[1, d]\n-D[1, d]\n-D[2, x]")
    assert out == [
        "+I[1, a]",  # the list was empty
        "+U[1, b]",
        # retracting a non-last row emits nothing
        "-D[1, b]",  # the list became empty
        "+I[1, c]",
        "+U[1, d]",
        "+U[1, c]",  # the last row went: the new last one
    ]


def test_drop_update_before():
    op = DropUpdateBeforeOperator()
    assert run(op, "+I[1, a]\n-U[1, a]\n+U[1, b]\n-D[1, b]") == ["+I[1, a]", "+U[1, b]", "-D[1, b]"]


def test_sink_upsert_materializer_keeps_identical_rows_apart_without_an_upsert_key(backend, ctx):
    op = SinkUpsertMaterializerOperator(materializer(), backend, ctx)
    # two copies: retracting the first found (not the last) emits nothing, the second -D
    assert run(op, "+I[1, a]\n+I[1, a]\n-D[1, a]\n-D[1, a]") == ["+I[1, a]", "+U[1, a]", "-D[1, a]"]


def test_sink_upsert_materializer_matches_by_the_input_upsert_key(backend, ctx):
    src = scan(1, T, upsert_keys=((1,),))
    node = SinkUpsertMaterializer(
        node_id=2, inputs=(src,), fields=fields(T), changelog_mode=NO_UB, key=(0,)
    )
    op = SinkUpsertMaterializerOperator(node, backend, ctx)
    # same upsert key 'a': the second addition replaces the first, one retraction empties the list
    assert run(op, "+I[1, a]\n+U[1, a]\n-D[1, a]") == ["+I[1, a]", "+U[1, a]", "-D[1, a]"]


def test_deduplicate_keep_last_mini_batch_sees_each_keys_last_row(backend):
    op = DeduplicateOperator(dedup(True), backend, RuntimeContext(mini_batch=True))
    assert run(op, "+I[1, a]\n+I[2, x]\n+I[1, b]") == ["+I[2, x]", "+I[1, b]"]
    assert run(op, "+I[1, c]\n+I[1, d]") == ["-U[1, b]", "+U[1, d]"]


@settings(max_examples=60, deadline=None)
@given(
    changes=st.lists(
        st.tuples(st.booleans(), st.integers(0, 3), st.sampled_from("xyz")), max_size=30
    ),
    mini=st.booleans(),
)
def test_normalized_changelog_describes_the_last_row_per_key(tmp_path_factory, changes, mini):
    """Upserts (+U) and deletes (-D with only the key) in; the table of last rows out."""
    from deltaflow.formats.changelog import Batch, apply_changelog
    from deltaflow.state.backend import StateBackend

    batch = Batch()
    table: dict[int, tuple] = {}
    for upsert, key, value in changes:
        if upsert:
            batch.append(2, (key, value))
            table[key] = (key, value)
        else:
            batch.append(3, (key, None))
            table.pop(key, None)
    backend = StateBackend(tmp_path_factory.mktemp("s"))
    try:
        op = ChangelogNormalizeOperator(normalize(), backend, RuntimeContext(mini_batch=mini))
        out = Batch()
        for i in range(0, len(batch), 4):
            out.extend(op.process(Batch(batch.kinds[i : i + 4], batch.rows[i : i + 4])))
            backend.commit({})
        assert apply_changelog(out.kinds, out.rows) == sorted(table.values())
    finally:
        backend.close()
