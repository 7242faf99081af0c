"""Confluent wire-format Avro formats against a real HTTP schema registry on loopback."""

from __future__ import annotations

import datetime as dt
import io
import json
from decimal import Decimal

import fastavro
import pytest
from registry_server import RegistryServer

from deltaflow.formats.avro_confluent import make_decoder, make_encoder
from deltaflow.formats.changelog import (
    DELETE,
    INSERT,
    TRUNCATED,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Batch,
    RawBatch,
)
from deltaflow.formats.errors import DeltaflowError, FormatError
from deltaflow.formats.schema_registry import SchemaRegistry, SchemaRegistryError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

COLUMNS = [
    ("id", parse_type("BIGINT NOT NULL")),
    ("name", parse_type("STRING")),
    ("weight", parse_type("DECIMAL(6, 2)")),
    ("updated", parse_type("TIMESTAMP(6)")),
]


@pytest.fixture
def registry():
    with RegistryServer() as server:
        yield server


def spec(url: str, on_error: str = "fail", **options: str) -> FormatSpec:
    return FormatSpec(list(COLUMNS), options={"url": url, **options}, on_error=on_error)


def raw(*values: bytes | None, topic: str = "inventory") -> RawBatch:
    return RawBatch(topic, 2, list(range(50, 50 + len(values))), list(values))


def wire(schema_id: int, schema: dict, record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + out.getvalue()


ROW = (7, "scooter", Decimal("3.14"), dt.datetime(2021, 1, 2, 3, 4, 5, 678901))


def test_round_trip_registers_under_the_subject_and_writes_the_wire_format(registry) -> None:
    enc = make_encoder("avro-confluent", spec(registry.url, subject="inventory-value"))
    [value] = enc.encode(Batch([INSERT], [ROW]))
    assert registry.state.subjects == {"inventory-value": [1]}
    assert value[:5] == b"\x00\x00\x00\x00\x01"
    registered = json.loads(registry.state.schemas[0])
    assert registered["name"] == "org.apache.flink.avro.generated.record"
    assert [f["name"] for f in registered["fields"]] == ["id", "name", "weight", "updated"]
    batch = make_decoder("avro-confluent", spec(registry.url)).decode(raw(value, None))
    assert batch.kinds == [INSERT]
    assert batch.rows == [ROW]


def test_reads_a_foreign_writer_schema_by_field_name(registry) -> None:
    writer = {
        "type": "record",
        "name": "Product",
        "namespace": "shop",
        "fields": [
            {"name": "extra", "type": "string"},
            {"name": "id", "type": "int"},
            {"name": "updated", "type": "long"},
            {"name": "weight", "type": "double"},
        ],
    }
    schema_id = registry.state.register("products-value", json.dumps(writer))
    record = {"extra": "ignored", "id": 9, "updated": 1_000_001, "weight": 2.5}
    rows = make_decoder("avro-confluent", spec(registry.url)).decode(
        raw(wire(schema_id, writer, record))
    )
    # int promotes to BIGINT, the long is read as TIMESTAMP(6) micros, name is missing -> NULL
    expected = (9, None, Decimal("2.50"), dt.datetime(1970, 1, 1, 0, 0, 1, 1))
    assert rows.rows == [expected]


def test_unknown_schema_id_names_topic_partition_offset_and_id(registry) -> None:
    dec = make_decoder("avro-confluent", spec(registry.url))
    with pytest.raises(FormatError, match="schema id 42 is unknown") as info:
        dec.decode(raw(b"\x00\x00\x00\x00\x2a\x02"))
    err = info.value
    assert (err.topic, err.partition, err.offset) == ("inventory", 2, 50)


def test_bad_magic_byte_is_a_format_error_or_a_dead_letter(registry) -> None:
    with pytest.raises(FormatError, match="magic byte"):
        make_decoder("avro-confluent", spec(registry.url)).decode(raw(b'{"id": 1}'))
    dec = make_decoder("avro-confluent", spec(registry.url, on_error="dead-letter"))
    assert dec.decode(raw(b"\x01\x00")).rows == []
    assert [(t, p, o, v) for t, p, o, v, _ in dec.dead_letters] == [
        ("inventory", 2, 50, b"\x01\x00")
    ]


def test_writer_schemas_are_fetched_once_per_id(registry) -> None:
    enc = make_encoder("avro-confluent", spec(registry.url, subject="s"))
    values = enc.encode(Batch([INSERT] * 3, [ROW, ROW, ROW]))
    dec = make_decoder("avro-confluent", spec(registry.url))
    assert len(dec.decode(raw(*values)).rows) == 3
    assert len(dec.decode(raw(*values)).rows) == 3
    fetches = [
        p for m, p in registry.state.requests if m == "GET" and p.startswith("/schemas/ids/")
    ]
    assert fetches == ["/schemas/ids/1"]


def test_explicit_schema_option_is_registered_and_used(registry) -> None:
    schema = {
        "type": "record",
        "name": "Item",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "name", "type": ["null", "string"], "default": None},
            {
                "name": "weight",
                "type": [
                    "null",
                    {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2},
                ],
            },
            {
                "name": "updated",
                "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}],
            },
        ],
    }
    options = {"subject": "items-value", "schema": json.dumps(schema)}
    [value] = make_encoder("avro-confluent", spec(registry.url, **options)).encode(
        Batch([INSERT], [ROW])
    )
    assert json.loads(registry.state.schemas[0])["name"] == "Item"
    assert make_decoder("avro-confluent", spec(registry.url)).decode(raw(value)).rows == [ROW]


