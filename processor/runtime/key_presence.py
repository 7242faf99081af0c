"""Deletes and updates of keys a changelog source never inserted ('deltaflow.unknown-key-delete').

Flink lets a -D or -U for a primary key it never saw through (an aggregate ignores a
retraction of a group it has no state for), so a lost or reordered CDC event goes
unnoticed. ``SET 'deltaflow.unknown-key-delete'`` makes deltaflow notice:

- ``ignore`` (the default): Flink's behaviour, nothing is checked and nothing costs;
- ``count``: Flink's behaviour, and each such record is counted and reported;
- ``policy``: the source table's bad-input policy decides, as for an unreadable
  record: ``fail`` (the job stops naming topic, partition, offset and key),
  ``skip`` (``<format>.ignore-parse-errors``: dropped and counted) or
  ``dead-letter`` (``deadletter.topic``: the raw record goes there).

The check needs to know every live key, so it applies to ``kafka`` sources with a
changelog format (-D/-U in the data), a PRIMARY KEY among the value's columns, and
a key set that followed the topic from its beginning: the job's first start read
from 'earliest-offset'. Any other source (started from 'latest-offset', a timestamp,
group or specific offsets, or a state directory that ran without the check) may
legitimately delete rows it never read: its unknown keys are counted, not refused.

``PresenceDecoder`` wraps the source's value decoder, where the raw records are
still at hand: it decodes the batch, follows it in the source's ``KeySet``
(``deltaflow.state.key_presence``), and acts on the records holding an unknown key.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from operator import itemgetter
from typing import Protocol

from deltaflow.connectors.layout import decode_with_origins
from deltaflow.formats.changelog import Batch, RawBatch, RowKind
from deltaflow.formats.errors import FormatError
from deltaflow.processor.settings import UNKNOWN_KEY_DELETE_MODES, unknown_key_delete_mode
from deltaflow.state.key_presence import KeySet

OPTION = "deltaflow.unknown-key-delete"
MODES = UNKNOWN_KEY_DELETE_MODES
RETRACTIONS = frozenset({RowKind.UPDATE_BEFORE, RowKind.DELETE})
REPORT_EVERY_S = 10.0


presence_mode = unknown_key_delete_mode


def _keys(rows: list[tuple], key_at: list[int]) -> list[tuple]:
    """The primary key tuple of each row (built in C, no per-row Python call)."""
    if len(key_at) == 1:
        return list(zip(map(itemgetter(key_at[0]), rows)))
    return list(map(itemgetter(*key_at), rows))


class PresenceDecoder:
    """A source's value decoder that also checks retractions; see the module docstring."""

    def __init__(self, inner, keys: KeySet, key_at: list[int], policy: str, replays: bool):
        self.inner, self.keys, self.policy = inner, keys, policy
        self.changelog_mode = inner.changelog_mode
        self.dead_letters = inner.dead_letters  # the same list: the source routes both
        self.key_at = key_at
        self.unknown = 0  # records with a retraction of an unknown key, in every mode
        self._replays = replays  # the source may decode a batch again, one record at a time
        self._last: tuple[str, int, int, int, dict[int, str | None]] | None = None

    @property
    def skipped(self) -> int:
        return self.inner.skipped

    @skipped.setter
    def skipped(self, value: int) -> None:
        self.inner.skipped = value

    @property
    def filtered(self) -> int:  # 0: no pre-filter where retractions of unknown keys are checked
        return self.inner.filtered

    @property
    def logical_messages(self) -> int:
        return self.inner.logical_messages

    def decode(self, raw: RawBatch) -> Batch:
        if self._replays and self._is_replay(raw):
            return self._replay(raw)
        skipped, dead = self.inner.skipped, len(self.dead_letters)
        batch = self.inner.decode(raw)
        if not batch:
            return batch
        keys = _keys(batch.rows, self.key_at)
        bad = self.keys.apply(batch.kinds, keys, self.policy != "pass")
        verdicts: dict[int, str | None] = {}
        if self._replays:
            self._last = (raw.topic, raw.partition, raw.offsets[0], raw.offsets[-1], verdicts)
        if not bad:
            return batch
        origins = self._origins(raw, skipped, dead)
        for row in bad:
            verdicts[raw.offsets[origins[row]]] = self._act(raw, origins[row], keys[row])
        if self.policy == "pass":
            return batch
        out = Batch()
        for kind, row, origin in zip(batch.kinds, batch.rows, origins, strict=True):
            if raw.offsets[origin] not in verdicts:
                out.append(kind, row)
        return out

    def _origins(self, raw: RawBatch, skipped: int, dead: int) -> list[int]:
        """The record (index into ``raw``) of each row: the batch is decoded again, rarely
        (only a batch with an unknown key), with the inner decoder's counts put back first
        so that its own refusals count once."""
        self.inner.skipped = skipped
        del self.dead_letters[dead:]
        return decode_with_origins(self.inner, raw)[1]

    def _act(self, raw: RawBatch, i: int, key: tuple) -> str | None:
        """Count one record with an unknown key; fail, or return its dead letter reason."""
        self.unknown += 1
        reason = f"a delete or update of primary key {key!r}, which the job never saw"
        if self.policy == "fail":
            raise FormatError(
                reason,
                topic=raw.topic,
                partition=raw.partition,
                offset=raw.offsets[i],
                hint=f"if deletes of unseen rows are expected, SET '{OPTION}' = 'count', or let "
                "the table skip them ('<format>.ignore-parse-errors') or dead-letter them "
                "('deadletter.topic')",
            )
        if self.policy == "dead-letter":
            self.dead_letters.append(
                (raw.topic, raw.partition, raw.offsets[i], raw.values[i], reason)
            )
            return reason
        return None

    def _is_replay(self, raw: RawBatch) -> bool:
        last = self._last
        return (
            last is not None
            and len(raw) == 1
            and (raw.topic, raw.partition) == last[:2]
            and last[2] <= raw.offsets[0] <= last[3]
        )

    def _replay(self, raw: RawBatch) -> Batch:
        """One record of the last batch decoded again (``decode_with_origins`` matching rows
        to records): its verdict stands, the key set is not changed twice."""
        verdicts = self._last[4]  # type: ignore[index]
        offset = raw.offsets[0]
        if offset not in verdicts or self.policy == "pass":
            return self.inner.decode(raw)
        if verdicts[offset] is not None:
            self.dead_letters.append(
                (raw.topic, raw.partition, offset, raw.values[0], verdicts[offset])
            )
        return Batch()


