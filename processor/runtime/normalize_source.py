"""A source whose before-images come from state: the value decoder wrapped by the
``Normalizer`` (``normalize``), with the rows kept per primary key in LMDB.

``NormalizingDecoder`` wraps the source's value decoder, where the raw records are still at
hand, as ``key_presence.PresenceDecoder`` does: the inner decoder hands on what the
messages hold (``accept_partial_images``: an update's +U without its -U, a delete's partial
before-image, a truncate as a -D of ``TRUNCATED``), the normalizer makes the changelog
exact, and a change it cannot make exact (a placeholder with no stored value; an update or
delete of a key never seen, when refused) goes to the table's bad-input policy like an
unreadable record: ``fail`` stops naming topic, partition and offset, ``skip`` drops and
counts the record, ``dead-letter`` sends it to the dead-letter topic.

State, in the job's LMDB environment and so in the checkpoint's one write transaction:
``source<id>:ChangelogNormalize:last`` (the last row per primary key, an ``IndexedTable``
without indexes, keyed as a mirror is; when delta joins or delta aggregates mirror the
scan, their mirror instead: the table is stored once), and
``source<id>:ChangelogNormalize:deleted`` (per topic partition, the row its last change
deleted, when that change was a delete: a primary-key change is a delete and a create,
and the create's placeholders take the deleted row's values, also across a checkpoint;
only for a source of one partition, where the delete right before is the key change's
own: in a topic of several partitions the two keys may hash apart, and a create with a
placeholder is then bad input, never filled from an unrelated row).

The pre-filter (``prefilter``, the WHERE tests of the scan's only consumer, a Calc:
``processor/planner/prefilter.state_prefilters``) is exact here too, by this rule. The
decoder builds an after-image failing it as a ``Rejected`` row: the key, the columns the
tests read and every character and binary column are the image's, the columns a
converter reads (DECIMAL, temporal) None. It is normalized and stored as any row (the
normalizer still knows the key exists: a later update of it gives -U/+U, not +I, and a
delete of it is no unknown key) but never emitted, because the Calc drops any row that
fails a test; a -U/-D of a stored ``Rejected`` row is left out for the same reason.
A stored row that passed and a new image that fails give the -U/-D of the stored row
alone; a key that never passed gives nothing downstream. A placeholder in a later image
takes its value from the stored row, so the stored row keeps every column a placeholder
can stand in (character and binary ones); and a batch that may hold a placeholder
(``may_hold_placeholders``) is decoded without the pre-filter, since a placeholder in a
tested column cannot be judged from the message. A row read back from LMDB (after a
restart, or past ``KEEP_ROWS``) is a plain tuple: it is emitted as any row, and the
Calc drops it, its tested columns being the image's. The plan's fingerprint covers the
WHERE, so state written under another filter is refused. Not with the delta operators'
mirror as the store (they read its rows), nor a layout assembling rows from records.

Unknown keys follow ``'deltaflow.unknown-key-delete'`` (``key_presence``): counted with
``count`` and ``policy``, refused by the table's policy with ``policy`` once the state
followed the topic from its beginning; the normalizer stands in for the key set there.
"""

from __future__ import annotations

import sys

from deltaflow.connectors.layout import decode_with_origins
from deltaflow.formats.changelog import Batch, RawBatch
from deltaflow.formats.errors import ConnectorError, FormatError
from deltaflow.formats.prefilter import PreFilter
from deltaflow.formats.types import BINARY_ROOTS
from deltaflow.processor.runtime.base import row_shape
from deltaflow.processor.runtime.key_presence import RETRACTIONS
from deltaflow.processor.runtime.mirror import Mirror, opened_mirror
from deltaflow.processor.runtime.normalize import PLACEHOLDER, Normalizer, Problem, Result
from deltaflow.state.indexed import stored_columns
from deltaflow.state.key_presence import COMPLETE_TABLE
from deltaflow.state.values import TypedValues


class TableStore:
    """The last row per primary key in an ``IndexedTable`` without indexes (the delta
    operators' mirror without them): rows kept in memory by row key, the keys of new
    rows past the largest stored integer key absent without a read, and each key's
    final row encoded once per batch and written at the checkpoint."""

    def __init__(self, backend, name: str, key_at: list[int], row_types: list) -> None:
        stored = stored_columns(list(key_at), len(row_types))
        shape = row_shape([row_types[c] for c in stored])
        values = None if shape is None else TypedValues(shape)
        self.table = backend.indexed(name, list(key_at), {}, list(row_types), values)

    def rows(self, keys: list) -> dict[object, tuple | None]:
        return self.table.rows(keys)

    def all_rows(self) -> list[tuple]:
        return [row for _, row in self.table.items()]

    def write(self, result: Result) -> None:
        self.table.put_rows(result.before, result.rows)