def test_basic_auth_user_info_is_sent(registry) -> None:
    with RegistryServer(user_info="ann:secret") as secured:
        good = spec(secured.url, subject="a", **{"basic-auth.user-info": "ann:secret"})
        [value] = make_encoder("avro-confluent", good).encode(Batch([INSERT], [ROW]))
        assert make_decoder("avro-confluent", good).decode(raw(value)).rows == [ROW]
        with pytest.raises(SchemaRegistryError, match="basic-auth"):
            make_encoder("avro-confluent", spec(secured.url, subject="a")).encode(
                Batch([INSERT], [ROW])
            )
        in_url = secured.url.replace("http://", "http://ann:secret@")
        assert SchemaRegistry(in_url).schema_text(1) == secured.state.schemas[0]


def test_unreachable_registry_and_missing_options() -> None:
    with RegistryServer() as server:
        dead_url = server.url
    with pytest.raises(DeltaflowError, match="cannot reach the schema registry"):
        make_decoder("avro-confluent", spec(dead_url)).decode(raw(b"\x00\x00\x00\x00\x01\x02"))
    with pytest.raises(DeltaflowError, match="'avro-confluent.url'"):
        make_decoder("avro-confluent", FormatSpec(list(COLUMNS)))
    with pytest.raises(DeltaflowError, match="'avro-confluent.subject'"):
        make_encoder("avro-confluent", spec("http://127.0.0.1:1"))
    with pytest.raises(DeltaflowError, match="'avro-confluent.subjects'"):
        make_decoder("avro-confluent", spec("http://127.0.0.1:1", subjects="x"))


def test_registry_server_protocol(registry) -> None:
    client = SchemaRegistry(registry.url)
    first = client.register("a-value", '"string"')
    assert client.register("b-value", '"string"') == first  # same schema, same id
    second = client.register("a-value", '"long"')
    assert (first, second) == (1, 2)
    assert SchemaRegistry(registry.url).schema_text(2) == '"long"'
    assert client.schema_text(99) is None
    import urllib.request

    with urllib.request.urlopen(registry.url + "/subjects/a-value/versions") as response:
        assert json.loads(response.read()) == [1, 2]
    with urllib.request.urlopen(registry.url + "/subjects/a-value/versions/latest") as response:
        assert json.loads(response.read())["id"] == 2


# ---------------------------------------------------------------------------
# debezium-avro-confluent


def debezium_schema() -> dict:
    value = {
        "type": "record",
        "name": "Value",
        "namespace": "dbserver1.inventory.products",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "name", "type": ["null", "string"], "default": None},
            {
                "name": "weight",
                "type": [
                    "null",
                    {
                        "type": "bytes",
                        "scale": 2,
                        "precision": 6,
                        "connect.name": "org.apache.kafka.connect.data.Decimal",
                        "logicalType": "decimal",
                    },
                ],
                "default": None,
            },
            {
                "name": "updated",
                "type": {"type": "long", "connect.name": "io.debezium.time.MicroTimestamp"},
            },
        ],
        "connect.name": "dbserver1.inventory.products.Value",
    }
    source = {
        "type": "record",
        "name": "Source",
        "namespace": "io.debezium.connector.postgresql",
        "fields": [{"name": "table", "type": "string"}, {"name": "lsn", "type": ["null", "long"]}],
    }
    return {
        "type": "record",
        "name": "Envelope",
        "namespace": "dbserver1.inventory.products",
        "fields": [
            {"name": "before", "type": ["null", value], "default": None},
            {
                "name": "after",
                "type": ["null", "dbserver1.inventory.products.Value"],
                "default": None,
            },
            {"name": "source", "type": source},
            {"name": "op", "type": "string"},
            {"name": "ts_ms", "type": ["null", "long"], "default": None},
        ],
    }


def change(op: str, before: dict | None, after: dict | None) -> dict:
    source = {"table": "products", "lsn": 33}
    return {"before": before, "after": after, "source": source, "op": op, "ts_ms": 1}


