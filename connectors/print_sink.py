"""The ``print`` and ``blackhole`` sinks (Flink's option names and output text)."""

from __future__ import annotations

import sys

from deltaflow.connectors.base import ALL_KINDS, LocalSink, TableSpec
from deltaflow.connectors.options import TableOptions
from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.printing import row_printer

PRINT_OPTIONS = ("print-identifier", "standard-error", "sink.parallelism")
BLACKHOLE_OPTIONS = ("sink.parallelism",)


def _options(spec: TableSpec) -> TableOptions:
    name = spec.options.get("connector", "print")
    known = PRINT_OPTIONS if name == "print" else BLACKHOLE_OPTIONS
    return TableOptions(spec.name, name, spec.options, known)


def sink_mode(spec: TableSpec) -> frozenset[RowKind]:
    _options(spec)
    return ALL_KINDS


def open_sink(spec: TableSpec, bootstrap: str | None = None, out=None):
    opts = _options(spec)
    if opts.connector == "blackhole":
        return BlackholeSink()
    if out is None:
        out = sys.stderr if opts.boolean("standard-error") else sys.stdout
    types = [t for _, t in spec.physical] + [t for _, _, t in spec.metadata]
    identifier = opts.get("print-identifier")
    return PrintSink(out, types, f"{identifier}> " if identifier else "")


def sink_encoders(spec: TableSpec) -> None:
    """Print and blackhole sinks compile no code (``connectors.base.build_sink_encoders``)."""
    _options(spec)


class PrintSink(LocalSink):
    """Writes ``+I[1, Alice]`` lines, prefixed ``id> `` with a print-identifier."""

    accepted_mode = ALL_KINDS

    def __init__(self, out, types, prefix: str) -> None:
        self.out = out
        self.show = row_printer(types)
        self.prefix = prefix

    def write(self, batch: Batch) -> None:
        if not batch:
            return
        show, prefix = self.show, self.prefix
        lines = [prefix + show(k, r) for k, r in zip(batch.kinds, batch.rows, strict=True)]
        self.out.write("\n".join(lines) + "\n")

    def flush(self, timeout: float) -> None:
        self.out.flush()

    def close(self) -> None:
        self.out.flush()


class BlackholeSink(LocalSink):
    """Accepts every change and keeps nothing (for benchmarks)."""

    accepted_mode = ALL_KINDS

    def __init__(self) -> None:
        self.count = 0

    def write(self, batch: Batch) -> None:
        self.count += len(batch)

    def flush(self, timeout: float) -> None:
        return None

    def close(self) -> None:
        return None
