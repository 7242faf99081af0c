"""A mirror fed by its source's normalizer (before-images from state): the source applies
each batch it decodes, possibly several per poll (one per partition), and the delta
operators then see the table as it was before the whole batch the graph delivers."""

from __future__ import annotations

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.nodes import InputRef
from deltaflow.processor.plan import MirrorSide
from deltaflow.processor.runtime.mirror import Mirror, index_name, opened_mirror
from deltaflow.state.backend import StateBackend

INT = parse_type("INT")


def side() -> MirrorSide:
    projection = (InputRef(INT, 0), InputRef(INT, 1))
    return MirrorSide("7:Mirror:t", (0,), (1,), (0,), projection)


def test_before_images_span_every_batch_the_source_applied(tmp_path):
    with StateBackend(tmp_path / "s") as backend:
        mirror = Mirror.open(backend, side(), [INT, INT])
        assert opened_mirror(backend, "7:Mirror:t") is mirror
        mirror.apply(Batch([INSERT, INSERT], [(1, 10), (2, 10)]))  # before the normalizer
        mirror.apply_from_source([UPDATE_BEFORE, UPDATE_AFTER], [(1, 10), (1, 20)])
        mirror.apply_from_source([DELETE, INSERT], [(2, 10), (3, 20)])
        delivered = Batch(
            [UPDATE_BEFORE, UPDATE_AFTER, DELETE, INSERT], [(1, 10), (1, 20), (2, 10), (3, 20)]
        )
        mirror.apply(delivered)  # applied already: only the before-images are taken
        index = index_name((1,))
        before = mirror.lookup(index, [(10,), (20,)], before=delivered)
        assert [sorted(rows) for rows in before] == [[(1, 10), (2, 10)], []]
        now = mirror.lookup(index, [(10,), (20,)], before=None)
        assert [sorted(rows) for rows in now] == [[], [(1, 20), (3, 20)]]
        assert mirror.table.items() == [((1,), (1, 20)), ((3,), (3, 20))]
        mirror.apply(delivered)  # a second operator of the same batch: nothing again
        assert mirror.table.items() == [((1,), (1, 20)), ((3,), (3, 20))]


def test_a_normalized_batch_writes_what_replaying_it_writes(tmp_path):
    """``apply_normalized`` (the normalizer's rows before and after, by row key) leaves the
    mirror, its index and the before-images as replaying the batch's changes does; keys
    the batch left alone (a repeated create, an unknown delete) are not written."""
    from deltaflow.processor.runtime.normalize import Normalizer
    from deltaflow.processor.runtime.normalize_source import MirrorStore

    history = [
        ([INSERT, INSERT, INSERT], [(1, 10), (2, 10), (4, 30)]),
        ([UPDATE_AFTER, INSERT, DELETE, INSERT, DELETE], [(1, 20), (4, 30), (2, None), (3, 20), (9, None)]),
    ]  # fmt: skip
    seen = []
    for fed in ("normalized", "replayed"):
        with StateBackend(tmp_path / fed) as backend:
            mirror = Mirror.open(backend, side(), [INT, INT])
            norm = Normalizer(MirrorStore(mirror), [0])
            for kinds, rows in history:
                result = norm.run(kinds, rows)
                if fed == "normalized":
                    norm.commit(result)
                else:
                    mirror.apply_from_source(result.out.kinds, result.out.rows)
                delivered = Batch(result.out.kinds, result.out.rows)
                mirror.apply(delivered)  # the graph delivers each batch
            index = index_name((1,))
            seen.append((
                mirror.table.items(),
                mirror.lookup(index, [(10,), (20,), (30,)], before=delivered),
                mirror.lookup(index, [(10,), (20,), (30,)], before=None),
                sorted(mirror._before),
            ))  # fmt: skip
    assert seen[0] == seen[1]
    assert seen[0][0] == [((1,), (1, 20)), ((3,), (3, 20)), ((4,), (4, 30))]
    assert seen[0][3] == [1, 2, 3]  # of the last batch: 4 (repeated) and 9 (unknown) untouched


def test_keys_absent_before_and_after_a_batch_leave_no_row(tmp_path):
    """A key created and deleted in one batch, and a delete of a key never seen, in batches
    without a repeated create (written as absent, not sorted out): the mirror, its index and
    the lookups as before each batch are those of replaying the batch's changes."""
    from deltaflow.processor.runtime.normalize import Normalizer
    from deltaflow.processor.runtime.normalize_source import MirrorStore

    history = [
        ([INSERT, INSERT, DELETE], [(1, 10), (5, 10), (5, None)]),
        ([UPDATE_AFTER, DELETE, INSERT, DELETE], [(1, 20), (8, None), (6, 20), (6, None)]),
        ([INSERT, DELETE], [(6, 10), (1, None)]),
    ]
    seen = []
    for fed in ("normalized", "replayed"):
        with StateBackend(tmp_path / fed) as backend:
            mirror = Mirror.open(backend, side(), [INT, INT])
            norm = Normalizer(MirrorStore(mirror), [0])
            looked = []
            for kinds, rows in history:
                result = norm.run(kinds, rows)
                if fed == "normalized":
                    norm.commit(result)
                else:
                    mirror.apply_from_source(result.out.kinds, result.out.rows)
                delivered = Batch(result.out.kinds, result.out.rows)
                mirror.apply(delivered)
                index = index_name((1,))
                looked.append([
                    sorted(rows) for rows in mirror.lookup(index, [(10,), (20,)], before=delivered)
                ])  # fmt: skip
                backend.commit()
            seen.append((mirror.table.items(), looked, mirror.lookup(index, [(10,), (20,)], None)))
    assert seen[0] == seen[1]
    assert seen[0][0] == [((6,), (6, 10))]
    assert seen[0][1] == [[[], []], [[(1, 10)], []], [[], [(1, 20)]]]
