"""Prometheus metrics over HTTP (``--metrics-port``), served from a daemon thread."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from deltaflow.formats.errors import StateError


def render(job) -> str:
    """The Prometheus text exposition of a job's counters."""
    stats = job.stats
    lines = [
        "# TYPE deltaflow_events_in_total counter",
        *(f'deltaflow_events_in_total{{source="{t}"}} {n}' for t, n in stats.events_in.items()),
        "# TYPE deltaflow_events_out_total counter",
        *(f'deltaflow_events_out_total{{sink="{t}"}} {n}' for t, n in stats.events_out.items()),
        "# TYPE deltaflow_records_skipped_total counter",
        *(f'deltaflow_records_skipped_total{{source="{t}"}} {n}' for t, n in stats.skipped.items()),
        "# TYPE deltaflow_unknown_key_deletes_total counter",
        *(
            f'deltaflow_unknown_key_deletes_total{{table="{t}",policy="{c.policy}"}} {c.unknown}'
            for t, c in job.presence.items()
        ),
        "# TYPE deltaflow_checkpoints_total counter",
        f"deltaflow_checkpoints_total {stats.checkpoints}",
        "# TYPE deltaflow_checkpoint_duration_seconds gauge",
        f"deltaflow_checkpoint_duration_seconds {stats.last_checkpoint_s:.6f}",
        "# TYPE deltaflow_uptime_seconds gauge",
        f"deltaflow_uptime_seconds {time.monotonic() - stats.started:.3f}",
        "# TYPE deltaflow_source_lag gauge",
    ]
    for scan in job.scans:
        source = job.sources.get(scan.node_id)
        if source is None:  # reopening after an in-process recovery: no lag to report now
            continue
        done, end = source.progress()
        if end is not None:
            lines.append(f'deltaflow_source_lag{{source="{scan.table}"}} {max(end - done, 0)}')
    lines += late_records(job)
    lines.append("# TYPE deltaflow_state_bytes gauge")
    try:
        tables = job.backend.stats()
    except StateError:  # the job has ended and closed its state: nothing to measure
        tables = []
    for name, _entries, size in tables:
        lines.append(f'deltaflow_state_bytes{{table="{name}"}} {size}')
    return "\n".join(lines) + "\n"


def late_records(job) -> list[str]:
    """Rows event-time operators (window aggregates, interval joins) found behind the
    watermark and dropped (Flink's numLateRecordsDropped), per operator."""
    graph = getattr(job, "graph", None)
    ops = graph.ops.items() if graph is not None else ()
    counted = [(nid, op) for nid, op in ops if hasattr(op, "late_rows")]
    return ["# TYPE deltaflow_late_records_dropped_total counter"] + [
        f'deltaflow_late_records_dropped_total{{node="{nid}",operator="{type(op).__name__}"}} '
        f"{op.late_rows}"
        for nid, op in counted
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
