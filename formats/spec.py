"""What a format is asked to do: the contract between formats and connectors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from deltaflow.formats.changelog import Batch, RawBatch, RowKind
from deltaflow.formats.prefilter import PreFilter
from deltaflow.formats.types import DataType

ON_ERROR_CHOICES = ("fail", "skip", "dead-letter")


@dataclass(frozen=True)
class FormatSpec:
    """The columns a format decodes or encodes, its options, and its bad-input policy.

    ``physical``: columns in row order. ``metadata``: format metadata keys without the
    connector's ``value.`` prefix (``source.timestamp``), appended after the physical
    columns in this order. ``options``: the format's options, prefix stripped
    (``schema-include``, not ``debezium-json.schema-include``). ``demanded``: the
    physical columns the job reads (None: all); a decoder may leave the others None
    without reading them, as Flink's projection pushdown leaves them out.
    ``prefilter``: tests from the job's WHERE (``deltaflow.formats.prefilter``); a
    decoder may drop the row images that fail them before building their rows.
    """

    physical: list[tuple[str, DataType]]
    metadata: list[tuple[str, DataType]] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    on_error: str = "fail"
    demanded: frozenset[str] | None = None
    prefilter: PreFilter | None = None

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.physical]

    @property
    def types(self) -> list[DataType]:
        return [t for _, t in self.physical]


class Decoder(Protocol):
    changelog_mode: frozenset[RowKind]
    skipped: int  # unreadable records skipped (ignore-parse-errors)
    filtered: int  # records the pre-filter dropped (never built into rows)
    logical_messages: int  # Debezium logical decoding messages (op "m") skipped
    dead_letters: list[tuple[str, int, int, bytes | None, str]]

    def decode(self, raw: RawBatch) -> Batch: ...


class Encoder(Protocol):
    def encode(self, batch: Batch) -> list[bytes | None]: ...
