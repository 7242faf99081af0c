"""Before-images from state (processor/runtime/normalize.py), as changelogs written as data.

Inputs are what a Debezium decoder hands on when before-images come from state: +I for a
create, a lone +U for an update without a before-image (REPLICA IDENTITY DEFAULT), a -U/+U
pair for one with it, -D with the message's (maybe partial) before-image, and -D of
TRUNCATED for a truncate. Expected outputs follow the changelog rules: every -U/-D is a row
the output added before, and applying the output gives the table the changes describe.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import lines, parse_changelog, show, types

from deltaflow.formats.changelog import (
    DELETE,
    INSERT,
    TRUNCATED,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Batch,
    apply_changelog,
)
from deltaflow.processor.runtime.normalize import Normalizer
from deltaflow.processor.runtime.normalize_source import TableStore
from deltaflow.state.backend import StateBackend

T = types("INT", "STRING", "INT")
P = "__debezium_unavailable_value"


def _normalizer(backend, refuse: bool = False) -> Normalizer:
    store = TableStore(backend, "n:last", [0], T)
    return Normalizer(store, [0], refuse_unknown=refuse)


def _run(norm: Normalizer, text: str, last=None):
    batch = parse_changelog(text, T)
    result = norm.run(batch.kinds, batch.rows, last_deleted=last)
    norm.commit(result)
    return result


def test_updates_without_before_image_and_partial_deletes(backend):
    norm = _normalizer(backend)
    result = _run(norm, "+I[1, a, 10]\n+I[2, b, 5]\n+U[1, c, 20]\n-D[2, null, 0]\n+U[1, d, 30]")
    assert show(result.out, T) == lines(
        """
        +I[1, a, 10]
        +I[2, b, 5]
        -U[1, a, 10]
        +U[1, c, 20]
        -D[2, b, 5]
        -U[1, c, 20]
        +U[1, d, 30]
    """.replace("        ", "")
    )
    # the next batch reads the stored rows (written back to LMDB)
    result = _run(norm, "-D[1, null, 0]")
    assert show(result.out, T) == ["-D[1, d, 30]"]
    assert result.unknown == 0


def test_message_before_image_is_never_emitted(backend):
    """A -U/+U pair counts by its +U: the -U comes from state even when the message's
    before-image disagrees with it."""
    norm = _normalizer(backend)
    _run(norm, "+I[1, a, 10]")
    result = _run(norm, "-U[1, wrong, 0]\n+U[1, b, 11]")
    assert show(result.out, T) == ["-U[1, a, 10]", "+U[1, b, 11]"]


def test_create_of_a_stored_key_is_an_update_and_a_repeat_is_dropped(backend):
    norm = _normalizer(backend)
    result = _run(norm, "+I[1, a, 10]\n+I[1, a, 10]\n+I[1, b, 10]")
    assert show(result.out, T) == ["+I[1, a, 10]", "-U[1, a, 10]", "+U[1, b, 10]"]


def test_update_moving_the_key_deletes_the_old_key(backend):
    norm = _normalizer(backend)
    result = _run(norm, "+I[1, a, 10]\n-U[1, a, 10]\n+U[7, a, 10]")
    assert show(result.out, T) == ["+I[1, a, 10]", "-D[1, a, 10]", "+I[7, a, 10]"]
    assert apply_changelog(result.out.kinds, result.out.rows) == [(7, "a", 10)]


def test_placeholder_takes_the_stored_value(backend):
    norm = _normalizer(backend)
    _run(norm, "+I[1, long text, 10]")
    result = _run(norm, f"+U[1, {P}, 11]")
    assert show(result.out, T) == ["-U[1, long text, 10]", "+U[1, long text, 11]"]
    assert not result.problems
    # the stored row holds the value, not the placeholder
    assert _run(norm, "-D[1, null, 0]").out.rows == [(1, "long text", 11)]


def test_primary_key_change_fills_the_create_from_the_deleted_row(backend):
    """Debezium sends a primary-key change as a delete of the old key and a create of the
    new one, whose untouched TOASTed columns are placeholders; also across batches."""
    norm = _normalizer(backend)
    _run(norm, "+I[1, long text, 10]")
    deleted = _run(norm, "-D[1, null, 0]")
    assert deleted.last_deleted == (1, "long text", 10)
    result = _run(norm, f"+I[2, {P}, 10]", last=deleted.last_deleted)
    assert show(result.out, T) == ["+I[2, long text, 10]"]
    assert result.last_deleted is None


def test_placeholder_with_nothing_to_take_it_from_is_a_problem(backend):
    norm = _normalizer(backend)
    batch = parse_changelog(f"+I[5, x, 1]\n+I[3, {P}, 1]\n+I[4, y, 2]", T)
    result = norm.run(batch.kinds, batch.rows)
    assert [p.row for p in result.problems] == [1]
    assert "holds no earlier row" in result.problems[0].reason
    again = norm.run(batch.kinds, batch.rows, drop=frozenset({1}))
    assert not again.problems
    assert show(again.out, T) == ["+I[5, x, 1]", "+I[4, y, 2]"]
    assert all(P not in row for row in again.out.rows)


def test_truncate_retracts_every_row_then_rows_come_back(backend):
    norm = _normalizer(backend)
    _run(norm, "+I[1, a, 10]\n+I[2, b, 20]\n+I[3, c, 30]\n-D[3, null, 0]")
    batch = parse_changelog("+I[4, d, 40]\n+U[1, e, 11]", T)
    batch.append(DELETE, TRUNCATED)
    batch.extend(parse_changelog("+I[2, again, 21]", T))
    result = norm.run(batch.kinds, batch.rows)
    norm.commit(result)
    out = show(result.out, T)
    assert out[:3] == ["+I[4, d, 40]", "-U[1, a, 10]", "+U[1, e, 11]"]
    assert sorted(out[3:6]) == ["-D[1, e, 11]", "-D[2, b, 20]", "-D[4, d, 40]"]
    assert out[6:] == ["+I[2, again, 21]"]
    assert norm.store.all_rows() == [(2, "again", 21)]


def test_changes_of_unknown_keys_are_counted_or_refused(backend):
    norm = _normalizer(backend)
    result = _run(norm, "+U[8, a, 1]\n-D[9, null, 0]")
    assert show(result.out, T) == ["+I[8, a, 1]"]  # the row exists now: an upsert
    assert result.unknown == 2
    refusing = Normalizer(norm.store, [0], refuse_unknown=True)
    batch = parse_changelog("-D[9, null, 0]\n+U[10, b, 1]\n-D[8, null, 0]", T)
    result = refusing.run(batch.kinds, batch.rows)
    assert [p.row for p in result.problems] == [0, 1]
    assert show(result.out, T) == ["-D[8, a, 1]"]


def test_output_applies_to_the_table_the_changes_describe(backend):
    """A longer history in small batches: the output's table is the last row per key."""
    norm = _normalizer(backend)
    steps = [
        "+I[1, a, 1]\n+I[2, b, 2]",
        "+U[1, a2, 1]\n-D[2, null, 0]\n+I[2, b2, 3]",
        "-U[2, b2, 3]\n+U[5, b2, 3]\n+I[1, a2, 1]",
        f"+U[5, {P}, 4]\n-D[1, null, 0]",
    ]
    out = Batch()
    for step in steps:
        out.extend(_run(norm, step).out)
    assert apply_changelog(out.kinds, out.rows) == [(5, "b2", 4)]


