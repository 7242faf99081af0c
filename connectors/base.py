"""The connector contract the runtime calls: table specs, sources, sinks, and the factory.

A source opens at a position (or at its table's startup mode), polls decoded batches,
reports a JSON-able position after the last record returned, and says when a bounded
read is finished. A sink writes batches and flushes them before a deadline.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.errors import ConnectorError
from deltaflow.formats.prefilter import PreFilter
from deltaflow.formats.types import DataType

if TYPE_CHECKING:  # the capabilities' types (those modules do not import this one)
    from deltaflow.connectors.dead_letters import DeadLetterWriter
    from deltaflow.connectors.patience import Patience
    from deltaflow.connectors.transactions import TransactionRequest

# Connector name -> module implementing it. Each module has ``open_source(spec, bootstrap,
# start)``, ``source_mode(spec)`` (for sources) and ``open_sink(spec, bootstrap, out)``,
# ``sink_mode(spec)`` (for sinks).
CONNECTORS = {
    "kafka": "deltaflow.connectors.kafka",
    "upsert-kafka": "deltaflow.connectors.upsert_kafka",
    "filesystem": "deltaflow.connectors.filesystem",
    "datagen": "deltaflow.connectors.datagen",
    "print": "deltaflow.connectors.print_sink",
    "blackhole": "deltaflow.connectors.print_sink",
}


@dataclass(frozen=True)
class TableSpec:
    """A table as the catalog declares it.

    ``metadata``: (column, key as written in SQL such as ``value.source.timestamp``,
    ``topic``, ``partition``, ``offset``, ``timestamp``, ``headers``, type), appended
    after the physical columns in this order. ``demanded``: for a source, the physical
    columns the job reads (None: all); the others may come back as None. ``prefilter``:
    for a source, tests every row the job reads passes (its format may drop the others).
    """

    name: str
    options: dict[str, str]
    physical: list[tuple[str, DataType]]
    metadata: list[tuple[str, str, DataType]] = field(default_factory=list)
    primary_key: list[str] = field(default_factory=list)
    demanded: frozenset[str] | None = None
    prefilter: PreFilter | None = None

    @property
    def column_names(self) -> list[str]:
        return [n for n, _ in self.physical] + [n for n, _, _ in self.metadata]


class Source(Protocol):
    """A source partition set: opens at a position, polls batches, reports its position.

    Some capabilities are optional; every source declares them (``LocalSource`` gives the
    defaults of a source that has none): ``filtered``, the changes its format's
    pre-filter dropped so far (they count as read); ``skipped``, the unreadable records
    its formats skipped (ignore-parse-errors); ``logical_messages``, the Debezium
    logical decoding messages (op "m") skipped; ``dead_letter_writer``, where its
    unreadable records go (None: nowhere, the bad-input policy decides); and
    ``partition_lag``, the records of each partition not read yet (None: no lag known)."""

    changelog_mode: frozenset[RowKind]
    dead_letter_writer: DeadLetterWriter | None

    @property
    def filtered(self) -> int: ...
    @property
    def skipped(self) -> int: ...
    @property
    def logical_messages(self) -> int: ...
    def partition_lag(self) -> dict[tuple[str, int], int] | None: ...

    def open(self, resume: dict | None = None) -> None: ...
    def poll(self, max_records: int, timeout: float) -> Batch: ...
    def position(self) -> dict: ...
    def finished(self) -> bool: ...
    def progress(self) -> tuple[int, int | None]: ...
    def close(self) -> None: ...


class LocalSource:
    """The optional capabilities of ``Source`` for a source without them (no pre-filter
    count, no skips reported, no dead-letter topic, no lag): the file and datagen sources."""

    filtered = 0
    skipped = 0
    logical_messages = 0
    dead_letter_writer: DeadLetterWriter | None = None

    def partition_lag(self) -> dict[tuple[str, int], int] | None:
        return None


@runtime_checkable
class PartitionedSource(Source, Protocol):
    """A source reading several partitions (the Kafka ones), for per-partition watermarks."""

    def poll_runs(self, max_records: int, timeout: float) -> tuple[Batch, list]:
        """``poll``, with (partition, row count) of each run of consecutive rows."""
        ...

    def partition_states(self) -> tuple[list, set]:
        """The assigned partitions, and those finished (end of a bounded read)."""
        ...


class Sink(Protocol):
    """Writes batches and flushes them before a deadline.

    Kafka sinks also wait for their brokers with the job's patience (``bind_patience``:
    the job's waits end on a stop) and may take part in the job's Kafka transaction:
    ``transaction_request`` says what an exactly-once sink needs (None: no transaction),
    ``join_transaction`` hands it the transaction's producer. ``LocalSink`` gives the
    defaults of a sink that needs neither."""

    accepted_mode: frozenset[RowKind]

    def write(self, batch: Batch) -> None: ...
    def flush(self, timeout: float) -> None: ...
    def close(self) -> None: ...
    def bind_patience(self, patience_for: Callable[[str | None], Patience]) -> None: ...
    def transaction_request(self) -> TransactionRequest | None: ...
    def join_transaction(self, producer: Any) -> None: ...


class LocalSink:
    """The Kafka capabilities of ``Sink`` for a sink without brokers (print, blackhole,
    filesystem): no waits to bound, never in a transaction."""

    def bind_patience(self, patience_for: Callable[[str | None], Patience]) -> None:
        return None

    def transaction_request(self) -> TransactionRequest | None:
        return None

    def join_transaction(self, producer: Any) -> None:
        raise AssertionError("a sink without brokers has no transaction to join")


ALL_KINDS = frozenset(RowKind)
INSERT_ONLY = frozenset({RowKind.INSERT})
UPSERT_KINDS = frozenset({RowKind.UPDATE_AFTER, RowKind.DELETE})


def _module(spec: TableSpec, role: str):
    name = spec.options.get("connector")
    if not name:
        raise ConnectorError(
            f"table '{spec.name}': option 'connector' is required; choose one of: "
            + ", ".join(CONNECTORS)
        )
    path = CONNECTORS.get(name)
    if path is None:
        raise ConnectorError(
            f"table '{spec.name}': unknown connector '{name}'; choose one of: "
            + ", ".join(CONNECTORS)
        )
    module = importlib.import_module(path)
    if not hasattr(module, f"open_{role}"):
        which = [
            n for n, p in CONNECTORS.items() if hasattr(importlib.import_module(p), f"open_{role}")
        ]
        raise ConnectorError(
            f"table '{spec.name}': connector '{name}' cannot be used as a {role}; "
            f"{role} connectors are: " + ", ".join(which)
        )
    return module


def for_new_run(position: dict | None) -> dict | None:
    """A checkpointed source position as a new run (process) opens it: without the end
    offsets of a bounded read, which belong to the run that found them; each run reads
    from the checkpoint to the end it finds at its own start."""
    if not isinstance(position, dict) or "ends" not in position:
        return position
    return {k: v for k, v in position.items() if k != "ends"}


def create_source(
    spec: TableSpec, *, bootstrap: str | None = None, start: str | None = None
) -> Source:
    """A source for the table. ``bootstrap`` overrides ``properties.bootstrap.servers``;
    ``start`` overrides the startup mode: ``earliest``, ``latest``, ``committed``,
    ``timestamp:MS`` or ``offsets:TOPIC:PARTITION:OFFSET,...``."""
    return _module(spec, "source").open_source(spec, bootstrap, start)


def create_sink(spec: TableSpec, *, bootstrap: str | None = None, out=None) -> Sink:
    """A sink for the table; ``out`` is the text stream of the print connector."""
    return _module(spec, "sink").open_sink(spec, bootstrap, out)


def build_sink_encoders(spec: TableSpec) -> None:
    """Builds the sink's encoders without opening it (no producer, no file): what
    ``deltaflow explain --code`` lists of a sink."""
    _module(spec, "sink").sink_encoders(spec)


def source_changelog_mode(spec: TableSpec) -> frozenset[RowKind]:
    """The kinds a source of this table produces, without opening it."""
    return _module(spec, "source").source_mode(spec)


def sink_accepted_mode(spec: TableSpec) -> frozenset[RowKind]:
    """The kinds a sink of this table accepts, without opening it."""
    return _module(spec, "sink").sink_mode(spec)
