"""Job cases: reading a case folder, writing its job for the real broker, reading the sink back.

A case folder holds ``job.sql`` (sources marked ``WITH (@source)`` or
``WITH (@upsert_source)``, or ``WITH (@json_source)`` for plain JSON rows, the sink ``WITH (@sink)``) and Flink's recorded
``flink.changelog.txt`` / ``flink.final.txt`` (see ``record_flink.py``). The events of
table ``t`` are ``events/t.jsonl``, one Debezium JSON event a line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from deltaflow.formats.changelog import RawBatch, RowKind
from deltaflow.formats.printing import row_printer
from deltaflow.formats.registry import create_decoder
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import DataType

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
EVENTS = HERE / "events"
_TABLE = re.compile(r"CREATE\s+TABLE\s+(\w+)\s*\((.*?)\)\s*WITH\s*\(\s*(@\w+)\s*\)", re.S | re.I)
_PRIMARY = re.compile(r"PRIMARY\s+KEY\s*\(([^)]*)\)", re.I)


@dataclass
class Case:
    name: str
    sql: str
    sources: dict[str, str]  # table -> marker (@source or @upsert_source)
    source_keys: dict[str, list[str]]  # table -> primary key columns
    upsert_sink: bool
    changelog: list[str]
    final: list[str]

    @property
    def ordered(self) -> bool:
        """Whether Flink's changelog order is the one to match: a single source, no
        window aggregation (the groups of windows that fire at one watermark come out in
        Flink's key-group order, which is unspecified) and no UNION ALL (the order in which
        Flink interleaves its inputs differs from run to run; deltaflow's goes by batch). A case opts out with a
        ``-- compare: final`` line saying why."""
        text = self.sql.upper()
        if "-- COMPARE: FINAL" in text or len(self.sources) != 1:
            return False
        return "TABLE(" not in text and "UNION" not in text


def case_names() -> list[str]:
    return sorted(p.name for p in CASES.iterdir() if (p / "flink.final.txt").exists())


def _lines(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if ln]


def load(name: str) -> Case:
    folder = CASES / name
    sql = (folder / "job.sql").read_text()
    sources, keys, upsert_sink = {}, {}, False
    for table, body, marker in _TABLE.findall(sql):
        pk = _PRIMARY.search(body)
        if marker == "@sink":
            upsert_sink = pk is not None
        else:
            sources[table] = marker
            keys[table] = [k.strip() for k in pk.group(1).split(",")] if pk else []
    return Case(name, sql, sources, keys, upsert_sink,
                _lines(folder / "flink.changelog.txt"), _lines(folder / "flink.final.txt"))  # fmt: skip


def kafka_sql(case: Case, bootstrap: str, topics: dict[str, str]) -> str:
    """The case's job with Kafka tables: Debezium sources read from earliest to the end."""
    common = f"'properties.bootstrap.servers' = '{bootstrap}'"

    def options(match: re.Match) -> str:
        table, body, marker = match.group(1), match.group(2), match.group(3)
        topic = f"'topic' = '{topics[table]}', {common}"
        if marker == "@source":
            with_ = (f"'connector' = 'kafka', {topic}, 'scan.startup.mode' = 'earliest-offset', "
                     "'scan.bounded.mode' = 'latest-offset', 'format' = 'debezium-json'")  # fmt: skip
        elif marker == "@json_source":  # plain JSON rows, an append-only topic
            with_ = (f"'connector' = 'kafka', {topic}, 'scan.startup.mode' = 'earliest-offset', "
                     "'scan.bounded.mode' = 'latest-offset', 'format' = 'json'")  # fmt: skip
        elif marker == "@upsert_source":
            with_ = (f"'connector' = 'upsert-kafka', {topic}, 'scan.bounded.mode' = 'latest-offset', "
                     "'key.format' = 'json', 'value.format' = 'json'")  # fmt: skip
        elif case.upsert_sink:
            with_ = f"'connector' = 'upsert-kafka', {topic}, 'key.format' = 'json', 'value.format' = 'json'"
        else:
            with_ = f"'connector' = 'kafka', {topic}, 'format' = 'debezium-json'"
        return f"CREATE TABLE {table} ({body}) WITH ({with_})"

    return _TABLE.sub(options, case.sql)


def events(table: str) -> list[dict]:
    return [json.loads(ln) for ln in _lines(EVENTS / f"{table}.jsonl")]


def produce(bootstrap: str, topic: str, history: list[dict], key: list[str] | None) -> None:
    """Debezium events as they are; with ``key`` (upsert-kafka), each event as the upsert
    record of its row: the key columns as JSON, the after image or a tombstone."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for event in history:
        if key is None:
            producer.produce(topic, value=json.dumps(event).encode())
            continue
        image = event["after"] or event["before"]
        record_key = json.dumps({k: image[k] for k in key}).encode()
        value = json.dumps(event["after"]).encode() if event["after"] else None
        producer.produce(topic, key=record_key, value=value)
    producer.flush(30)


def read_records(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """Every record of the one-partition ``topic``, in offset order."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "jobs-reader",
                         "enable.partition.eof": True, "enable.auto.commit": False,
                         "fetch.wait.max.ms": 10})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    records = []
    try:
        while True:
            msg = consumer.poll(10.0)
            if msg is None:
                raise AssertionError(f"no end of partition reading {topic}")
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return records
                raise AssertionError(str(msg.error()))
            records.append((msg.key(), msg.value()))
    finally:
        consumer.close()