def test_a_null_key_is_a_key_apart_from_a_truncate(backend):
    """A row with a NULL primary key value is stored under that key; a truncate in the same
    batch retracts it like any other row (a truncate is not mistaken for the NULL key)."""
    norm = _normalizer(backend)
    batch = parse_changelog("+I[null, a, 1]\n+I[1, b, 2]\n+U[null, c, 3]", T)
    batch.append(DELETE, TRUNCATED)
    result = norm.run(batch.kinds, batch.rows)
    out = show(result.out, T)
    assert out[:4] == ["+I[null, a, 1]", "+I[1, b, 2]", "-U[null, a, 1]", "+U[null, c, 3]"]
    assert sorted(out[4:]) == ["-D[1, b, 2]", "-D[null, c, 3]"]
    norm.commit(result)
    assert norm.store.all_rows() == []


def test_rows_come_from_lmdb_after_a_commit_and_a_discard_forgets_the_rest(backend):
    """The store keeps rows in memory and writes them at the checkpoint: a store opened
    afresh reads the committed rows from LMDB, and a roll-back (the backend's discard)
    drops the changes after the last commit."""
    norm = _normalizer(backend)
    _run(norm, "+I[1, a, 10]\n+I[2, b, 20]")
    backend.commit()
    _run(norm, "+U[1, x, 11]\n-D[2, null, 0]\n+I[3, c, 30]")
    backend.discard()
    assert sorted(norm.store.all_rows()) == [(1, "a", 10), (2, "b", 20)]
    result = _run(norm, "+U[1, y, 12]\n-D[2, null, 0]")
    assert show(result.out, T) == ["-U[1, a, 10]", "+U[1, y, 12]", "-D[2, b, 20]"]


