"""A private PostgreSQL 15 server for the tests: a temporary cluster on a loopback port.

The server refuses to run as root, so the data directory belongs to the ``postgres`` OS
user and ``initdb`` / ``pg_ctl`` run as that user (``runuser``) when the tests run as
root. The cluster has ``wal_level = logical`` (Debezium's pgoutput slot needs it) and
trusts loopback connections, so neither the tests nor Debezium need a password.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "wal_level": "logical",
    "max_replication_slots": "8",
    "max_wal_senders": "8",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "32MB",
    "max_connections": "30",
    "unix_socket_directories": "''",
    "timezone": "'UTC'",
}


def bindir() -> Path:
    """PostgreSQL's server programs: ``pg_config --bindir``, else Debian's 15 folder."""
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True, check=True)
        path = Path(out.stdout.strip())
        if (path / "initdb").exists():
            return path
    return Path("/usr/lib/postgresql/15/bin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """``start()`` makes and starts the cluster, ``stop()`` stops it and removes its files."""

    def __init__(self) -> None:
        self.bin = bindir()
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="deltaflow-pg-"))
        self.data = self.root / "data"
        self.as_root = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")

    def start(self) -> PostgresServer:
        if self.as_root:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self.root.chmod(0o700)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "--encoding=UTF8", "--locale=C.UTF-8")  # fmt: skip
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.writelines(f"{k} = {v}\n" for k, v in SETTINGS.items())
        hba = "host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n"
        (self.data / "pg_hba.conf").write_text(hba)
        self._run("pg_ctl", "-D", str(self.data), "-o", f"-p {self.port}", "-w",
                  "-l", str(self.root / "server.log"), "start")  # fmt: skip
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                with self.connect("postgres"):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def connect(self, dbname: str) -> psycopg.Connection:
        return psycopg.connect(host="127.0.0.1", port=self.port, user="postgres",
                               dbname=dbname, autocommit=True)  # fmt: skip

    def execute(self, dbname: str, sql: str) -> None:
        """Runs a script of statements, each in its own transaction (autocommit)."""
        with self.connect(dbname) as conn:
            conn.execute(sql)

    def query(self, dbname: str, sql: str) -> list[tuple]:
        with self.connect(dbname) as conn:
            return conn.execute(sql).fetchall()
