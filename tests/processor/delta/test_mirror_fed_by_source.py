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