def install(source, scan, backend, mode: str, fresh: bool) -> PresenceDecoder | None:
    """Wraps ``source``'s value decoder when the check applies to it (module docstring)."""
    layout = getattr(source, "layout", None)
    if mode == "ignore" or layout is None or getattr(source, "opts", None) is None:
        return None
    if source.opts.connector != "kafka" or not scan.primary_key:
        return None
    if not RETRACTIONS & source.value_decoder.changelog_mode:
        return None
    names = [n for n, _ in layout.value_spec.physical]
    if not all(k in names for k in scan.primary_key):
        return None
    types = [layout.value_spec.physical[names.index(k)][1] for k in scan.primary_key]
    keys = KeySet(backend, f"source{scan.node_id}", types)
    if fresh and source.start_mode.kind == "earliest-offset":
        keys.mark_complete()
    policy = layout.value_spec.on_error if mode == "policy" else "pass"
    if policy != "pass" and not keys.is_complete():
        policy = "pass"
        print(
            f"deltaflow: table '{source.opts.table}': deletes and updates of primary keys never "
            "seen are counted, not refused: the job did not read the topic from its beginning "
            "('earliest-offset' at its first start), so it may not have seen every row",
            file=sys.stderr,
        )
    key_at = [names.index(k) for k in scan.primary_key]
    wrapper = PresenceDecoder(source.value_decoder, keys, key_at, policy, layout.needs_origin)
    source.value_decoder = wrapper
    return wrapper


class KeyCheck(Protocol):
    """A source's check of unknown primary keys (``PresenceDecoder``, or the normalizer's
    of ``normalize_source.py``) as the report reads it."""

    unknown: int  # retractions of keys never seen so far
    policy: str  # what is done with them (a key of _DONE)


class PresenceReport:
    """One line per table when its count of unknown keys grew, at most every 10 s."""

    def __init__(self, checks: Mapping[str, KeyCheck], out=None) -> None:
        self.checks, self.out = checks, out or sys.stderr
        self.said: dict[str, int] = {}
        self.at = 0.0

    def tick(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.at < REPORT_EVERY_S:
            return
        self.at = now
        for table, check in self.checks.items():
            if check.unknown > self.said.get(table, 0):
                self.said[table] = check.unknown
                print(
                    f"deltaflow: table '{table}': {check.unknown} delete(s) or update(s) of "
                    f"primary keys never seen so far ({_DONE[check.policy]})",
                    file=self.out,
                    flush=True,
                )


_DONE = {
    "pass": "passed on as Flink does",
    # before-images from state (normalize_source): nothing stored, nothing to retract
    "normalized": "an update became an insert, a delete retracted nothing",
    "skip": "skipped",
    "dead-letter": "sent to the dead-letter topic",
    "fail": "stopped",
}
