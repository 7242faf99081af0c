"""librdkafka clients from a table's options: configuration, topics, partitions, watermarks.

``properties.*`` options go to librdkafka unchanged (their values are never logged or
put in messages), except Java's ``sasl.jaas.config`` for PLAIN/SCRAM, which becomes
``sasl.username`` / ``sasl.password``.
"""

from __future__ import annotations

import re
import time

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from deltaflow.connectors import kafka_logs
from deltaflow.connectors.options import TableOptions
from deltaflow.formats.errors import ConnectorError

TOPIC_WAIT_S = 3.0  # how long a missing topic may take to appear before it is an error
_JAAS = re.compile(r'(username|password)\s*=\s*"([^"]*)"')
# Java client (or Flink KafkaSource) properties that mean nothing to librdkafka.
_JAVA_ONLY = {"key.deserializer", "value.deserializer", "key.serializer", "value.serializer",
              "sasl.jaas.config", "partition.discovery.interval.ms", "client.id.prefix",
              "max.poll.records", "commit.offsets.on.checkpoint", "register.consumer.metrics",
              "flink.partition-discovery.interval-millis"}  # fmt: skip


def client_config(opts: TableOptions, bootstrap: str | None) -> dict[str, str]:
    """librdkafka settings from ``properties.*``; ``bootstrap`` overrides the servers."""
    props = opts.with_prefix("properties.")
    conf = {k: v for k, v in props.items() if k not in _JAVA_ONLY}
    jaas = props.get("sasl.jaas.config")
    if jaas:
        found = dict(_JAAS.findall(jaas))
        if "username" not in found:
            raise opts.error(
                "option 'properties.sasl.jaas.config' has no username=\"...\"; only PLAIN and "
                "SCRAM login modules are supported (or set properties.sasl.username/password)"
            )
        conf.setdefault("sasl.username", found["username"])
        conf.setdefault("sasl.password", found.get("password", ""))
    if bootstrap:
        conf["bootstrap.servers"] = bootstrap
    if not conf.get("bootstrap.servers"):
        raise opts.error(
            "option 'properties.bootstrap.servers' is required (or pass --bootstrap-servers / --embedded)"
        )
    conf.setdefault("log_level", "3")
    opts.client_conf = conf
    return conf


def _client(kind, opts: TableOptions, conf: dict[str, str]):
    if "debug" not in conf and "logger" not in conf:  # rate-limited log lines (kafka_logs)
        conf = {**conf, "logger": kafka_logs.LIMITER}
    try:
        return kind(conf)
    except KafkaException as err:
        raise opts.error(
            f"Kafka client rejected a setting: {err.args[0].str()}; check the properties.* options"
        ) from None
    except ValueError as err:
        raise opts.error(f"Kafka client rejected the settings: {err}") from None


# Consumer defaults (each overridden by the table's properties.* option of that name):
# - fetch.wait.max.ms: librdkafka waits up to 500 ms for fetch.min.bytes; a broker that
#   holds every fetch for the whole wait (tansu does, even with data waiting) then adds
#   that to each record's latency. 50 ms keeps the p99 at 20k events/s well under 250 ms
#   and costs an idle consumer 20 empty fetches a second.
# - fetch.queue.backoff.ms: once a partition's prefetch queue holds queued.min.messages,
#   librdkafka stops fetching it for this long (1000 ms by default). A job slower than
#   the fetch fills the queue, drains it in well under a second and then waits for the
#   rest of the pause: a third of W1's time on tansu. 10 ms resumes the fetch soon after
#   the queue has room (measured: 300k orders at 5 us a message of work, waiting in
#   poll 0.87 -> 0.21 s).
# - queued.min.messages: the prefetch target per partition (100,000 by default, ~46 MB
#   of 460-byte changes). Four of the job's 5,000-record batches keep it busy as well
#   with the short backoff (same rate measured), in a fifth of the memory.
CONSUMER_DEFAULTS = {
    "fetch.wait.max.ms": "50",
    "fetch.queue.backoff.ms": "10",
    "queued.min.messages": "20000",
}