def test_composite_primary_key(backend):
    """A two-column key (its row key a tuple): updates, a key move, and a refused update
    of an unseen key named by its tuple."""
    t2 = types("INT", "INT", "STRING")
    store = TableStore(backend, "n2:last", [0, 1], t2)
    norm = Normalizer(store, [0, 1])
    batch = parse_changelog("+I[1, 1, a]\n+I[1, 2, b]\n+U[1, 1, c]\n-U[1, 2, b]\n+U[2, 2, b]", t2)
    result = norm.run(batch.kinds, batch.rows)
    norm.commit(result)
    assert show(result.out, t2) == lines(
        """
        +I[1, 1, a]
        +I[1, 2, b]
        -U[1, 1, a]
        +U[1, 1, c]
        -D[1, 2, b]
        +I[2, 2, b]
    """.replace("        ", "")
    )
    backend.commit()
    refusing = Normalizer(TableStore(backend, "n2:last", [0, 1], t2), [0, 1], refuse_unknown=True)
    batch = parse_changelog("-D[1, 1, null]\n+U[5, 6, z]", t2)
    result = refusing.run(batch.kinds, batch.rows)
    assert show(result.out, t2) == ["-D[1, 1, c]"]
    assert len(result.problems) == 1 and "primary key (5, 6)" in result.problems[0].reason


KEY_VALUES = {
    "STRING": ["b", "a", "é"],
    "DECIMAL(10, 2)": [Decimal("1.50"), Decimal("-2.00"), Decimal("3.25")],
    "TIMESTAMP(3)": [dt.datetime(2026, 1, 1), dt.datetime(2025, 1, 1, 1, 2, 3, 4000), dt.datetime(2027, 5, 5)],
    "BYTES": [b"\x00", b"ab", b"\xff"],
    "BIGINT": [-5, 2**40, 0],
    "DATE": [dt.date(2026, 1, 2), dt.date(1999, 1, 1), dt.date(2030, 3, 3)],
}  # fmt: skip


