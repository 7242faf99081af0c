"""The Kafka source: assigned partitions, per-partition bounds, decoded batches.

Records are consumed in bulk, grouped into one ``RawBatch`` per partition (offset
order) and decoded once per batch. Positions are the next offset per partition.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from deltaflow.connectors import kafka_client, kafka_ranges
from deltaflow.connectors.dead_letters import DeadLetterWriter
from deltaflow.connectors.kafka_offsets import Bounds, Resolver, bounded_mode, startup_mode
from deltaflow.connectors.kafka_ranges import SettledBounds
from deltaflow.connectors.layout import Layout, assemble_rows, decode_with_origins, key_rows
from deltaflow.connectors.options import TableOptions
from deltaflow.connectors.patience import InFlight
from deltaflow.formats.changelog import Batch, RawBatch, RowKind

CLOSE_WAIT_S = 3.0  # the last group offset commit and the consumer's close, at most
# Turns one partition's decoded rows into the table's rows (upsert-kafka replaces it).
RowBuilder = Callable[[RawBatch, list], Batch]


class KafkaSource(SettledBounds):
    def __init__(self, opts: TableOptions, layout: Layout, conf: dict, start: str | None,
                 mode: frozenset[RowKind]) -> None:  # fmt: skip
        self.opts, self.layout, self.conf = opts, layout, conf
        self.changelog_mode = mode
        self.start_mode = startup_mode(opts, start)
        self.end_mode = bounded_mode(opts)
        self.policy = kafka_ranges.policy(opts)
        topics = opts.get("topic")
        pattern = opts.get("topic-pattern")
        if bool(topics) == bool(pattern):
            raise opts.error("set exactly one of option 'topic' or 'topic-pattern'")
        self.topics = [t.strip() for t in topics.split(";") if t.strip()] if topics else []
        self.pattern = opts.regex("topic-pattern")
        # as Flink: a group's offsets are committed on checkpoints unless switched off
        commit = opts.boolean("properties.commit.offsets.on.checkpoint", True)
        self.commit = bool(conf.get("group.id")) and commit
        self.bounds: dict[tuple[str, int], Bounds] = {}
        self.next: dict[tuple[str, int], int] = {}
        self.done: set[tuple[str, int]] = set()
        self.unsettled: set[tuple[str, int]] = set()  # bounds waiting for a fetch's high watermark
        self.topic_ids: dict[str, str] = {}  # topic -> id, checked at the next restart
        self.recreated: dict[str, str] = {}  # topic -> how its id changed since the checkpoint
        self.opened_at: dict[tuple[str, int], int] = {}
        self.eof_at: dict[tuple[str, int], int] = {}  # the last partition EOF's offset
        self.consumer = None
        self.dead_letter_writer = (
            DeadLetterWriter(opts, conf, layout.dead_letter_topic)
            if layout.dead_letter_topic
            else None
        )
        self._committing: list = []
        self.value_decoder, self.key_decoder = layout.decoders(opts.table)
        self.build: RowBuilder = self._build_rows
        # Flink's default: look for new partitions (and pattern topics) every 5 minutes
        self.discovery_ms = opts.duration_ms("scan.topic-partition-discovery.interval", 300_000)
        self._discovered_at = 0.0
        self._wants_keys = self.key_decoder is not None or bool(layout.dead_letter_topic)

    def open(self, resume: dict | None = None) -> None:
        self.consumer = kafka_client.consumer(self.opts, self.conf)
        try:
            resume = resume or {}
            self._assign(resume.get("offsets", {}), resume.get("ends", {}),
                         resume.get("topic_ids", {}))  # fmt: skip
        except BaseException:
            self.close()
            raise

    def _assign(self, saved: dict, ends: dict, ids: dict) -> None:
        """Assigns every partition at its saved, or else its startup, offset; a resumed
        bounded read keeps the end offsets it started with."""
        parts = kafka_client.list_partitions(self.consumer, self.opts, self.topics, self.pattern)
        if not parts and (self.end_mode.kind != "unbounded" or self.discovery_ms <= 0):
            raise self.opts.error(
                f"no topic matches 'topic-pattern' = '{self.opts.get('topic-pattern')}'"
            )
        resolver = Resolver(self.opts, self.conf, self.consumer, parts, self.policy)
        self._check_topic_ids(parts, ids)
        for tp in parts:
            offset = saved.get(tp[0], {}).get(str(tp[1]))
            if offset is not None and tp[0] in self.recreated:
                bounds = Bounds(offset, check="recreated")
            elif offset is not None:
                bounds = resolver.resumed(tp, offset)
            else:
                bounds = resolver.start(tp, self.start_mode)
            resolver.end(tp, bounds, self.end_mode)
            saved_end = ends.get(tp[0], {}).get(str(tp[1]))
            if saved_end is not None and self.end_mode.kind != "unbounded":
                bounds.end, bounds.end_at_high = saved_end, False
            self.bounds[tp] = bounds
            self.next[tp] = self.opened_at[tp] = bounds.start
            if bounds.end is not None and bounds.start >= bounds.end and not bounds.at_end:
                self.done.add(tp)
            elif not bounds.settled:
                self.unsettled.add(tp)
        live = [
            TopicPartition(t, p, self.next[(t, p)]) for t, p in parts if (t, p) not in self.done
        ]
        self.consumer.assign(live)  # type: ignore[union-attr]
        self._discovered_at = time.monotonic()
        self._await_settled()

    def _discover(self) -> None:
        """Unbounded reads pick up new partitions and new pattern topics from their start."""
        if self.end_mode.kind != "unbounded" or self.discovery_ms <= 0:
            return
        if (time.monotonic() - self._discovered_at) * 1000 < self.discovery_ms:
            return
        self._discovered_at = time.monotonic()
        parts = kafka_client.list_partitions(self.consumer, self.opts, self.topics, self.pattern)
        new = [tp for tp in parts if tp not in self.bounds]
        if not new:
            return
        lows = kafka_client.low_watermarks(self.consumer, self.opts, new)
        for tp in new:
            self.bounds[tp] = Bounds(lows[tp])
            self.next[tp] = self.opened_at[tp] = lows[tp]
        self.consumer.incremental_assign([TopicPartition(t, p, lows[(t, p)]) for t, p in new])

    def poll(self, max_records: int, timeout: float) -> Batch:
        return self._poll(max_records, timeout, None)

    def poll_runs(self, max_records: int, timeout: float) -> tuple[Batch, list]:
        """``poll``, with the batch's partition runs: ((topic, partition), row count) of
        its consecutive rows, for per-partition watermarks."""
        runs: list = []
        return self._poll(max_records, timeout, runs), runs

    @property
    def filtered(self) -> int:
        """Row images the value format's pre-filter dropped so far (``TableSpec.prefilter``):
        changes read but never built into rows."""
        return self.value_decoder.filtered

    @property
    def skipped(self) -> int:  # the key and value formats' skipped records (``Source``)
        return self.value_decoder.skipped + (self.key_decoder.skipped if self.key_decoder else 0)

    @property
    def logical_messages(self) -> int:  # Debezium's op "m" skipped (``Source``)
        key = self.key_decoder.logical_messages if self.key_decoder else 0
        return self.value_decoder.logical_messages + key

    def partition_states(self) -> tuple[list[tuple[str, int]], set[tuple[str, int]]]:
        """The assigned partitions, and those finished (at the end of a bounded read)."""
        return list(self.bounds), self.done

    def _poll(self, max_records: int, timeout: float, runs: list | None) -> Batch:
        out = Batch()
        if self.consumer is None or self.finished():
            return out
        self._discover()
        msgs = kafka_client.drain(self.consumer, max_records, timeout)
        if self.unsettled:  # before the records: they lie below the high watermark read
            self._settle()
        events = any(map(_error, msgs))  # partition EOFs and errors, rare
        good = [m for m in msgs if m.error() is None] if events else msgs
        returned = dict(self.next)
        try:
            for tp, records in self._grouped(good):
                raw, headers = self._raw(tp, records)
                if raw is not None:
                    decoded = self._decode(raw, headers)
                    out.extend(decoded)
                    if runs is not None:
                        runs.append((tp, len(decoded)))
        except BaseException:
            self.next = returned  # nothing of this poll was returned: position() stays put
            raise
        if events:  # after the records: an EOF follows its partition's records
            for msg in msgs:
                if msg.error() is not None:
                    self._event(msg)
        return out

    def _grouped(self, good: list) -> list[tuple[tuple[str, int], list]]:
        """Records per partition, in offset order."""
        if not good:
            return []
        if len(self.bounds) == 1:
            return [(next(iter(self.bounds)), good)]
        groups: dict[tuple[str, int], list] = {}
        for msg in good:
            groups.setdefault((msg.topic(), msg.partition()), []).append(msg)
        return list(groups.items())

    def _event(self, msg) -> None:
        err, tp = msg.error(), (msg.topic(), msg.partition())
        if err.code() == KafkaError._PARTITION_EOF:
            self._at_eof(tp, msg.offset())
        elif err.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
            self._fetch_out_of_range(tp, msg.offset())
        elif err.fatal() or err.code() in (
            KafkaError.UNKNOWN_TOPIC_OR_PART,
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
        ):
            raise self.opts.error(f"Kafka error on {tp[0]}/{tp[1]}: {err.str()}")

    def _at_eof(self, tp, offset: int) -> None:
        self.eof_at[tp] = offset
        bounds = self.bounds.get(tp)
        if bounds is None or bounds.end is None:
            return
        if offset >= bounds.end:
            self.next[tp] = max(self.next[tp], bounds.end)
            self._finish(tp)

    def _finish(self, tp) -> None:
        if tp not in self.done:
            self.done.add(tp)
            self.consumer.pause([TopicPartition(tp[0], tp[1])])

    def _raw(self, tp, msgs: list) -> tuple[RawBatch | None, list | None]:
        """The partition's new records as a RawBatch, cut to its bounds."""
        if tp in self.done:
            return None, None
        bounds = self.bounds[tp]
        plain = bounds.start_ts is None and bounds.end_ts is None
        if (
            plain
            and msgs[0].offset() >= self.next[tp]
            and (bounds.end is None or msgs[-1].offset() < bounds.end)
        ):
            keep = msgs  # the common case: nothing to cut
        else:
            keep = self._cut(tp, bounds, msgs)
        if keep:
            self.next[tp] = max(self.next[tp], keep[-1].offset() + 1)
        if bounds.end is not None and self.next[tp] >= bounds.end:
            self._finish(tp)
        if not keep:
            return None, None
        wants = self.layout.record_keys
        keys = list(map(_key, keep)) if self._wants_keys else []
        stamps = [m.timestamp()[1] for m in keep] if "timestamp" in wants else []
        raw = RawBatch(tp[0], tp[1], _offsets(keep), list(map(_value, keep)), keys, stamps)
        headers = [dict(m.headers() or ()) for m in keep] if "headers" in wants else None
        return raw, headers

    def _cut(self, tp, bounds: Bounds, msgs: list) -> list:
        """Drops records before the position or the start timestamp, and from the end on."""
        keep, nxt = [], self.next[tp]
        for msg in msgs:
            off = msg.offset()
            if off < nxt:
                continue
            if bounds.end is not None and off >= bounds.end:
                self._finish(tp)
                break
            ts = msg.timestamp()[1]
            if bounds.end_ts is not None and ts >= bounds.end_ts:
                bounds.end = off
                self._finish(tp)
                break
            if bounds.start_ts is not None:
                if ts < bounds.start_ts:
                    nxt = off + 1
                    continue
                bounds.start_ts = None
            keep.append(msg)
        self.next[tp] = max(self.next[tp], nxt)
        return keep

    def _decode(self, raw: RawBatch, headers: list | None) -> Batch:
        if not self.layout.needs_origin:
            batch = self.value_decoder.decode(raw)
        else:
            batch = self.build(raw, headers)  # type: ignore[arg-type]
        if self.value_decoder.dead_letters or (self.key_decoder and self.key_decoder.dead_letters):
            self._dead_letters(raw)
        return batch

    def _build_rows(self, raw: RawBatch, headers: list | None) -> Batch:
        batch, origins = decode_with_origins(self.value_decoder, raw)
        keys = None
        if self.layout.uses_key and self.key_decoder is not None and self.layout.key_spec:
            keys = key_rows(self.key_decoder, raw, len(self.layout.key_spec.physical))
        return assemble_rows(self.layout, batch, origins, keys, raw, headers)

    def _dead_letters(self, raw: RawBatch) -> None:
        """Routes the records the decoders refused, with their original key and value
        (the job flushes them with its checkpoint: ``connectors/dead_letters.py``)."""
        letters = list(self.value_decoder.dead_letters)
        self.value_decoder.dead_letters.clear()
        if self.key_decoder is not None:
            value_of = dict(zip(raw.offsets, raw.values, strict=True))
            for topic, part, off, _, reason in self.key_decoder.dead_letters:
                letters.append((topic, part, off, value_of.get(off), f"record key: {reason}"))
            self.key_decoder.dead_letters.clear()
        key_of = dict(zip(raw.offsets, raw.keys, strict=False))
        self.dead_letter_writer.send(letters, key_of)  # type: ignore[union-attr]

    def position(self) -> dict:
        offsets: dict[str, dict[str, int]] = {}
        for (topic, part), off in self.next.items():
            offsets.setdefault(topic, {})[str(part)] = off
        if self.commit and self.consumer is not None:
            self._commit()
        out: dict = {"offsets": offsets}
        if self.topic_ids:  # a restart refuses these offsets on a recreated topic
            out["topic_ids"] = dict(self.topic_ids)
        if self.end_mode.kind == "unbounded":
            return out
        ends: dict[str, dict[str, int]] = {}
        for (topic, part), bounds in self.bounds.items():
            if bounds.end is not None:
                ends.setdefault(topic, {})[str(part)] = bounds.end
        return {**out, "ends": ends}

    def _commit(self) -> None:
        """Commits a checkpointed position to the group (as Flink does on checkpoints),
        asynchronously; ``close`` commits the last one again, waiting CLOSE_WAIT_S at most."""
        moved = [
            TopicPartition(t, p, o) for (t, p), o in self.next.items() if o > self.opened_at[(t, p)]
        ]
        if moved:
            self._committing = moved
            self.consumer.commit(offsets=moved, asynchronous=True)  # type: ignore[union-attr]

    def finished(self) -> bool:
        if self.end_mode.kind == "unbounded" or self.consumer is None:
            return False
        return len(self.done) == len(self.bounds)

    def progress(self) -> tuple[int, int | None]:
        done = sum(self.next[tp] - self.opened_at[tp] for tp in self.next)
        if self.end_mode.kind == "unbounded":
            return done, None
        ends = [b.end for b in self.bounds.values()]
        if any(e is None for e in ends):
            return done, None
        return done, sum(max(0, b.end - self.opened_at[tp]) for tp, b in self.bounds.items())  # type: ignore[operator]

    def partition_lag(self) -> dict[tuple[str, int], int]:
        """Records of each partition not read yet: the high watermark of the last fetch
        response (librdkafka keeps it; tansu answers ListOffsets wrongly, so it is never
        asked) minus the position, or minus the last EOF's offset when that is higher
        (a transaction's commit marker is an offset but no record). A bounded read
        counts up to its end offset; a partition not fetched yet is left out."""
        if self.consumer is None:
            return {}
        out = {}
        for tp, position in self.next.items():
            end = self.bounds[tp].end
            if tp in self.done:
                out[tp] = 0
                continue
            try:
                _, high = self.consumer.get_watermark_offsets(TopicPartition(*tp), cached=True)
            except (KafkaException, RuntimeError):  # the partition is gone, the consumer closed
                continue
            if high < 0 and end is None:
                continue
            high = end if high < 0 else high if end is None else min(high, end)
            out[tp] = max(0, high - max(position, self.eof_at.get(tp, 0)))
        return out

    def close(self) -> None:
        if self.dead_letter_writer is not None:
            self.dead_letter_writer.close()
        if self.consumer is not None:
            consumer, last = self.consumer, self._committing
            self.consumer = None
            # the group's offsets are informative (the checkpoint holds the position):
            # the last commit and the close get CLOSE_WAIT_S, then are left to their
            # thread, as both can block while the brokers are away
            InFlight(lambda: _commit_and_close(consumer, last)).result(CLOSE_WAIT_S)


def _commit_and_close(consumer, offsets: list) -> None:
    if offsets:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException:
            pass  # the checkpoint holds the position; the group offset is informative
    consumer.close()


_error, _key, _value, _offset = Message.error, Message.key, Message.value, Message.offset


def _offsets(msgs: list) -> list[int]:
    """The offsets of one partition's records (increasing): a range when they leave no gap."""
    first, last = msgs[0].offset(), msgs[-1].offset()
    if last - first + 1 == len(msgs):
        return list(range(first, last + 1))
    return list(map(_offset, msgs))
