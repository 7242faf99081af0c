"""Watching the job's Kafka clusters: one line when they go away, an error when they stay away.

librdkafka clients reconnect on their own, so a job simply waits out a broker
outage; what it must not do is wait silently or forever. ``BrokerWatch`` asks each
cluster for its metadata every second from a thread. The first failed probe logs
one line saying the job is waiting, a later successful one logs that the brokers
are back, and ``check()`` (called by the job loop) raises ``ConnectorError`` once
a cluster has been unreachable for longer than ``deltaflow.broker.timeout``.
Client properties (credentials included) go to librdkafka only, never to a message.
"""

from __future__ import annotations

import sys
import threading
import time

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from deltaflow.connectors import kafka_client
from deltaflow.connectors.options import TableOptions
from deltaflow.formats.errors import ConnectorError, DeltaflowError

KAFKA_CONNECTORS = ("kafka", "upsert-kafka")
PROBE_EVERY_S = 1.0
PROBE_TIMEOUT_S = 2.0


def cluster_configs(tables: list[tuple[str, dict[str, str]]], bootstrap: str | None) -> dict:
    """librdkafka settings per distinct cluster (by bootstrap servers) of the Kafka tables."""
    clusters: dict[str, dict] = {}
    for name, options in tables:
        connector = options.get("connector")
        if connector not in KAFKA_CONNECTORS:
            continue
        opts = TableOptions(name, connector, options, options.keys())
        try:
            conf = kafka_client.client_config(opts, bootstrap)
        except DeltaflowError:
            continue  # the connector itself reports a missing bootstrap
        clusters.setdefault(conf["bootstrap.servers"], conf)
    return clusters


class BrokerWatch:
    """Probes every cluster once a second; see the module docstring."""

    def __init__(self, clusters: dict[str, dict], timeout_s: float, log=None) -> None:
        self.timeout_s = timeout_s
        self.log = log or sys.stderr
        self.down_since: dict[str, float] = {}
        self.outages: dict[str, int] = {}  # times each cluster was found away
        self._confs = clusters
        self._admins = {
            servers: AdminClient({**conf, "log_level": 0}) for servers, conf in clusters.items()
        }
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="deltaflow-broker-watch", daemon=True
        )

    def start(self) -> BrokerWatch:
        if self._admins:
            self._thread.start()
        return self

    def check(self) -> None:
        """Raise ConnectorError when a cluster has been unreachable for too long."""
        now = time.monotonic()
        for servers, since in list(self.down_since.items()):
            if now - since > self.timeout_s:
                raise ConnectorError(
                    f"the Kafka brokers at {servers} have been unreachable for "
                    f"{now - since:.0f} s, longer than 'deltaflow.broker.timeout' = "
                    f"{self.timeout_s:g} s; the last checkpoint is intact: start the job again "
                    "once the brokers are back (or raise the timeout with "
                    "SET 'deltaflow.broker.timeout' = '10 min')"
                )

    def down_for(self, servers: str | None = None) -> float:
        """Seconds the cluster ``servers`` (None: the longest-unreachable one) has been
        away; 0 while it is reachable."""
        if servers is None:
            since = min(list(self.down_since.values()), default=None)
        else:
            since = self.down_since.get(servers)
        return 0.0 if since is None else time.monotonic() - since

    def outage_count(self, servers: str | None) -> int:
        """How many times the cluster ``servers`` has been found unreachable."""
        return self.outages.get(servers or "", 0)

    def stop(self) -> None:
        """Ends the probes; a probe in flight finishes on its own (the thread is a daemon),
        so a stopping job never waits for it."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(PROBE_EVERY_S):
            for servers, admin in self._admins.items():
                self._probe(servers, admin)

    def _probe(self, servers: str, admin: AdminClient) -> None:
        try:
            admin.list_topics(timeout=PROBE_TIMEOUT_S)
        except KafkaException as err:
            if servers not in self.down_since:
                self.down_since[servers] = time.monotonic()
                self.outages[servers] = self.outages.get(servers, 0) + 1
                self._say(self._away_line(servers, err))
            return
        since = self.down_since.pop(servers, None)
        if since is not None:
            self._say(
                f"the Kafka brokers at {servers} are reachable again after "
                f"{time.monotonic() - since:.0f} s; continuing"
            )

    def _away_line(self, servers: str, err: KafkaException) -> str:
        refused = kafka_client.refusal(self._confs.get(servers, {}))
        if refused is not None:
            what, text = refused
            return (
                f"the Kafka brokers at {servers} refuse the {what} ({text}); waiting up to "
                f"{self.timeout_s:g} s, check the 'properties.sasl.*' / 'properties.ssl.*' options"
            )
        return (
            f"cannot reach the Kafka brokers at {servers} ({err.args[0].str()}); "
            f"waiting up to {self.timeout_s:g} s for them to return"
        )

    def _say(self, line: str) -> None:
        print(f"deltaflow: {line}", file=self.log, flush=True)
