"""A read position against the range its partition holds.

A checkpointed position can be out of range at a restart: the topic was deleted and
recreated (fewer records: the position lies past the end), or retention deleted records
the job had not read (it lies below the log start). ``'scan.offset-out-of-range'``
says what to do: ``fail`` (the default: stop, naming the partition, the position and
the range), ``earliest`` or ``latest`` (go on from the log start or end, saying how many
offsets that skips). librdkafka's own ``auto.offset.reset`` is ``error`` on every source
consumer, so it never jumps by itself: Kafka answers such a fetch OFFSET_OUT_OF_RANGE,
librdkafka reports it, and the source applies the policy; tansu answers an empty fetch
instead, whose high watermark the source compares with the position.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import TopicPartition

from deltaflow.connectors import kafka_client
from deltaflow.connectors.options import TableOptions

POLICY_KEY = "scan.offset-out-of-range"
POLICIES = ("fail", "earliest", "latest")
SETTLE_WAIT_S = 10.0  # the first fetch of partitions whose bounds need the end offset


def policy(opts: TableOptions) -> str:
    return opts.choice(POLICY_KEY, POLICIES, "fail")


def note(opts: TableOptions, message: str) -> None:
    """One line on stderr about a table's read (rare events only)."""
    print(f"deltaflow: table '{opts.table}': {message}", file=sys.stderr, flush=True)


def held(low: int, high: int) -> str:
    if high > low:
        return f"offsets {low} to {high - 1}"
    return f"no records (log start and end offset {high})"


def out_of_range(opts: TableOptions, choice: str, tp, offset: int, low: int, high: int,
                 recreated: str | None = None) -> int:  # fmt: skip
    """Where the read of ``tp`` goes on when its checkpointed ``offset`` lies outside
    [``low``, ``high``] (``high``: the log end offset), or belongs to a topic since
    deleted (``recreated``: how its topic id changed); raises for ``fail``."""
    where = f"the checkpointed offset {offset} of {tp[0]}/{tp[1]}"
    if recreated:
        why = f"belongs to a deleted topic: {recreated}; the topic now holds {held(low, high)}"
    else:
        why = f"is out of the range the broker holds ({held(low, high)})"
    if choice == "fail":
        raise opts.error(
            f"{where} {why}: the topic was deleted and recreated, or retention deleted "
            f"records the job had not read; set '{POLICY_KEY}' = 'earliest' (read what the "
            "partition holds) or 'latest' (go on from its end) to go on, or replay into a "
            "fresh --state-dir with --from"
        )
    start = low if choice == "earliest" else high
    skipped = start - offset if offset < low and not recreated else start - low
    note(opts, f"{where} {why}; '{POLICY_KEY}' = '{choice}': going on from offset {start} "
               f"({skipped} offset(s) skipped)")  # fmt: skip
    return start


def past_end(opts: TableOptions, tp, offset: int, high: int) -> Exception:
    """An explicit start offset (``--from offsets:``, ``scan.startup.specific-offsets``)
    past the end of its partition."""
    return opts.error(
        f"start offset {offset} of {tp[0]}/{tp[1]} lies past its end offset {high}; choose "
        f"an offset up to {high}, or start from 'latest'"
    )


class SettledBounds:
    """The Kafka source's bounds that wait for a fetch's high watermark (the end offset),
    and its out-of-range handling. Uses the source's ``opts``, ``policy``, ``consumer``,
    ``bounds``, ``next``, ``opened_at``, ``unsettled``, ``recreated`` and ``_finish``."""

    def _check_topic_ids(self, parts: list, saved: dict) -> None:
        """Topic ids (Kafka 2.8+, tansu): a topic whose id differs from the checkpoint's
        was deleted and recreated, whatever its offsets; its checkpointed positions are
        then out of range. A cluster that gives no ids is not checked."""
        topics = sorted({t for t, _ in parts})
        self.topic_ids = kafka_client.topic_ids(self.consumer, self.opts, self.conf, topics)
        for topic, old in saved.items():
            new = self.topic_ids.get(topic)
            if new is not None and old != new:
                self.recreated[topic] = f"its topic id was {old}, it is {new} now"

    def _await_settled(self) -> None:
        """Waits (at most SETTLE_WAIT_S) for the first fetch response of each partition
        whose bounds need the end offset: its high watermark is the end "at the start",
        and an out-of-range position is found before anything is read. The fetch runs
        in librdkafka's threads; nothing is polled here. A partition still unsettled
        then is settled by ``_poll`` when its first fetch arrives."""
        deadline = time.monotonic() + SETTLE_WAIT_S
        while self.unsettled and time.monotonic() < deadline:
            time.sleep(0.005)
            self._settle()

    def _settle(self) -> None:
        """Settles the bounds that wait for the end offset, once a fetch response has
        reported the partition's high watermark (``kafka_offsets.Bounds``)."""
        for tp in list(self.unsettled):
            low, high = self.consumer.get_watermark_offsets(  # type: ignore[union-attr]
                TopicPartition(tp[0], tp[1]), cached=True
            )
            if high < 0:
                continue
            self.unsettled.discard(tp)
            bounds = self.bounds[tp]
            if bounds.check == "recreated" or (bounds.check and self.next[tp] > high):
                self._out_of_range(tp, low, high)
            if bounds.at_end:
                self.next[tp] = self.opened_at[tp] = max(self.next[tp], high)
            if bounds.end_at_high:
                bounds.end = high
            bounds.at_end = bounds.end_at_high = False
            if bounds.end is not None and self.next[tp] >= bounds.end:
                self.next[tp] = max(self.next[tp], bounds.end)
                self._finish(tp)

    def _out_of_range(self, tp, low: int, high: int) -> None:
        """The position of ``tp`` lies outside [low, high]: an explicit start offset is an
        error; a checkpointed one goes where 'scan.offset-out-of-range' says."""
        bounds, offset = self.bounds[tp], self.next[tp]
        if bounds.check == "explicit":
            raise past_end(self.opts, tp, offset, high)
        recreated = self.recreated.get(tp[0]) if bounds.check == "recreated" else None
        bounds.check = None
        start = out_of_range(self.opts, self.policy, tp, offset, low, high, recreated)
        self.next[tp] = self.opened_at[tp] = bounds.start = start
        # assigned again: a seek is refused while the partition's fetch is in error
        self.consumer.incremental_unassign([TopicPartition(tp[0], tp[1])])  # type: ignore[union-attr]
        self.consumer.incremental_assign([TopicPartition(tp[0], tp[1], start)])  # type: ignore[union-attr]

    def _fetch_out_of_range(self, tp, offset: int) -> None:
        """Kafka refused a fetch at the position (librdkafka's auto.offset.reset is
        "error"); an answer to a position already left is stale."""
        if tp not in self.bounds or (offset >= 0 and offset != self.next[tp]):
            return
        low, high = kafka_client.watermark_hints(self.consumer, self.opts, [tp])[tp]
        fetched = self.consumer.get_watermark_offsets(  # type: ignore[union-attr]
            TopicPartition(tp[0], tp[1]), cached=True
        )[1]
        self._out_of_range(tp, low, max(high, fetched))

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        """Each assigned partition's high watermark (log end offset) as the last fetch
        response reported it, for consumer lag; absent before its first fetch."""
        out: dict[tuple[str, int], int] = {}
        if self.consumer is None:
            return out
        for topic, part in self.bounds:
            high = self.consumer.get_watermark_offsets(TopicPartition(topic, part), cached=True)[1]
            if high >= 0:
                out[(topic, part)] = high
        return out