class MirrorStore:
    """The last row per primary key in the delta operators' mirror of the scan (one copy of
    the table): the source applies its normalized batches to it (``Mirror``)."""

    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror

    def rows(self, keys: list) -> dict[object, tuple | None]:
        return self.mirror.table.rows(keys)

    def all_rows(self) -> list[tuple]:
        return [row for _, row in self.mirror.table.items()]

    def write(self, result: Result) -> None:
        if result.out:
            self.mirror.apply_normalized(result.out.rows, result.before, result.rows)


class NormalizingDecoder:
    """A source's value decoder whose before-images come from state (module docstring)."""

    def __init__(
        self, inner, normalizer: Normalizer, on_error: str, deleted, policy: str, single=None
    ):
        self.inner, self.normalizer, self.on_error = inner, normalizer, on_error
        # whether the source reads one partition of a topic: only then is the delete before a
        # key change's create its own (Debezium sends the two in a row to one topic; the
        # two keys may hash to different partitions)
        self.single = single or (lambda topic: True)
        self.changelog_mode = inner.changelog_mode
        self.dead_letters = inner.dead_letters  # the same list: the source routes both
        self.deleted = deleted  # (topic, partition) -> the row its last change deleted
        self._deleted: dict[tuple[str, int], tuple | None] = {}
        self.policy = policy  # for unknown keys, as PresenceReport reads it
        self.unknown = 0  # updates and deletes of keys never stored
        self.withheld = 0  # Rejected rows left out of the output (the Calc drops them)
        self.filters = hasattr(inner, "filter_images")  # a pre-filter it may turn off

    @property
    def skipped(self) -> int:
        return self.inner.skipped

    @skipped.setter
    def skipped(self, value: int) -> None:
        self.inner.skipped = value

    @property
    def filtered(self) -> int:  # counted as read (events in), as the rows the Calc drops
        return self.inner.filtered + self.withheld

    @property
    def logical_messages(self) -> int:  # Debezium's op "m", skipped and counted
        return self.inner.logical_messages

    def decode(self, raw: RawBatch) -> Batch:
        return self._normalized(raw, None)[0]

    def decode_origins(self, raw: RawBatch) -> tuple[Batch, list[int]]:
        """``decode`` with the record (index into ``raw``) of each row, for a layout that
        assembles rows from records (``connectors.layout.decode_with_origins``)."""
        out, origins = self._normalized(raw, [])
        return out, origins  # type: ignore[return-value]

    def _normalized(self, raw: RawBatch, want: list | None) -> tuple[Batch, list[int] | None]:
        skipped, dead = self.inner.skipped, len(self.dead_letters)
        truncates = self.inner.truncates
        norm = self.normalizer
        fill = norm.may_hold_placeholders(raw.values)
        if self.filters:
            self.inner.filter_images(not fill)
        if want is None:
            batch, origins = self.inner.decode(raw), None
        else:
            batch, origins = decode_with_origins(self.inner, raw)
        if not batch:
            return batch, origins
        part = (raw.topic, raw.partition)
        last = self._last_deleted(part)
        cut = self.inner.truncates != truncates
        linked = self.single(raw.topic)
        run = lambda drop=frozenset(): norm.run(  # noqa: E731
            batch.kinds, batch.rows, drop=drop, placeholders=fill, last_deleted=last,
            truncates=cut, key_changes=linked,
        )  # fmt: skip
        result = run()
        self.unknown += result.unknown  # refused ones too
        if result.problems:
            if origins is None:
                origins = self._origins(raw, skipped, dead)
            result = run(self._act(raw, result.problems, origins))
        norm.commit(result)
        self.withheld += result.withheld
        self._remember(part, result)
        if origins is None:
            return result.out, None
        return result.out, [origins[i] for i in result.origins]

    def _origins(self, raw: RawBatch, skipped: int, dead: int) -> list[int]:
        """The record of each row: the batch is decoded again, rarely (a batch with a
        problem), with the inner decoder's counts put back first so it counts once."""
        self.inner.skipped = skipped
        del self.dead_letters[dead:]
        return decode_with_origins(self.inner, raw)[1]

    def _act(self, raw: RawBatch, problems: list[Problem], origins: list[int]) -> frozenset[int]:
        """The table's policy for each record with a problem; the rows to leave out."""
        bad: dict[int, Problem] = {}
        for problem in problems:
            bad.setdefault(origins[problem.row], problem)
        for record, problem in bad.items():
            if self.on_error == "fail":
                raise FormatError(
                    problem.reason,
                    topic=raw.topic,
                    partition=raw.partition,
                    offset=raw.offsets[record],
                    payload=raw.values[record],
                    hint=problem.hint,
                )
            if self.on_error == "dead-letter":
                self.dead_letters.append(
                    (raw.topic, raw.partition, raw.offsets[record], raw.values[record],
                     problem.reason)
                )  # fmt: skip
            else:
                self.inner.skipped += 1
        return frozenset(i for i, record in enumerate(origins) if record in bad)

    def _last_deleted(self, part: tuple[str, int]) -> tuple | None:
        if not self.single(part[0]):
            return None
        if part not in self._deleted:
            row = self.deleted.get(part)
            self._deleted[part] = None if row is None else tuple(row)
        return self._deleted[part]

    def _remember(self, part: tuple[str, int], result: Result) -> None:
        row = result.last_deleted
        if row == self._deleted.get(part):
            return
        self._deleted[part] = row
        if row is None:
            self.deleted.delete(part)
        else:
            self.deleted.put(part, row)