@pytest.mark.parametrize("key_at", [[1], [1, 0]])
@pytest.mark.parametrize("type_name", list(KEY_VALUES))
def test_keys_of_each_type_survive_a_restart(tmp_path, type_name, key_at):
    """Rows stored under a key of each type (alone, or with a second column; not leading
    the row) are read back by a store opened on the committed LMDB environment."""
    values = KEY_VALUES[type_name]
    t3 = types("INT", type_name, "STRING")
    with StateBackend(tmp_path / "s") as backend:
        norm = Normalizer(TableStore(backend, "k:last", key_at, t3), key_at)
        result = norm.run([INSERT] * 3, [(i, v, "r") for i, v in enumerate(values)])
        norm.commit(result)
        backend.commit()
    with StateBackend(tmp_path / "s") as backend:
        norm = Normalizer(TableStore(backend, "k:last", key_at, t3), key_at)
        result = norm.run([UPDATE_AFTER, DELETE], [(0, values[0], "s"), (1, values[1], None)])
        assert list(zip(result.out.kinds, result.out.rows, strict=True)) == [
            (UPDATE_BEFORE, (0, values[0], "r")),
            (UPDATE_AFTER, (0, values[0], "s")),
            (DELETE, (1, values[1], "r")),
        ]
        assert result.unknown == 0
        norm.commit(result)
        backend.commit()
        assert sorted(norm.store.all_rows()) == [(0, values[0], "s"), (2, values[2], "r")]


@pytest.mark.parametrize("placeholder", [P, "n/a", "###", "ZZ"])
def test_raw_placeholder_search_finds_each_form_and_only_them(placeholder) -> None:
    """The search the source runs on a batch's raw messages (before its rarest byte, then
    the placeholder) finds the placeholder as JSON text, and its base64 form (a BYTES
    column) only for a table with a BYTES column."""
    import base64
    import json

    plain = [json.dumps({"op": "u", "after": {"id": i, "s": "xyz q"}}).encode() for i in range(50)]
    text = json.dumps({"op": "u", "after": {"id": 1, "s": placeholder}}).encode()
    b64 = base64.b64encode(placeholder.encode())
    encoded = b'{"op": "u", "after": {"id": 1, "b": "' + b64 + b'"}}'
    for binary in (False, True):
        norm = Normalizer(None, [0], placeholder, binary=binary)  # type: ignore[arg-type]
        assert not norm.may_hold_placeholders([*plain, None])
        assert norm.may_hold_placeholders([*plain, text, None])
        assert norm.may_hold_placeholders([*plain, encoded]) is binary


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(
        st.lists(
            st.tuples(
                st.sampled_from([INSERT, INSERT, INSERT, UPDATE_AFTER, DELETE]),
                st.integers(0, 12),
                st.integers(0, 3),
            ),
            max_size=8,
        ),
        max_size=6,
    ),
    last=st.booleans(),
)
def test_a_batch_of_creates_of_new_keys_is_handed_on_as_the_loop_would(
    tmp_path_factory, batches, last
):
    """``_Segment._creates`` (creates of new keys only, emitted as they are, in C) against
    the per-change loop alone, over batches that are all creates and batches that are not
    (an update, a delete, a key twice, a stored key): the same output, origins, rows
    stored and last deleted row, batch by batch."""
    from deltaflow.processor.runtime import normalize

    seen = []
    creates = normalize._Segment._creates
    try:
        for fast in (True, False):
            normalize._Segment._creates = creates if fast else (lambda self, kinds, rows: False)
            seen.append(_normalized(tmp_path_factory.mktemp("n"), batches, last))
    finally:
        normalize._Segment._creates = creates
    assert seen[0] == seen[1]


def _normalized(path, batches, last: bool) -> list:
    """Each batch's output, origins and last deleted row, then the rows stored."""
    with StateBackend(path) as backend:
        norm = _normalizer(backend)
        got: list = []
        deleted = (99, "z", 0) if last else None
        for changes in batches:
            kinds = [kind for kind, _, _ in changes]
            rows = [(key, "v", value) for _, key, value in changes]
            # no placeholder in the batch (``may_hold_placeholders``), as most batches
            result = norm.run(kinds, rows, last_deleted=deleted, placeholders=False)
            norm.commit(result)
            deleted = result.last_deleted
            got.append((result.out.kinds, result.out.rows, result.origins, deleted))
        got.append(sorted(row for _, row in norm.store.table.items()))
        return got