def consumer_settings(opts: TableOptions, conf: dict[str, str], group: str | None = None) -> dict:
    """A source consumer's librdkafka settings: the table's, then the defaults above, and
    the ones the source relies on (partition EOF events, no automatic offset commits, no
    automatic offset reset: the table's ``properties.auto.offset.reset`` is read by the
    source's start position logic instead)."""
    settings = dict(conf)
    settings.setdefault("group.id", group or f"deltaflow-{opts.table}")
    for key, value in CONSUMER_DEFAULTS.items():
        settings.setdefault(key, value)
    # auto.offset.reset "error": a fetch out of range is reported to the source, which
    # applies 'scan.offset-out-of-range'; librdkafka never jumps by itself
    settings.update({"enable.partition.eof": True, "enable.auto.commit": False,
                     "enable.auto.offset.store": False, "auto.offset.reset": "error"})  # fmt: skip
    return settings


def consumer(opts: TableOptions, conf: dict[str, str], group: str | None = None) -> Consumer:
    return _client(Consumer, opts, consumer_settings(opts, conf, group))


def producer(opts: TableOptions, conf: dict[str, str], tuning: dict[str, object]) -> Producer:
    settings = {k: v for k, v in conf.items() if k not in ("group.id", "auto.offset.reset")}
    for key, value in tuning.items():
        settings.setdefault(key, value)
    return _client(Producer, opts, settings)


