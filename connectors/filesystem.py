"""The ``filesystem`` connector: a bounded line source over a file or a directory, and an
append-only line sink writing part files into a directory (as Flink does).

A line is one record (json, debezium-json, raw). In decode errors the "topic" is the
file path, the "partition" the file's index, and the "offset" the 1-based line number.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from deltaflow.connectors.base import INSERT_ONLY, LocalSink, LocalSource, TableSpec
from deltaflow.connectors.layout import build_layout, format_prefixes, make_encoder
from deltaflow.connectors.options import TableOptions
from deltaflow.formats.changelog import Batch, RawBatch, RowKind

KNOWN = ("path", "format", "source.monitor-interval", "sink.parallelism", "deadletter.topic")
LINE_FORMATS = ("json", "debezium-json", "raw")


def _options(spec: TableSpec) -> TableOptions:
    opts = TableOptions(spec.name, "filesystem", spec.options, KNOWN, format_prefixes(spec.options))
    fmt = opts.required("format")
    if fmt not in LINE_FORMATS:
        raise opts.error(f"the filesystem connector reads and writes lines; format '{fmt}' is not "
                         f"supported, use one of: {', '.join(LINE_FORMATS)}")  # fmt: skip
    if opts.get("source.monitor-interval"):
        raise opts.error(
            "option 'source.monitor-interval' (watching for new files) is not supported"
        )
    if opts.get("deadletter.topic"):
        raise opts.error("option 'deadletter.topic' needs a Kafka table; use "
                         f"'{fmt}.ignore-parse-errors' = 'true' to skip bad lines")  # fmt: skip
    for _, key, _ in spec.metadata:
        if key.startswith("value."):
            continue
        raise opts.error(f"metadata '{key}' is not available from the filesystem connector")
    return opts


def _files(opts: TableOptions) -> list[Path]:
    root = Path(opts.required("path"))
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise opts.error(f"option 'path' = '{root}' is neither a file nor a directory")
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        found.extend(Path(dirpath) / f for f in sorted(filenames) if not f.startswith((".", "_")))
    return found


def source_mode(spec: TableSpec) -> frozenset[RowKind]:
    opts = _options(spec)
    layout = build_layout(spec, opts)
    value, _ = layout.decoders(spec.name)
    return frozenset(value.changelog_mode)


def open_source(spec: TableSpec, bootstrap: str | None = None, start: str | None = None):
    opts = _options(spec)
    if start not in (None, "earliest"):
        raise opts.error(
            f"start position '{start}' is not available for files; they are read from the start"
        )
    return FileSource(opts, spec)


class FileSource(LocalSource):
    """Reads every file in path order, ``max_records`` lines at a time."""

    def __init__(self, opts: TableOptions, spec: TableSpec) -> None:
        self.opts = opts
        self.layout = build_layout(spec, opts)
        self.decoder, _ = self.layout.decoders(spec.name)
        self.changelog_mode = frozenset(self.decoder.changelog_mode)
        self.files: list[Path] = []
        self.file = 0
        self.line = 0  # lines of the current file already returned
        self.done_lines = 0
        self.opened = False
        self._handle = None

    def open(self, resume: dict | None = None) -> None:
        self.files = _files(self.opts)
        self.opened = True
        if resume:
            self.file, self.line = int(resume["file"]), int(resume["line"])
        self.done_lines = self.line

    def _reader(self):
        if self._handle is None:
            self._handle = open(self.files[self.file], "rb")  # noqa: SIM115 - kept open across polls
            for _ in range(self.line):
                self._handle.readline()
        return self._handle

    def poll(self, max_records: int, timeout: float) -> Batch:
        while self.file < len(self.files):
            handle = self._reader()
            lines = []
            for _ in range(max_records):
                text = handle.readline()
                if not text:
                    break
                lines.append(text.rstrip(b"\r\n"))
            if lines:
                return self._decode(lines)
            handle.close()
            self._handle = None
            self.file, self.line = self.file + 1, 0
        return Batch()

    def _decode(self, lines: list[bytes]) -> Batch:
        first = self.line + 1
        offsets = list(range(first, first + len(lines)))
        keep = [i for i, text in enumerate(lines) if text.strip()]
        raw = RawBatch(str(self.files[self.file]), self.file, [offsets[i] for i in keep],
                       [lines[i] for i in keep])  # fmt: skip
        batch = self.decoder.decode(raw) if keep else Batch()
        self.line += len(lines)  # only once decoded: a failed poll leaves the position put
        self.done_lines += len(lines)
        return batch

    def position(self) -> dict:
        return {"file": self.file, "line": self.line}

    def finished(self) -> bool:
        return self.opened and self.file >= len(self.files)

    def progress(self) -> tuple[int, int | None]:
        return self.done_lines, None

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def sink_mode(spec: TableSpec) -> frozenset[RowKind]:
    _options(spec)
    return INSERT_ONLY


def open_sink(spec: TableSpec, bootstrap: str | None = None, out=None):
    opts = _options(spec)
    layout = build_layout(spec, opts)
    encoder = make_encoder(spec.name, layout.value_format, layout.value_spec)
    return FileSink(opts, encoder)


def sink_encoders(spec: TableSpec) -> None:
    """The sink's encoder built, not used (``connectors.base.build_sink_encoders``)."""
    layout = build_layout(spec, _options(spec))
    make_encoder(spec.name, layout.value_format, layout.value_spec)


class FileSink(LocalSink):
    """Appends one line per encoded record to ``<path>/part-<uuid>-0-0``."""

    accepted_mode = INSERT_ONLY

    def __init__(self, opts: TableOptions, encoder) -> None:
        directory = Path(opts.required("path"))
        if directory.exists() and not directory.is_dir():
            raise opts.error(
                f"option 'path' = '{directory}' must be a directory for a filesystem sink"
            )
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"part-{uuid.uuid4()}-0-0"
        self.encoder = encoder
        self.handle = open(self.path, "ab")  # noqa: SIM115 - the sink's lifetime

    def write(self, batch: Batch) -> None:
        if batch:
            values = self.encoder.encode(batch)
            self.handle.write(b"".join(v + b"\n" for v in values if v is not None))

    def flush(self, timeout: float) -> None:
        self.handle.flush()
        os.fsync(self.handle.fileno())

    def close(self) -> None:
        if not self.handle.closed:
            self.flush(0)
            self.handle.close()
