"""The workload run against a private PostgreSQL server while real Debezium captures it.

``capture(server, out)`` loads the schema and the snapshot rows into one database per
REPLICA IDENTITY setting (``dbz_workload.DATABASES``), starts the capture program
(``dbz_capture.py``, its own process and JVM) with one engine per database and decimal
mode, waits until every engine has ended its snapshot, runs the streamed statements in
each database and waits for the capture to write its files under ``out``: folder
``<mode>-<schemas|noschemas>`` for the database ``shop`` (the combos of ``COMBOS``) and
``full-<mode>-...`` for ``shop_full``. ``python dbz_run.py OUT`` does the
same with a server of its own and also writes PostgreSQL's final tables to
``OUT/postgres/<table>.jsonl`` (the files other work develops against).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dbz_workload as wl
from dbz_pg import PostgresServer

HERE = Path(__file__).resolve().parent
MODES = ("precise", "string")
CONVERTERS = ("schemas", "noschemas")
TIMEOUT = 180  # s, for each of: the snapshots, the end of the stream


def folder(identity: str, mode: str) -> str:
    """The capture's name for the engine of ``mode`` on the database of ``identity``."""
    return mode if identity == "default" else f"{identity}-{mode}"


# combo (a folder of the capture) -> (identity, decimal mode)
COMBOS = {f"{folder(i, m)}-{c}": (i, m) for i in wl.DATABASES for m in MODES for c in CONVERTERS}


def capture(server: PostgresServer, out: Path) -> Path:
    engines = []
    for identity, dbname in wl.DATABASES.items():
        server.execute("postgres", f"CREATE DATABASE {dbname}")
        for statement in [*wl.schema(identity), *wl.SNAPSHOT]:
            server.execute(dbname, statement)
        engines += [{"folder": folder(identity, mode), "dbname": dbname, "mode": mode,
                     "prefix": f"{wl.PREFIXES[identity]}_{mode}"} for mode in MODES]  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="deltaflow-dbz-"))
    spec = {"host": "127.0.0.1", "port": server.port, "out": str(out), "work": str(work),
            "engines": engines, "marker_topic": wl.MARKER_TOPIC, "timeout": TIMEOUT}  # fmt: skip
    (work / "spec.json").write_text(json.dumps(spec))
    log = open(work / "capture.log", "w+")  # noqa: SIM115 (read back on failure)
    cmd = [sys.executable, str(HERE / "dbz_capture.py"), str(work / "spec.json")]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work,
                            env={**os.environ, "PYTHONPATH": str(HERE)})  # fmt: skip
    try:
        ready = [out / f"{e['folder']}.ready" for e in engines]
        _wait(proc, log, lambda: all(path.exists() for path in ready), "snapshot")
        for statement in wl.STREAM:
            for dbname in wl.DATABASES.values():
                server.execute(dbname, statement)
        written = out / "capture.done"
        _wait(proc, log, lambda: written.exists() or proc.poll() is not None, "end of the stream")
        if not written.exists():
            raise RuntimeError(f"the Debezium capture failed:\n{_tail(log)}")
        try:  # the files are complete; the JVM's shutdown gets a while, then is ended
            proc.wait(30)
        except subprocess.TimeoutExpired:
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(work, ignore_errors=True)
    return out


def _wait(proc: subprocess.Popen, log, done, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not done():
        if proc.poll() is not None and not done():
            raise RuntimeError(f"the Debezium capture stopped before the {what}:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {what} from Debezium in {TIMEOUT} s:\n{_tail(log)}")
        time.sleep(0.1)


def _tail(log) -> str:
    log.flush()
    log.seek(0)
    return log.read()[-6000:]


def final_tables(server: PostgresServer, dbname: str) -> dict[str, list[dict]]:
    """Each captured table as PostgreSQL has it at the end, ordered by its key."""
    tables = {}
    with server.connect(dbname) as conn:
        for table in wl.TABLES:
            cur = conn.execute(f"SELECT * FROM {table} ORDER BY 1")
            names = [d.name for d in cur.description]
            tables[table] = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    return tables


def main(out: str) -> None:
    target = Path(out)
    server = PostgresServer().start()
    try:
        started = time.monotonic()
        capture(server, target)
        print(f"captured in {time.monotonic() - started:.1f} s")
        parts = [
            ("schema (shop_full also makes customers and orders FULL)", wl.SCHEMA),
            ("snapshot", wl.SNAPSHOT),
            ("stream", wl.STREAM),
        ]
        script = "".join(f"-- {name}\n" + "".join(f"{s};\n" for s in part) for name, part in parts)
        (target / "workload.sql").write_text(script)
        for identity, dbname in wl.DATABASES.items():
            final = target / ("postgres" if identity == "default" else f"postgres-{identity}")
            final.mkdir(exist_ok=True)
            for table, rows in final_tables(server, dbname).items():
                lines = [json.dumps({k: None if v is None else str(v) for k, v in r.items()})
                         for r in rows]  # fmt: skip
                (final / f"{table}.jsonl").write_text("".join(f"{ln}\n" for ln in lines))
    finally:
        server.stop()


if __name__ == "__main__":
    main(sys.argv[1])