def install(
    source, scan, backend, mode: str, fresh: bool, prefilter: PreFilter | None = None
) -> NormalizingDecoder:
    """Wraps the value decoder of ``scan``'s source (a Kafka or filesystem source);
    ``prefilter``: the scan's pre-filter in state mode (module docstring)."""
    layout = source.layout
    spec = layout.value_spec
    attr = "value_decoder" if hasattr(source, "value_decoder") else "decoder"
    inner = getattr(source, attr)
    names = [n for n, _ in spec.physical]
    missing = [k for k in scan.primary_key if k not in names]
    if missing or not RETRACTIONS & inner.changelog_mode:
        raise ConnectorError(
            f"table '{source.opts.table}': before-images from state need the primary key "
            f"columns in the message value ({', '.join(missing)} are not); set "
            f"'{layout.value_format}.before-image' = 'message'"
        )
    key_at = [names.index(k) for k in scan.primary_key]
    row_types = [t for _, t in spec.physical] + [t for _, t in spec.metadata]
    name = f"source{scan.node_id}:ChangelogNormalize"
    mirror = opened_mirror(backend, f"{scan.node_id}:Mirror:{scan.table}")
    store: TableStore | MirrorStore
    if mirror is not None and not layout.needs_origin:  # mirror rows are the value rows
        store = MirrorStore(mirror)
    else:
        store = TableStore(backend, f"{name}:last", key_at, row_types)
    refuse = mode == "policy" and _complete(backend, name, fresh, source)
    if mode == "policy" and not refuse:
        print(
            f"deltaflow: table '{source.opts.table}': updates and deletes of primary keys never "
            "seen are counted, not refused: the job did not read the topic from its beginning "
            "('earliest-offset' at its first start), so it may not have seen every row",
            file=sys.stderr,
        )
    placeholder = spec.options.get("unavailable-value-placeholder", PLACEHOLDER)
    binary = any(t.root in BINARY_ROOTS for t in row_types)  # base64 placeholders possible
    normalizer = Normalizer(store, key_at, placeholder, refuse_unknown=refuse, binary=binary)
    if isinstance(store, MirrorStore) or layout.needs_origin or not hasattr(inner, "filter_images"):
        prefilter = None  # a mirror's rows are read by the delta operators
    if prefilter is None:
        inner.accept_partial_images(list(scan.primary_key))  # before-images: the key alone
    else:
        inner.accept_partial_images(list(scan.primary_key), prefilter)
    policy = spec.on_error if refuse else "normalized"
    deleted = backend.table(f"{name}:deleted")
    bounds = getattr(source, "bounds", None)  # a Kafka source's partitions (files: one)
    single = None if bounds is None else (lambda topic: [t for t, _ in bounds].count(topic) <= 1)
    wrapper = NormalizingDecoder(inner, normalizer, spec.on_error, deleted, policy, single)
    setattr(source, attr, wrapper)
    return wrapper


def _complete(backend, name: str, fresh: bool, source) -> bool:
    """Whether the stored rows followed the topic from its beginning (key_presence)."""
    flags = backend.table(COMPLETE_TABLE, TypedValues(bool))
    start = getattr(source, "start_mode", None)  # files are read from their beginning
    if fresh and (start is None or start.kind == "earliest-offset"):
        flags.put((name,), True)
        return True
    return bool(flags.get((name,)))
