"""docker/connectors/register.sh, run with sh and curl against a scripted Connect REST API.

The stand-in answers the way Kafka Connect's REST API does (POST /connectors: 201
created, 409 conflict; GET /connectors/NAME: 200 or 404), one scripted status per
request, so each test drives one path of the script: created, already there,
rebalancing then created, never accepted, and Connect unreachable.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from stack_files import CONNECTOR_FILE, DOCKER

SCRIPT = DOCKER / "connectors" / "register.sh"


class ScriptedConnect(ThreadingHTTPServer):
    """Answers each request with the next status of its method's script (the last repeats)."""

    def __init__(self, post: list[int], get: list[int]):
        super().__init__(("127.0.0.1", 0), ConnectHandler)
        self.script = {"POST": list(post), "GET": list(get)}
        self.requests: list[tuple[str, str, str, bytes]] = []

    def next_status(self, method: str) -> int:
        statuses = self.script[method]
        return statuses.pop(0) if len(statuses) > 1 else statuses[0]


class ConnectHandler(BaseHTTPRequestHandler):
    def answer(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self.server.requests.append((method, self.path, self.headers.get("Content-Type", ""), body))
        status = self.server.next_status(method)
        payload = json.dumps({"error_code": status, "message": "scripted"}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.answer("POST")

    def do_GET(self) -> None:  # noqa: N802
        self.answer("GET")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def connect():
    servers = []

    def start(post: list[int], get: list[int] = (404,)) -> ScriptedConnect:
        server = ScriptedConnect(post, list(get))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def register(url: str, attempts: int = 3) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "CONNECT_URL": url,
        "REGISTER_ATTEMPTS": str(attempts),
        "REGISTER_DELAY": "0",
    }
    return subprocess.run(
        ["sh", str(SCRIPT), str(CONNECTOR_FILE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def url_of(server: ScriptedConnect) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_created_connector_is_posted_once_with_the_file_as_json(connect):
    server = connect(post=[201])
    result = register(url_of(server))
    assert result.returncode == 0, result.stderr
    ((method, path, content_type, body),) = server.requests
    assert (method, path, content_type) == ("POST", "/connectors", "application/json")
    assert json.loads(body) == json.loads(CONNECTOR_FILE.read_text())


def test_conflict_for_an_existing_connector_counts_as_registered(connect):
    server = connect(post=[409], get=[200])
    result = register(url_of(server))
    assert result.returncode == 0, result.stderr
    name = json.loads(CONNECTOR_FILE.read_text())["name"]
    assert [(m, p) for m, p, _, _ in server.requests] == [
        ("POST", "/connectors"),
        ("GET", f"/connectors/{name}"),
    ]


def test_conflict_while_rebalancing_is_retried_until_created(connect):
    server = connect(post=[409, 201], get=[404])
    result = register(url_of(server))
    assert result.returncode == 0, result.stderr
    assert [m for m, _, _, _ in server.requests] == ["POST", "GET", "POST"]


def test_gives_up_after_the_attempts_and_says_where(connect):
    server = connect(post=[500])
    result = register(url_of(server), attempts=2)
    assert result.returncode == 1
    assert [m for m, _, _, _ in server.requests] == ["POST", "POST"]
    assert f"{url_of(server)}/connectors" in result.stderr


def test_unreachable_connect_fails_instead_of_hanging():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = register(f"http://127.0.0.1:{port}", attempts=2)
    assert result.returncode == 1
    assert "HTTP 000" in result.stdout
