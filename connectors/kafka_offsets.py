"""Where a Kafka read starts and ends, per partition (Flink's scan.startup / scan.bounded).

Timestamp lookups are treated as a lower bound (tansu answers offset 0 for any
timestamp): records before the first one at or after the timestamp are skipped by
the reader, so the result is the same as Kafka's exact lookup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka import KafkaException, TopicPartition

from deltaflow.connectors.kafka_client import high_watermarks, low_watermarks
from deltaflow.connectors.options import TableOptions

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
    the first that is not), up to ``end`` exclusive or the first record at ``end_ts``."""

    start: int
    start_ts: int | None = None
    end: int | None = None
    end_ts: int | None = None


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
            return Mode("timestamp", timestamp=int(rest))
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


class Resolver:
    """Turns modes into concrete per-partition bounds, asking the brokers only what it needs."""

    def __init__(self, opts: TableOptions, conf: dict, cons, parts: list[tuple[str, int]]):
        self.opts, self.conf, self.cons, self.parts = opts, conf, cons, parts
        self._low: dict | None = None
        self._high: dict | None = None
        self._committed: dict | None = None

    def low(self, tp) -> int:
        if self._low is None:
            self._low = low_watermarks(self.cons, self.opts, self.parts)
        return self._low[tp]

    def high(self, tp) -> int:
        if self._high is None:
            self._high = high_watermarks(self.opts, self.conf, self.parts)
        return self._high[tp]

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

    def start(self, tp, mode: Mode) -> Bounds:
        if mode.kind == "earliest-offset":
            return Bounds(self.low(tp))
        if mode.kind == "latest-offset":
            return Bounds(self.high(tp))
        if mode.kind == "timestamp":
            found = self.timestamp_offset(tp, mode.timestamp)  # type: ignore[arg-type]
            return Bounds(
                self.high(tp) if found is None else max(found, self.low(tp)),
                start_ts=mode.timestamp,
            )
        if mode.kind == "specific-offsets":
            given = mode.offsets.get(tp, mode.offsets.get((None, tp[1])))
            if given is not None:
                return Bounds(max(given, self.low(tp)))
        committed = self.committed(tp)
        if committed is not None:
            return Bounds(max(committed, self.low(tp)))
        return Bounds(self._reset(tp, mode))

    def _reset(self, tp, mode: Mode) -> int:
        reset = self.conf.get("auto.offset.reset")
        if reset in ("earliest", "smallest", "beginning") or (
            reset is None and mode.kind == "specific-offsets"
        ):
            return self.low(tp)
        if reset in ("latest", "largest", "end"):
            return self.high(tp)
        group = self.conf.get("group.id")
        where = f"in group '{group}'" if group else "(the table sets no 'properties.group.id')"
        raise self.opts.error(
            f"no committed offset for {tp[0]}/{tp[1]} {where}; set "
            "'properties.auto.offset.reset' to 'earliest' or 'latest', or choose another "
            "'scan.startup.mode' (the default is 'group-offsets', as in Flink)"
        )

    def end(self, tp, bounds: Bounds, mode: Mode) -> None:
        if mode.kind == "unbounded":
            return
        if mode.kind == "latest-offset":
            bounds.end = self.high(tp)
        elif mode.kind == "timestamp":
            bounds.end, bounds.end_ts = self.high(tp), mode.timestamp
        elif mode.kind == "specific-offsets":
            given = mode.offsets.get(tp, mode.offsets.get((None, tp[1])))
            bounds.end = self.high(tp) if given is None else given
        else:
            committed = self.committed(tp)
            bounds.end = self.high(tp) if committed is None else committed