def test_debezium_envelope_becomes_a_changelog(registry) -> None:
    schema = debezium_schema()
    sid = registry.state.register("dbserver1.inventory.products-value", json.dumps(schema))
    v1 = {"id": 7, "name": "scooter", "weight": Decimal("3.14"), "updated": 1_600_000_000_000_001}
    v2 = dict(v1, weight=Decimal("5.18"))
    messages = [
        wire(sid, schema, change("r", None, v1)),
        wire(sid, schema, change("u", v1, v2)),
        wire(sid, schema, change("d", v2, None)),
        None,
        wire(sid, schema, change("c", None, v1)),
    ]
    batch = make_decoder("debezium-avro-confluent", spec(registry.url)).decode(raw(*messages))
    stamp = dt.datetime(2020, 9, 13, 12, 26, 40, 1)
    r1 = (7, "scooter", Decimal("3.14"), stamp)
    r2 = (7, "scooter", Decimal("5.18"), stamp)
    assert batch.kinds == [INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE, INSERT]
    assert batch.rows == [r1, r1, r2, r2, r1]


def test_debezium_update_without_before_names_the_before_image_option(registry) -> None:
    """The remedy that makes the result exact comes first; skipping is said to lose changes."""
    schema = debezium_schema()
    sid = registry.state.register("x-value", json.dumps(schema))
    after = {"id": 1, "name": None, "weight": None, "updated": 0}
    dec = make_decoder("debezium-avro-confluent", spec(registry.url))
    with pytest.raises(FormatError, match="REPLICA IDENTITY FULL") as info:
        dec.decode(raw(wire(sid, schema, change("u", None, after))))
    assert info.value.offset == 50
    assert "Set 'debezium-avro-confluent.before-image' = 'state'" in str(info.value)
    assert "loses their changes" in str(info.value)
    with pytest.raises(FormatError, match="a truncate") as info:
        dec.decode(raw(wire(sid, schema, change("t", None, None))))
    assert "'debezium-avro-confluent.before-image' = 'state'" in str(info.value)
    assert "skip or dead-letter" not in str(info.value)


def test_debezium_partial_images_are_handed_on(registry) -> None:
    """With before-images from state: an update without one gives its +U alone, a
    truncate a -D of TRUNCATED (the source's normalizer makes both exact)."""
    schema = debezium_schema()
    sid = registry.state.register("x-value", json.dumps(schema))
    after = {"id": 1, "name": None, "weight": None, "updated": 0}
    dec = make_decoder("debezium-avro-confluent", spec(registry.url))
    dec.accept_partial_images()
    batch = dec.decode(
        raw(wire(sid, schema, change("u", None, after)), wire(sid, schema, change("t", None, None)))
    )
    assert batch.kinds == [UPDATE_AFTER, DELETE]
    assert batch.rows[1] is TRUNCATED and dec.truncates == 1


def test_debezium_encoder_writes_c_and_d_envelopes_as_flink(registry) -> None:
    enc = make_encoder("debezium-avro-confluent", spec(registry.url, subject="out-value"))
    r2 = ROW[:2] + (Decimal("9.99"), ROW[3])
    kinds = [INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]
    values = enc.encode(Batch(kinds, [ROW, ROW, r2, r2]))
    schema = fastavro.parse_schema(json.loads(registry.state.schemas[0]))
    envelopes = [fastavro.schemaless_reader(io.BytesIO(v[5:]), schema, None) for v in values]
    assert [(e["op"], e["before"] is None, e["after"] is None) for e in envelopes] == [
        ("c", True, False),
        ("d", False, True),
        ("c", True, False),
        ("d", False, True),
    ]
    batch = make_decoder("debezium-avro-confluent", spec(registry.url)).decode(raw(*values))
    assert batch.kinds == [INSERT, DELETE, INSERT, DELETE]
    assert batch.rows == [ROW, ROW, r2, r2]


def test_a_plain_int_or_long_is_read_as_time_millis_and_checked(registry) -> None:
    writer = {"type": "record", "name": "w", "fields": [{"name": "t", "type": "long"}]}
    sid = registry.state.register("times-value", json.dumps(writer))
    columns = [("t", parse_type("TIME(0)"))]
    dec = make_decoder("avro-confluent", FormatSpec(columns, options={"url": registry.url}))
    assert dec.decode(raw(wire(sid, writer, {"t": 3_723_000}))).rows == [(dt.time(1, 2, 3),)]
    # Debezium's MicroTime is a long of microseconds: not silently read as milliseconds
    with pytest.raises(FormatError, match="column 't'.*not a time of day"):
        dec.decode(raw(wire(sid, writer, {"t": 3_723_000_000})))
