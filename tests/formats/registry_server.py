"""A tiny Confluent-compatible schema registry for tests, served on loopback.

Implements the calls the Avro formats and their tests use: ``GET /subjects``,
``GET /subjects/S/versions``, ``GET /subjects/S/versions/N|latest``,
``GET /schemas/ids/N`` and ``POST /subjects/S/versions`` (an identical schema
gets its existing id). Optional basic auth; every request path is logged so
tests can check caching.
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class RegistryState:
    def __init__(self, user_info: str | None = None) -> None:
        self.schemas: list[str] = []  # id N is schemas[N - 1]
        self.subjects: dict[str, list[int]] = {}
        self.requests: list[tuple[str, str]] = []
        self.user_info = user_info
        self.lock = threading.Lock()

    def register(self, subject: str, schema: str) -> int:
        with self.lock:
            if schema in self.schemas:
                schema_id = self.schemas.index(schema) + 1
            else:
                self.schemas.append(schema)
                schema_id = len(self.schemas)
            versions = self.subjects.setdefault(subject, [])
            if schema_id not in versions:
                versions.append(schema_id)
            return schema_id


class _Handler(BaseHTTPRequestHandler):
    state: RegistryState

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - base signature
        return

    def _reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        expected = self.state.user_info
        if expected is None:
            return True
        token = base64.b64encode(expected.encode()).decode()
        if self.headers.get("Authorization") == f"Basic {token}":
            return True
        self._reply(401, {"error_code": 401, "message": "Unauthorized"})
        return False

    def _parts(self) -> list[str]:
        path = urllib.parse.urlsplit(self.path).path
        self.state.requests.append((self.command, path))
        return [urllib.parse.unquote(p) for p in path.strip("/").split("/")]

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        parts = self._parts()
        if not self._authorised():
            return
        state = self.state
        if parts[:2] == ["schemas", "ids"] and len(parts) == 3 and parts[2].isdigit():
            schema_id = int(parts[2])
            if 1 <= schema_id <= len(state.schemas):
                return self._reply(200, {"schema": state.schemas[schema_id - 1]})
            return self._reply(404, {"error_code": 40403, "message": "Schema not found"})
        if parts == ["subjects"]:
            return self._reply(200, sorted(state.subjects))
        if len(parts) >= 3 and parts[0] == "subjects" and parts[2] == "versions":
            versions = state.subjects.get(parts[1])
            if versions is None:
                return self._reply(404, {"error_code": 40401, "message": "Subject not found"})
            if len(parts) == 3:
                return self._reply(200, list(range(1, len(versions) + 1)))
            index = len(versions) if parts[3] == "latest" else int(parts[3])
            schema_id = versions[index - 1]
            body = {"subject": parts[1], "version": index, "id": schema_id}
            return self._reply(200, body | {"schema": state.schemas[schema_id - 1]})
        return self._reply(404, {"error_code": 404, "message": "Not found"})

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        parts = self._parts()
        if not self._authorised():
            return
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
            if not isinstance(body.get("schema"), str):
                return self._reply(422, {"error_code": 42201, "message": "Invalid schema"})
            return self._reply(200, {"id": self.state.register(parts[1], body["schema"])})
        return self._reply(404, {"error_code": 404, "message": "Not found"})


class RegistryServer:
    """Start with ``with RegistryServer() as server: server.url``."""

    def __init__(self, user_info: str | None = None) -> None:
        self.state = RegistryState(user_info)
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> RegistryServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
