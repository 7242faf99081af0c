"""Prometheus metrics over HTTP (``--metrics-port``), served from a daemon thread.

Every family has ``# HELP`` and ``# TYPE``; names follow Prometheus' conventions
(counters end in ``_total``, units in the name: ``_seconds``, ``_bytes``,
``_records``), labels are names a user knows: the table as the job writes it,
``topic`` and ``partition``, and the operator as EXPLAIN names it with its id (as
``deltaflow state inspect`` shows it). The lag is the job thread's last sample
(``progress.refresh_lag``, at most 0.5 s old while the job runs).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from deltaflow.formats.errors import StateError
from deltaflow.processor.progress import public_name

Sample = tuple[dict[str, object], float | int | str]  # str: a value already formatted
_OPERATOR_TABLE = re.compile(r"(\d+):([A-Za-z]+):")
CHECKPOINT_S = "deltaflow_checkpoint_duration_seconds"


def family(name: str, kind: str, text: str, samples: Iterable[Sample]) -> list[str]:
    lines = [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
    for labels, value in samples:
        inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
        lines.append(f"{name}{{{inner}}} {value}" if inner else f"{name} {value}")
    return lines


def _escape(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _tables(counts: dict[str, int]) -> list[Sample]:
    return [({"table": public_name(t)}, n) for t, n in counts.items()]


def render(job) -> str:
    """The Prometheus text exposition of a job's counters."""
    stats = job.stats
    lines = [
        *family("deltaflow_events_in_total", "counter",
                "Changes read from each source table (records, or row images of a "
                "changelog record), including those the WHERE clause drops.",
                _tables(stats.events_in)),
        *family("deltaflow_events_out_total", "counter",
                "Changes written to each sink table.", _tables(stats.events_out)),
        *family("deltaflow_records_skipped_total", "counter",
                "Unreadable records skipped because the format's ignore-parse-errors is on.",
                _tables(stats.skipped)),
        *family("deltaflow_debezium_messages_skipped_total", "counter",
                "Debezium logical decoding messages (op 'm') skipped: they carry no row.",
                _tables(stats.messages)),
        *family("deltaflow_unknown_key_deletes_total", "counter",
                "Deletes and updates of primary keys the source never inserted "
                "('deltaflow.unknown-key-delete'); policy says what was done with them.",
                [({"table": public_name(t), "policy": c.policy}, c.unknown)
                 for t, c in job.inputs.presence.items()]),
        *family("deltaflow_source_lag_records", "gauge",
                "Records of the partition not read yet: the high watermark of the last "
                "fetch response (a bounded read: its end offset) minus the job's position.",
                _lag_samples(stats.lag)),
        *family("deltaflow_checkpoints_total", "counter",
                "Checkpoints committed since the job started.", [({}, stats.checkpoints)]),
        f"# HELP {CHECKPOINT_S} Time the checkpoints since the job started took, from "
        "flushing the sinks to the commit.",
        f"# TYPE {CHECKPOINT_S} summary",
        f"{CHECKPOINT_S}_sum {stats.checkpoint_s_total:.6f}",
        f"{CHECKPOINT_S}_count {stats.checkpoints}",
        *family("deltaflow_last_checkpoint_duration_seconds", "gauge",
                "Time of the last checkpoint, from flushing the sinks to the commit.",
                [({}, f"{stats.last_checkpoint_s:.6f}")]),
        *family("deltaflow_last_checkpoint_age_seconds", "gauge",
                "Seconds since the last checkpoint committed (since the start before the "
                "first).", [({}, f"{stats.checkpoint_age_s():.3f}")]),
        *family("deltaflow_last_checkpoint_epoch", "gauge",
                "Number of the last committed checkpoint, kept across restarts.",
                [({}, job.epoch.number)]),
        *family("deltaflow_uptime_seconds", "gauge", "Seconds since the job started.",
                [({}, f"{time.monotonic() - stats.started:.3f}")]),
        *family("deltaflow_late_records_dropped_total", "counter",
                "Rows an event-time operator dropped because the watermark had passed them "
                "(Flink's numLateRecordsDropped).", _late_samples(job)),
        *family("deltaflow_state_bytes", "gauge",
                "Bytes of the LMDB pages holding each operator's state (committed).",
                _state_samples(job)),
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def _lag_samples(lag: dict[str, dict[tuple[str, int], int]]) -> list[Sample]:
    return [
        ({"table": public_name(table), "topic": topic, "partition": part}, n)
        for table, parts in lag.items()
        for (topic, part), n in sorted(parts.items())
    ]


def _late_samples(job) -> list[Sample]:
    """Per event-time operator (window aggregate, keep-first Deduplicate) its late rows."""
    graph = job.graph
    out: list[Sample] = []
    for node_id, op in list(graph.ops.items()):
        if op.late_rows is not None:
            name = type(graph.nodes[node_id]).__name__
            out.append(({"operator": name, "operator_id": node_id}, op.late_rows))
    return out


def _state_samples(job) -> list[Sample]:
    """Bytes per operator (its tables summed); a source mirror is the ``Mirror``
    operator, the check of unknown primary keys ``KeyPresence``."""
    try:
        tables = job.backend.stats()
    except StateError:  # the job has ended and closed its state: nothing to measure
        return []
    sizes: dict[tuple[str, str], int] = {}
    for name, _entries, size in tables:
        match = _OPERATOR_TABLE.match(name)
        if match is not None:
            key = (match.group(2), match.group(1))
        elif name.startswith("keyset."):
            key = ("KeyPresence", "")
        else:
            key = ("Other", "")
        sizes[key] = sizes.get(key, 0) + size
    return [
        ({"operator": op, "operator_id": node} if node else {"operator": op}, size)
        for (op, node), size in sorted(sizes.items())
    ]


def serve_metrics(job, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            body = render(job).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="metrics").start()
    return server
