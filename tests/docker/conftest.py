"""Fixtures: the docker-compose stack's files, parsed once per session."""

from __future__ import annotations

import json

import pytest
import yaml
from stack_files import (
    COMPOSE_FILE,
    CONNECTOR_FILE,
    JOB_FILE,
    Job,
    endpoints,
    environment,
    parse_job,
)


@pytest.fixture(scope="session")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


@pytest.fixture(scope="session")
def services(compose) -> dict[str, dict]:
    return compose["services"]


@pytest.fixture(scope="session")
def connector() -> dict:
    return json.loads(CONNECTOR_FILE.read_text())


@pytest.fixture(scope="session")
def job() -> Job:
    return parse_job(JOB_FILE.read_text())


@pytest.fixture(scope="session")
def kafka_env(services) -> dict[str, str]:
    return environment(services["kafka"])


@pytest.fixture(scope="session")
def internal_bootstrap(kafka_env) -> set[str]:
    """The `host:port` addresses Kafka advertises on its inter-broker (in-network) listener."""
    advertised = endpoints(kafka_env["KAFKA_ADVERTISED_LISTENERS"])
    host, port = advertised[kafka_env["KAFKA_INTER_BROKER_LISTENER_NAME"]]
    return {f"{host}:{port}"}


@pytest.fixture(scope="session")
def debezium_topics(connector) -> set[str]:
    """The change topics the connector writes: <topic.prefix>.<schema>.<table>."""
    config = connector["config"]
    tables = [t.strip() for t in config["table.include.list"].split(",")]
    return {f"{config['topic.prefix']}.{table}" for table in tables}