def ensure_topics(
    bootstrap: str, names: list[str], partitions: int = 1, timeout: float = 10.0
) -> None:
    """Create the topics that do not exist yet (tansu also auto-creates on first produce,
    with its own default partition count)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futures = admin.create_topics(
        [NewTopic(n, num_partitions=partitions, replication_factor=1) for n in names],
        operation_timeout=timeout,
    )
    for name, future in futures.items():
        try:
            future.result(timeout)
        except KafkaException as err:
            if err.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise ConnectorError(
                    f"cannot create topic '{name}' on {bootstrap}: {err.args[0].str()}"
                ) from None


def list_partitions(
    client, opts: TableOptions, topics: list[str], pattern: re.Pattern | None, timeout: float = 10.0
) -> list[tuple[str, int]]:
    """The partitions of the named topics (or of every topic matching ``pattern``)."""
    try:
        meta = client.list_topics(timeout=timeout)
    except KafkaException as err:
        client.poll(0)  # prints the client's log lines (kafka_logs): why it got no answer
        raise unreachable(opts, err) from None
    if pattern is not None:
        names = sorted(t for t in meta.topics if pattern.fullmatch(t) and not t.startswith("__"))
    else:
        names = topics
    out: list[tuple[str, int]] = []
    for name in names:
        info = meta.topics.get(name)
        if info is None or info.error is not None or not info.partitions:
            info = _topic_metadata(client, opts, name, TOPIC_WAIT_S)
        out.extend((name, p) for p in sorted(info.partitions))
    return out


# librdkafka's codes for a connection the brokers refused: credentials, TLS
_REFUSED = {KafkaError._AUTHENTICATION: "authentication", KafkaError._SSL: "TLS handshake"}
DIAGNOSE_S = 3.0


def unreachable(opts: TableOptions, err: KafkaException) -> ConnectorError:
    """The error of a table whose brokers did not answer: naming the bootstrap servers,
    and telling an authentication (or TLS) failure from brokers that are not there."""
    conf = opts.client_conf or {}
    servers = conf.get("bootstrap.servers") or opts.get("properties.bootstrap.servers")
    refused = refusal(conf) if conf else None
    if refused is not None:
        what, text = refused
        return opts.error(
            f"the Kafka brokers at {servers} refused the {what} ({text}); check the "
            "'properties.security.protocol', 'properties.sasl.*' and 'properties.ssl.*' options"
        )
    return opts.error(
        f"cannot reach the Kafka brokers at {servers} ({err.args[0].str()}); check "
        "'properties.bootstrap.servers' (or --bootstrap-servers) and that the brokers are up"
    )


def refusal(conf: dict, timeout: float = DIAGNOSE_S) -> tuple[str, str] | None:
    """(what, librdkafka's text) when a client with ``conf`` is refused by the brokers
    (authentication or TLS), None when they just do not answer. A short-lived client
    whose error callback catches what librdkafka only logs otherwise."""
    refused: list[tuple[str, str]] = []

    def record(error: KafkaError) -> None:
        if error.code() in _REFUSED and not refused:
            refused.append((_REFUSED[error.code()], error.str()))

    probe = AdminClient({**conf, "log_level": 0, "error_cb": record})
    deadline = time.monotonic() + timeout
    while not refused and time.monotonic() < deadline:
        try:
            probe.list_topics(timeout=0.5)
            return None
        except KafkaException:
            probe.poll(0.1)
    return refused[0] if refused else None


def _topic_metadata(client, opts: TableOptions, name: str, timeout: float):
    deadline = time.monotonic() + timeout
    while True:
        try:
            info = client.list_topics(name, timeout=timeout).topics.get(name)
        except KafkaException as err:
            raise opts.error(
                f"cannot read metadata of topic '{name}': {err.args[0].str()}"
            ) from None
        if info is not None and info.error is None and info.partitions:
            return info
        if time.monotonic() > deadline:
            raise opts.error(f"topic '{name}' does not exist; create it or check option 'topic'")
        time.sleep(0.1)


def topic_ids(cons: Consumer, opts: TableOptions, conf: dict[str, str],
              topics: list[str]) -> dict[str, str]:  # fmt: skip
    """Each topic's id (base64), for those the cluster names by id (Kafka 2.8+, tansu);
    a cluster or topic without one is left out, as is a cluster whose controller is no
    broker (librdkafka's mock cluster: the admin request would wait for it and time out)."""
    try:
        meta = cons.list_topics(timeout=10) if topics else None
    except KafkaException:
        return {}
    if meta is None or meta.controller_id not in meta.brokers:
        return {}
    settings = {k: v for k, v in conf.items() if k not in ("group.id", "auto.offset.reset")}
    admin = _client(AdminClient, opts, settings)
    out = {}
    for name, future in admin.describe_topics(TopicCollection(topics), request_timeout=5).items():
        try:
            found = str(future.result(10).topic_id)
        except Exception:  # noqa: BLE001 - no id is no check, never an error
            continue
        if found.strip("A=") and found != "None":
            out[name] = found
    return out


def watermark_hints(cons: Consumer, opts: TableOptions, parts: list[tuple[str, int]]) -> dict:
    """(log start, end) offsets of each partition from ListOffsets. The log start is
    exact; the end is exact on Kafka but tansu answers the base offset of the last
    record batch + 1, so a read takes the end from its fetch responses instead
    (``connectors/kafka_offsets.py``)."""
    out = {}
    for topic, part in parts:
        try:
            out[(topic, part)] = cons.get_watermark_offsets(
                TopicPartition(topic, part), timeout=10, cached=False
            )
        except KafkaException as err:
            raise opts.error(
                f"cannot read offsets of {topic}/{part}: {err.args[0].str()}"
            ) from None
    return out


def low_watermarks(cons: Consumer, opts: TableOptions, parts: list[tuple[str, int]]) -> dict:
    return {tp: low for tp, (low, _) in watermark_hints(cons, opts, parts).items()}


def drain(cons: Consumer, max_records: int, timeout: float) -> list:
    """Up to ``max_records`` messages: wait at most ``timeout`` for the first one, then
    take whatever else is already fetched without waiting."""
    first = cons.poll(timeout)
    if first is None:
        return []
    if max_records <= 1:
        return [first]
    return [first, *cons.consume(max_records - 1, 0)]
