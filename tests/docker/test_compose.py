"""docker/docker-compose.yml, its Dockerfile and the connector config, checked by parsing.

Each test states a property `docker compose up` relies on: services that can start,
dependencies that can be met, addresses that resolve to the right listener, and a
connector that points at the database service with the credentials it was given.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import PurePosixPath
from urllib.parse import urlparse

from stack_files import (
    CONNECTOR_FILE,
    DOCKER,
    REPO,
    bind_mounts,
    deltaflow_build,
    dockerfile_instructions,
    endpoints,
    environment,
    host_path,
    named_volumes,
    published_ports,
)

HEALTH_CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}


def test_every_service_has_an_image_or_a_build(services):
    for name, service in services.items():
        assert service.get("image") or service.get("build"), (
            f"service {name} has neither image nor build"
        )


def test_pulled_images_are_pinned_to_a_version(services):
    for name, service in services.items():
        if "build" in service:
            continue
        image = service["image"]
        repository, _, tag = image.rpartition(":")
        assert repository and "/" not in tag and tag not in ("", "latest"), (
            f"{name}: {image} is not pinned"
        )


def test_dockerfile_builds_from_python_slim_and_installs_the_repository(services):
    context, dockerfile = deltaflow_build(services)
    assert context == REPO and dockerfile.is_file()
    steps = dockerfile_instructions(dockerfile.read_text())
    assert steps[0] == ("FROM", "python:3.11-slim")
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    needed = {
        "pyproject.toml",
        pyproject["project"]["readme"],
        *pyproject["tool"]["setuptools"]["package-dir"].values(),
    }
    workdir, copied, installed_in = "/", {}, None
    for instruction, args in steps:
        if instruction == "WORKDIR":
            workdir = str(PurePosixPath(workdir) / args)
        elif instruction == "COPY":
            *sources, dest = args.split()
            for source in sources:
                assert (context / source).exists(), f"COPY {source}: not in the build context"
                copied[source] = str(PurePosixPath(workdir) / dest)
        elif instruction == "RUN" and re.search(r"pip install (\S+ )*\.(\s|$)", args):
            installed_in = workdir
    assert needed <= copied.keys(), f"the image misses {needed - copied.keys()}"
    assert installed_in is not None, "no RUN pip install . in the Dockerfile"
    assert str(PurePosixPath(copied["pyproject.toml"])) in (installed_in, installed_in + "/.")


def test_dockerignore_keeps_every_copied_source(services):
    context, dockerfile = deltaflow_build(services)
    ignore = dockerfile.with_name(dockerfile.name + ".dockerignore")
    patterns = [
        p.strip() for p in ignore.read_text().splitlines() if p.strip() and not p.startswith("#")
    ]
    for instruction, args in dockerfile_instructions(dockerfile.read_text()):
        if instruction != "COPY":
            continue
        for source in args.split()[:-1]:
            for pattern in patterns:
                bare = pattern.removeprefix("**/")
                assert not fnmatch.fnmatch(source, pattern) and not fnmatch.fnmatch(source, bare), (
                    f"{ignore.name} pattern {pattern} removes {source}, which the Dockerfile copies"
                )


def test_image_command_runs_the_job_the_service_mounts(services):
    _, dockerfile = deltaflow_build(services)
    cmd = [
        args
        for instruction, args in dockerfile_instructions(dockerfile.read_text())
        if instruction == "CMD"
    ]
    assert cmd == ['["deltaflow", "run", "/jobs/inventory.sql"]']
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert "deltaflow" in scripts
    service = services["deltaflow"]
    assert "command" not in service and "entrypoint" not in service
    assert host_path(service, "/jobs/inventory.sql") == DOCKER / "jobs" / "inventory.sql"


def test_bind_mounts_exist_and_named_volumes_are_declared(compose):
    declared = set(compose.get("volumes") or {})
    for name, service in compose["services"].items():
        for source, _ in bind_mounts(service):
            assert (DOCKER / source).exists(), f"{name} mounts {source}, which does not exist"
        for volume in named_volumes(service):
            assert volume in declared, f"{name} uses volume {volume}, not declared at top level"


def test_depends_on_targets_exist_with_conditions_that_can_be_met(services):
    for name, service in services.items():
        depends = service.get("depends_on") or {}
        if isinstance(depends, list):
            depends = {target: {"condition": "service_started"} for target in depends}
        for target, spec in depends.items():
            assert target in services and target != name, (
                f"{name} depends on unknown service {target}"
            )
            condition = spec.get("condition", "service_started")
            assert condition in HEALTH_CONDITIONS
            if condition == "service_healthy":
                assert "healthcheck" in services[target], (
                    f"{name} waits for {target} to be healthy, but it has no healthcheck"
                )
            if condition == "service_completed_successfully":
                assert services[target].get("restart", "no") in ("no", "on-failure"), (
                    f"{target} never completes"
                )


def test_dependencies_have_no_cycle(services):
    remaining = {name: set(service.get("depends_on") or ()) for name, service in services.items()}
    while remaining:
        ready = [name for name, needs in remaining.items() if not needs & remaining.keys()]
        assert ready, f"depends_on cycle among {sorted(remaining)}"
        for name in ready:
            del remaining[name]


def test_published_host_ports_do_not_clash(services):
    owners: dict[tuple[int, str], str] = {}
    for name, service in services.items():
        for _, port, _, protocol in published_ports(service):
            assert (port, protocol) not in owners, (
                f"{name} and {owners[(port, protocol)]} both publish {port}/{protocol}"
            )
            owners[(port, protocol)] = name
    assert owners, "the stack publishes no port: nothing is reachable from the host"


def test_kafka_listeners_are_consistent(services, kafka_env):
    listeners = endpoints(kafka_env["KAFKA_LISTENERS"])
    advertised = endpoints(kafka_env["KAFKA_ADVERTISED_LISTENERS"])
    protocols = dict(
        item.split(":") for item in kafka_env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(",")
    )
    controllers = kafka_env["KAFKA_CONTROLLER_LISTENER_NAMES"].split(",")
    assert set(listeners) <= set(protocols)
    inter_broker = kafka_env["KAFKA_INTER_BROKER_LISTENER_NAME"]
    assert inter_broker in advertised and set(advertised) <= set(listeners)
    # Containers connect straight to the in-network listener: same port as bound.
    assert advertised[inter_broker][1] == listeners[inter_broker][1]
    assert all(name in listeners and name not in advertised for name in controllers)
    assert set(kafka_env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    node, _, voter = kafka_env["KAFKA_CONTROLLER_QUORUM_VOTERS"].partition("@")
    host, port = voter.rsplit(":", 1)
    assert node == kafka_env["KAFKA_NODE_ID"]
    assert host in {"kafka", services["kafka"].get("hostname")}
    assert int(port) == listeners[controllers[0]][1]


def test_kafka_internal_listener_is_the_service_name(services, internal_bootstrap):
    (address,) = internal_bootstrap
    host = address.rsplit(":", 1)[0]
    assert host in services, (
        f"Kafka advertises {host}, which is not a service name other containers can resolve"
    )


def test_kafka_host_listener_is_published_where_it_is_advertised(services, kafka_env):
    """A host client connects to the advertised port, which must forward to the listener."""
    listeners = endpoints(kafka_env["KAFKA_LISTENERS"])
    advertised = endpoints(kafka_env["KAFKA_ADVERTISED_LISTENERS"])
    inter_broker = kafka_env["KAFKA_INTER_BROKER_LISTENER_NAME"]
    external = {name: address for name, address in advertised.items() if name != inter_broker}
    assert [host for host, _ in external.values()] == ["localhost"]
    forwarded = {(p.host_port, p.container_port) for p in published_ports(services["kafka"])}
    for name, (_, port) in external.items():
        assert (port, listeners[name][1]) in forwarded, (
            f"{name} advertises {port}, not published to it"
        )


def test_kafka_cluster_id_is_a_base64_uuid(kafka_env):
    import base64

    cluster_id = kafka_env["CLUSTER_ID"]
    assert len(cluster_id) == 22
    assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def test_connect_uses_the_advertised_internal_listener(services, internal_bootstrap):
    env = environment(services["connect"])
    assert set(env["BOOTSTRAP_SERVERS"].split(",")) <= internal_bootstrap


def test_connect_storage_topics_are_set_and_distinct(services, debezium_topics):
    env = environment(services["connect"])
    topics = [env["CONFIG_STORAGE_TOPIC"], env["OFFSET_STORAGE_TOPIC"], env["STATUS_STORAGE_TOPIC"]]
    assert all(topics) and len(set(topics)) == 3
    assert not set(topics) & debezium_topics


def test_connector_json_names_the_database_service_and_its_credentials(services, connector):
    config = connector["config"]
    assert (
        connector["name"]
        and config["connector.class"] == "io.debezium.connector.postgresql.PostgresConnector"
    )
    database = services[config["database.hostname"]]
    assert database["image"].startswith("quay.io/debezium/example-postgres:")
    env = environment(database)
    assert config["database.user"] == env["POSTGRES_USER"]
    assert config["database.password"] == env["POSTGRES_PASSWORD"]
    # The postgres image names the default database after the user unless POSTGRES_DB says otherwise.
    assert config["database.dbname"] == env.get("POSTGRES_DB", env["POSTGRES_USER"])
    assert config["database.port"] == env.get("PGPORT", "5432")


def test_connector_writes_schemaless_json_under_the_dbserver1_prefix(connector):
    config = connector["config"]
    assert config["topic.prefix"] == "dbserver1"
    tables = {t.strip() for t in config["table.include.list"].split(",")}
    assert tables == {"inventory.customers", "inventory.products", "inventory.orders"}
    for side in ("key", "value"):
        assert config[f"{side}.converter"] == "org.apache.kafka.connect.json.JsonConverter"
        assert config[f"{side}.converter.schemas.enable"] == "false"
    assert all(isinstance(value, str) for value in config.values()), "Connect expects string values"


def test_register_connector_posts_the_connector_file_to_connect(services, connector):
    service = services["register-connector"]
    assert service["image"].startswith("curlimages/curl:")
    assert service["depends_on"]["connect"]["condition"] == "service_healthy"
    script, config = (host_path(service, arg) for arg in service["entrypoint"][1:3])
    assert script == DOCKER / "connectors" / "register.sh" and "-X POST" in script.read_text()
    assert config == CONNECTOR_FILE
    url = urlparse(environment(service)["CONNECT_URL"])
    connect = services[url.hostname]
    assert connect["image"].startswith("quay.io/debezium/connect:")
    assert url.port == int(environment(connect).get("REST_PORT", "8083"))


def test_captured_tables_get_replica_identity_full_after_the_inventory_schema(services, connector):
    database = services[connector["config"]["database.hostname"]]
    scripts = [
        (source, target)
        for source, target in bind_mounts(database)
        if target.startswith("/docker-entrypoint-initdb.d/")
    ]
    assert scripts, "no init script mounted into the database service"
    full = set()
    for source, target in scripts:
        # The example image's own schema script is /docker-entrypoint-initdb.d/inventory.sql;
        # init scripts run in name order, so ours must sort after it.
        assert PurePosixPath(target).name > "inventory.sql"
        text = (DOCKER / source).read_text()
        full |= set(
            re.findall(r"ALTER TABLE\s+([\w.]+)\s+REPLICA IDENTITY FULL\s*;", text, re.IGNORECASE)
        )
    captured = {t.strip() for t in connector["config"]["table.include.list"].split(",")}
    assert captured <= full, f"tables without REPLICA IDENTITY FULL: {captured - full}"


def test_state_volume_is_mounted_at_the_working_directory_of_the_job(services):
    """deltaflow keeps a job's state under ./state of its working directory."""
    _, dockerfile = deltaflow_build(services)
    steps = dockerfile_instructions(dockerfile.read_text())
    workdir = [args for instruction, args in steps if instruction == "WORKDIR"][-1]
    user = [args for instruction, args in steps if instruction == "USER"]
    assert user and user[-1] not in ("root", "0"), "the job should not run as root"
    volumes = services["deltaflow"]["volumes"]
    targets = {volume.split(":")[1] for volume in volumes if not volume.startswith(".")}
    assert workdir in targets