def retract_changelog(records: list, names: list[str], types: list[DataType]) -> list[str]:
    """A debezium-json sink topic decoded by deltaflow's decoder, printed as Flink prints."""
    decoder = create_decoder("debezium-json", FormatSpec(list(zip(names, types, strict=True))))
    values = [v for _, v in records]
    batch = decoder.decode(RawBatch("sink", 0, list(range(len(values))), values))
    show = row_printer(types)
    return [show(k, r) for k, r in zip(batch.kinds, batch.rows, strict=True)]


def upsert_table(records: list, names: list[str], types: list[DataType]) -> list[str]:
    """An upsert-kafka sink topic (json key and value) folded by key to its final table."""
    decoder = create_decoder("json", FormatSpec(list(zip(names, types, strict=True))))
    show = row_printer(types)
    table: dict[bytes, str] = {}
    for offset, (key, value) in enumerate(records):
        if value is None:
            table.pop(key, None)
            continue
        (row,) = decoder.decode(RawBatch("sink", 0, [offset], [value])).rows
        table[key] = show(RowKind.INSERT, row)
    return sorted(table.values())


def upsert_writes(records: list, names: list[str], types: list[DataType]) -> dict[str, list]:
    """An upsert-kafka sink topic as, per key (the JSON list of its values as text), the
    rows written in order (printed as ``+I[...]``) and None for each tombstone."""
    decoder = create_decoder("json", FormatSpec(list(zip(names, types, strict=True))))
    show = row_printer(types)
    writes: dict[str, list] = {}
    for offset, (key, value) in enumerate(records):
        row = None
        if value is not None:
            (decoded,) = decoder.decode(RawBatch("sink", 0, [offset], [value])).rows
            row = show(RowKind.INSERT, decoded)
        values = [None if v is None else str(v) for v in json.loads(key).values()]
        writes.setdefault(json.dumps(values), []).append(row)
    return writes


def flink_upsert_writes(case: Case, key: list[int]) -> dict[str, list]:
    """What an upsert-kafka sink writes of Flink's changelog, per key as ``upsert_writes``
    (``key``: positions of the primary key columns): +I/+U rows and a tombstone per -D."""
    writes: dict[str, list] = {}
    for line in case.changelog:
        if line.startswith("-U"):
            continue
        fields = split_printed(line)
        values = [None if fields[i] == "null" else fields[i] for i in key]
        row = None if line.startswith("-D") else "+I" + line[2:]
        writes.setdefault(json.dumps(values), []).append(row)
    return writes


def without_rewritten_tombstones(writes: dict[str, list]) -> dict[str, list]:
    """Each key's writes without the tombstones a row follows. An upsert-kafka sink writes
    a tombstone for each -U it gets (Flink's serializer too), and whether a plan leaves
    -U rows to the sink differs between Flink's print sink, which recorded the expected
    changelog, and an upsert-kafka sink; a -D that ends a key's writes is kept."""
    return {
        key: [
            w for i, w in enumerate(seq) if w is not None or i + 1 == len(seq) or seq[i + 1] is None
        ]
        for key, seq in writes.items()
    }


def split_printed(line: str) -> list[str]:
    """The top-level fields of a printed row ``+I[a, b]`` (nested brackets kept whole)."""
    fields, depth, current = [], 0, ""
    for ch in line[3:-1]:
        depth += ch in "[(" and 1 or (ch in "])" and -1) or 0
        if ch == "," and depth == 0:
            fields.append(current.strip())
            current = ""
        else:
            current += ch
    return [*fields, current.strip()]


def multiset(changelog: list[str]) -> list[str]:
    counts: dict[str, int] = {}
    for line in changelog:
        row = "+I" + line[2:]
        counts[row] = counts.get(row, 0) + (1 if line[0] == "+" else -1)
    return sorted(r for r, n in counts.items() for _ in range(n))


def as_debezium_records(changelog: list[str]) -> list[str]:
    """Flink's changelog as a debezium-json sink writes it: -U as -D, +U as +I."""
    return [("-D" if ln[0] == "-" else "+I") + ln[2:] for ln in changelog]
