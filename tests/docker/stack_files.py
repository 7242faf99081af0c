"""Readers for the docker-compose stack's files, shared by the tests in tests/docker.

Docker does not run where the tests run, so the stack is validated by reading its
files: the compose file (pyyaml), the connector JSON, the Dockerfile and the Flink
SQL job (sqlglot, only as far as the checks need).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NamedTuple

import sqlglot
from sqlglot import exp

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
COMPOSE_FILE = DOCKER / "docker-compose.yml"
CONNECTOR_FILE = DOCKER / "connectors" / "inventory.json"
JOB_FILE = DOCKER / "jobs" / "inventory.sql"


@dataclass(frozen=True)
class TableDef:
    """A CREATE TABLE of the job: columns, primary key and WITH options."""

    name: str
    columns: tuple[str, ...]
    primary_key: tuple[str, ...]
    options: dict[str, str]
    position: int  # index of the statement in the job file


@dataclass(frozen=True)
class Job:
    statements: list[exp.Expression]
    tables: dict[str, TableDef]


def table_def(create: exp.Create, position: int) -> TableDef:
    schema = create.this
    columns = tuple(col.name for col in schema.expressions if isinstance(col, exp.ColumnDef))
    pk = create.find(exp.PrimaryKey)
    primary_key = tuple(key.name for key in pk.expressions) if pk else ()
    props = create.args.get("properties")
    options = {p.this.name: p.args["value"].name for p in props.expressions} if props else {}
    return TableDef(schema.this.name, columns, primary_key, options, position)


# Flink 2.3's INSERT ... ON CONFLICT DO <action> clause, which plain sqlglot cannot read;
# deltaflow's own planner reads it (test_inventory_job_runs.py runs the job).
ON_CONFLICT = re.compile(r"\s+ON\s+CONFLICT\s+DO\s+(ERROR|NOTHING|DEDUPLICATE)\s*;", re.I)


def parse_job(text: str) -> Job:
    text = ON_CONFLICT.sub(";", text)
    statements = [s for s in sqlglot.parse(text) if s is not None]
    tables = {}
    for position, statement in enumerate(statements):
        if isinstance(statement, exp.Create) and statement.kind == "TABLE":
            table = table_def(statement, position)
            tables[table.name] = table
    return Job(statements, tables)


def environment(service: dict) -> dict[str, str]:
    """A service's environment as a dict of strings, from either compose syntax."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {key: str(value) for key, value in env.items()}


def endpoints(listeners: str) -> dict[str, tuple[str, int]]:
    """`NAME://host:port,...` (Kafka listener syntax) as {NAME: (host, port)}."""
    result = {}
    for item in listeners.split(","):
        name, address = item.strip().split("://")
        host, port = address.rsplit(":", 1)
        result[name] = (host, int(port))
    return result


def bind_mounts(service: dict) -> list[tuple[str, str]]:
    """(host source, container target) of the service's bind mounts, short or long syntax."""
    mounts = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            if volume.get("type") == "bind":
                mounts.append((volume["source"], volume["target"]))
            continue
        source, target = volume.split(":")[:2]
        if source.startswith((".", "/", "~")):
            mounts.append((source, target))
    return mounts


def named_volumes(service: dict) -> list[str]:
    names = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            if volume.get("type") == "volume":
                names.append(volume["source"])
        elif ":" in volume and not volume.startswith((".", "/", "~")):
            names.append(volume.split(":")[0])
    return names


def host_path(service: dict, container_path: str):
    """The file on the host that a container path of a bind-mounted service refers to."""
    path = PurePosixPath(container_path)
    for source, target in bind_mounts(service):
        if path == PurePosixPath(target) or PurePosixPath(target) in path.parents:
            return (DOCKER / source / path.relative_to(target)).resolve()
    raise AssertionError(f"{container_path} is not inside any bind mount of the service")


class Published(NamedTuple):
    host_ip: str
    host_port: int
    container_port: int
    protocol: str


def port_range(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def published_ports(service: dict) -> list[Published]:
    """Every port the service publishes on the host, from short or long syntax."""
    published = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            if "published" in port:
                host_ip = port.get("host_ip", "0.0.0.0")
                protocol = port.get("protocol", "tcp")
                published.append(
                    Published(host_ip, int(port["published"]), int(port["target"]), protocol)
                )
            continue
        spec, _, protocol = str(port).partition("/")
        parts = spec.split(":")
        if len(parts) == 1:
            continue  # container port only: Docker picks a free host port
        host_ip = parts[0] if len(parts) == 3 else "0.0.0.0"
        pairs = zip(port_range(parts[-2]), port_range(parts[-1]), strict=True)
        published.extend(
            Published(host_ip, host, target, protocol or "tcp") for host, target in pairs
        )
    return published


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    joined = re.sub(
        r"\\\n",
        " ",
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")),
    )
    result = []
    for line in joined.splitlines():
        if line.strip():
            instruction, _, args = line.strip().partition(" ")
            result.append((instruction.upper(), args.strip()))
    return result


def deltaflow_build(services: dict) -> tuple:
    build = services["deltaflow"]["build"]
    context = (DOCKER / build["context"]).resolve()
    return context, context / build.get("dockerfile", "Dockerfile")
