"""Where a Kafka read starts and ends, per partition (Flink's scan.startup / scan.bounded).

Timestamp lookups are treated as a lower bound (tansu answers offset 0 for any
timestamp): records before the first one at or after the timestamp are skipped by
the reader, so the result is the same as Kafka's exact lookup.

The log end offset is taken from the fetch responses (the high watermark each one
carries), not from ``ListOffsets(latest)``, which tansu answers with the base offset of
the last record batch + 1: a bound that needs the end ("latest", or a position to check
against it) is marked on its ``Bounds`` and settled by the source at its first fetch
(``connectors/kafka_ranges.py``). ListOffsets' answer is only a hint: a start position
at or below it, or a log start offset, is exact.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field

from confluent_kafka import KafkaException, TopicPartition

from deltaflow.connectors.base import PartitionedSource
from deltaflow.connectors.kafka_client import watermark_hints
from deltaflow.connectors.kafka_ranges import note, out_of_range
from deltaflow.connectors.options import TableOptions
from deltaflow.formats.errors import ConnectorError

STARTUP_MODES = (
    "earliest-offset",
    "latest-offset",
    "group-offsets",
    "timestamp",
    "specific-offsets",
)
BOUNDED_MODES = ("unbounded", "latest-offset", "group-offsets", "timestamp", "specific-offsets")
_OVERRIDES = {
    "earliest": "earliest-offset",
    "latest": "latest-offset",
    "committed": "group-offsets",
}


@dataclass(frozen=True)
class Mode:
    """A startup or bounded mode; ``offsets`` maps (topic or None, partition) to an offset."""

    kind: str
    timestamp: int | None = None
    offsets: dict = field(default_factory=dict)


@dataclass
class Bounds:
    """One partition's read: from ``start`` (skipping records older than ``start_ts`` until
    the first that is not), up to ``end`` exclusive or the first record at ``end_ts``.

    Settled at the first fetch, from the high watermark it reports: ``at_end`` starts at
    it, ``end_at_high`` ends there; ``check`` says where ``start`` came from when it may
    lie past the end ("checkpoint": the out-of-range policy applies; "explicit": an
    error)."""

    start: int
    start_ts: int | None = None
    end: int | None = None
    end_ts: int | None = None
    at_end: bool = False
    end_at_high: bool = False
    check: str | None = None

    @property
    def settled(self) -> bool:
        return not (self.at_end or self.end_at_high or self.check)


def startup_mode(opts: TableOptions, override: str | None) -> Mode:
    if override:
        return _parse_override(opts, override)
    kind = opts.choice("scan.startup.mode", STARTUP_MODES, "group-offsets")
    return _mode(opts, kind, "scan.startup")


def bounded_mode(opts: TableOptions) -> Mode:
    kind = opts.choice("scan.bounded.mode", BOUNDED_MODES, "unbounded")
    return _mode(opts, kind, "scan.bounded")


def _mode(opts: TableOptions, kind: str, prefix: str) -> Mode:
    if kind == "timestamp":
        millis = opts.integer(f"{prefix}.timestamp-millis", minimum=0)
        if millis is None:
            _need(opts, f"{prefix}.timestamp-millis", kind)
        return Mode(kind, timestamp=millis)
    if kind == "specific-offsets":
        text = opts.get(f"{prefix}.specific-offsets") or _need(
            opts, f"{prefix}.specific-offsets", kind
        )
        return Mode(kind, offsets=_parse_specific(opts, f"{prefix}.specific-offsets", text))
    if kind == "group-offsets" and not opts.get("properties.group.id") and prefix == "scan.bounded":
        _need(opts, "properties.group.id", kind)
    return Mode(kind)


def _need(opts: TableOptions, key: str, kind: str):
    raise opts.error(f"option '{key}' is required when the mode is '{kind}'")


def _parse_specific(opts: TableOptions, key: str, text: str) -> dict:
    out = {}
    for item in filter(None, (s.strip() for s in text.split(";"))):
        fields = dict(p.split(":", 1) for p in item.split(",") if ":" in p)
        try:
            out[(None, int(fields["partition"]))] = int(fields["offset"])
        except (KeyError, ValueError):
            raise opts.error(
                f"option '{key}' has '{item}'; write 'partition:0,offset:42;partition:1,offset:300'"
            ) from None
    return out


def _parse_override(opts: TableOptions, text: str) -> Mode:
    if text in _OVERRIDES:
        return Mode(_OVERRIDES[text])
    kind, _, rest = text.partition(":")
    try:
        if kind == "timestamp":
            return Mode("timestamp", timestamp=_past(opts, int(rest)))
        if kind == "offsets":
            offsets = {}
            for item in rest.split(","):
                topic, part, off = item.rsplit(":", 2)
                offsets[(topic, int(part))] = int(off)
            return Mode("specific-offsets", offsets=offsets)
    except ValueError:
        pass
    raise opts.error(
        f"start position '{text}' is not valid; use earliest, latest, committed, timestamp:MS "
        "or offsets:TOPIC:PARTITION:OFFSET,..."
    )


def _past(opts: TableOptions, millis: int) -> int:
    """A replay's start time: one in the future is a mistake (seconds or microseconds
    instead of milliseconds, most likely), not a wish to wait."""
    if millis > time.time() * 1000:
        when = dt.datetime.fromtimestamp(min(millis / 1000, 253402300799), dt.UTC)
        raise opts.error(
            f"start position 'timestamp:{millis}' lies in the future ({when:%Y-%m-%d %H:%M:%S} "
            "UTC); give milliseconds since 1970-01-01 UTC"
        )
    return millis


class Resolver:
    """Turns modes into concrete per-partition bounds, asking the brokers only what it needs."""

    def __init__(self, opts: TableOptions, conf: dict, cons, parts: list[tuple[str, int]],
                 policy: str = "fail") -> None:  # fmt: skip
        self.opts, self.conf, self.cons, self.parts = opts, conf, cons, parts
        self.policy = policy
        self._ranges: dict | None = None
        self._committed: dict | None = None

    def range(self, tp) -> tuple[int, int]:
        """(log start offset, ListOffsets' end offset): exact on Kafka; on tansu the end
        may lie below the true one (see the module's docstring)."""
        if self._ranges is None:
            self._ranges = watermark_hints(self.cons, self.opts, self.parts)
        return self._ranges[tp]

    def low(self, tp) -> int:
        return self.range(tp)[0]

    def committed(self, tp) -> int | None:
        if self._committed is None:
            try:
                got = self.cons.committed([TopicPartition(t, p) for t, p in self.parts], timeout=10)
            except KafkaException as err:
                raise self.opts.error(
                    f"cannot read committed offsets: {err.args[0].str()}"
                ) from None
            self._committed = {(x.topic, x.partition): x.offset for x in got if x.offset >= 0}
        return self._committed.get(tp)

    def timestamp_offset(self, tp, millis: int) -> int | None:
        try:
            got = self.cons.offsets_for_times([TopicPartition(tp[0], tp[1], millis)], timeout=10)[0]
        except KafkaException as err:
            raise self.opts.error(
                f"cannot look up offsets by timestamp: {err.args[0].str()}"
            ) from None
        return got.offset if got.offset >= 0 else None

    def resumed(self, tp, offset: int) -> Bounds:
        """A checkpointed (or group-committed) position, checked against the range the
        broker holds: below the log start it is out of range now; above ListOffsets' end
        it is checked against the first fetch's high watermark."""
        low, end = self.range(tp)
        if offset < low:
            start = out_of_range(self.opts, self.policy, tp, offset, low, end)
            return Bounds(start, at_end=self.policy == "latest")
        return Bounds(offset, check="checkpoint" if offset > end else None)

    def start(self, tp, mode: Mode) -> Bounds:
        if mode.kind == "earliest-offset":
            return Bounds(self.low(tp))
        if mode.kind == "latest-offset":
            return Bounds(self.range(tp)[1], at_end=True)
        if mode.kind == "timestamp":
            return self._from_timestamp(tp, mode.timestamp)  # type: ignore[arg-type]
        if mode.kind == "specific-offsets":
            given = mode.offsets.get(tp, mode.offsets.get((None, tp[1])))
            if given is not None:
                return self._given(tp, given)
        committed = self.committed(tp)
        if committed is not None:
            return self.resumed(tp, committed)
        return self._reset(tp, mode)

    def _from_timestamp(self, tp, millis: int) -> Bounds:
        """Flink's timestamp mode: the first record at or after ``millis``, or the end of
        the partition when it holds none (Kafka says so at once; on tansu, whose lookup
        answers offset 0, the reader skips the older records)."""
        found = self.timestamp_offset(tp, millis)
        if found is None:
            note(self.opts, f"{tp[0]}/{tp[1]} holds no record at or after timestamp {millis}; "
                            "starting at its end offset")  # fmt: skip
            return Bounds(self.range(tp)[1], start_ts=millis, at_end=True)
        return Bounds(max(found, self.low(tp)), start_ts=millis)

    def _given(self, tp, given: int) -> Bounds:
        """An explicit start offset: below the log start it starts there (the records
        before are gone), past the end it is an error (checked at the first fetch)."""
        low, end = self.range(tp)
        if given < low:
            note(self.opts, f"start offset {given} of {tp[0]}/{tp[1]} is below its log start "
                            f"offset {low} (those records are deleted); starting at {low}")  # fmt: skip
            return Bounds(low)
        return Bounds(given, check="explicit" if given > end else None)

    def _reset(self, tp, mode: Mode) -> Bounds:
        reset = self.conf.get("auto.offset.reset")
        if reset in ("earliest", "smallest", "beginning") or (
            reset is None and mode.kind == "specific-offsets"
        ):
            return Bounds(self.low(tp))
        if reset in ("latest", "largest", "end"):
            return Bounds(self.range(tp)[1], at_end=True)
        group = self.conf.get("group.id")
        where = f"in group '{group}'" if group else "(the table sets no 'properties.group.id')"
        raise self.opts.error(
            f"no committed offset for {tp[0]}/{tp[1]} {where}; set "
            "'properties.auto.offset.reset' to 'earliest' or 'latest', or choose another "
            "'scan.startup.mode' (the default is 'group-offsets', as in Flink)"
        )

    def end(self, tp, bounds: Bounds, mode: Mode) -> None:
        """The end of a bounded read; "the end" is the high watermark of the first fetch."""
        if mode.kind == "unbounded":
            return
        if mode.kind == "timestamp":
            bounds.end_ts = mode.timestamp
        given = None
        if mode.kind == "specific-offsets":
            given = mode.offsets.get(tp, mode.offsets.get((None, tp[1])))
        elif mode.kind == "group-offsets":
            given = self.committed(tp)
        low, end = self.range(tp) if given is None else (0, 1)
        if given is None and end == low:  # an empty partition (tansu too: no last batch)
            bounds.end = end
        elif given is None:
            bounds.end_at_high = True
        else:
            bounds.end = given


def check_named_partitions(start: str | None, sources: list) -> None:
    """``--from offsets:T:P:O,...`` must name partitions the job's sources read (each
    source only picks out its own, so a typo would silently start it elsewhere)."""
    if not start or not start.startswith("offsets:"):
        return
    read: set = set()
    for source in sources:
        if isinstance(source, PartitionedSource):
            read.update(source.partition_states()[0])
    named = [item.rsplit(":", 2)[:2] for item in start[len("offsets:") :].split(",")]
    missing = [f"{t}/{p}" for t, p in named if (t, int(p)) not in read]
    if missing:
        shown = ", ".join(f"{t}/{p}" for t, p in sorted(read)) or "none"
        raise ConnectorError(
            f"--from {start} names {', '.join(missing)}, which no source of the job reads "
            f"(the partitions read: {shown}); check the topic names and partitions"
        )
