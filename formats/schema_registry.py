"""A small Confluent Schema Registry client over HTTP (stdlib only), with caches.

Two calls are all the Avro formats need: the schema text for an id (decoding)
and the id for a schema registered under a subject (encoding). Both are cached
for the life of the client, as the Confluent serializers do.
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.error
import urllib.parse
import urllib.request

from deltaflow.formats.errors import DeltaflowError

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class SchemaRegistryError(DeltaflowError):
    """The schema registry cannot be reached or refused a request."""


class SchemaRegistry:
    """Client of one registry URL; thread-safe caches of id -> schema and subject -> id."""

    def __init__(
        self,
        url: str,
        *,
        user_info: str | None = None,
        bearer_token: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        parts = urllib.parse.urlsplit(url.split(",")[0].strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SchemaRegistryError(
                f"schema registry url {url!r} is not an http(s) URL; set the format's 'url' "
                "option to e.g. 'http://localhost:8081'"
            )
        if parts.username and user_info is None:
            user_info = f"{urllib.parse.unquote(parts.username)}:"
            user_info += urllib.parse.unquote(parts.password or "")
        netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
        self.url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
        self.timeout = timeout
        self._headers = {"Accept": CONTENT_TYPE}
        if user_info is not None:
            token = base64.b64encode(user_info.encode()).decode()
            self._headers["Authorization"] = f"Basic {token}"
        elif bearer_token is not None:
            self._headers["Authorization"] = f"Bearer {bearer_token}"
        self._by_id: dict[int, str] = {}
        self._ids: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def schema_text(self, schema_id: int) -> str | None:
        """The schema registered with ``schema_id``; None when the registry does not know it."""
        with self._lock:
            cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        status, body = self._call("GET", f"/schemas/ids/{schema_id}")
        if status == 404:
            return None
        self._check(status, body, f"fetching schema id {schema_id}")
        schema_type = body.get("schemaType", "AVRO")
        if schema_type != "AVRO":
            raise SchemaRegistryError(
                f"schema id {schema_id} at {self.url} is a {schema_type} schema, not Avro"
            )
        text = body["schema"]
        with self._lock:
            self._by_id[schema_id] = text
        return text

    def register(self, subject: str, schema: str) -> int:
        """The id of ``schema`` under ``subject``, registering it when it is new."""
        key = (subject, schema)
        with self._lock:
            cached = self._ids.get(key)
        if cached is not None:
            return cached
        path = f"/subjects/{urllib.parse.quote(subject, safe='')}/versions"
        status, body = self._call("POST", path, {"schema": schema})
        self._check(status, body, f"registering a schema under subject {subject!r}")
        schema_id = int(body["id"])
        with self._lock:
            self._ids[key] = schema_id
            self._by_id[schema_id] = schema
        return schema_id

    def _call(self, method: str, path: str, payload: object = None) -> tuple[int, dict]:
        data = None if payload is None else json.dumps(payload).encode()
        headers = dict(self._headers)
        if data is not None:
            headers["Content-Type"] = CONTENT_TYPE
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                return response.status, _json(response.read())
        except urllib.error.HTTPError as err:
            return err.code, _json(err.read())
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise SchemaRegistryError(
                f"cannot reach the schema registry at {self.url} ({reason}); check the "
                "format's 'url' option and that the registry is running"
            ) from None

    def _check(self, status: int, body: dict, doing: str) -> None:
        if 200 <= status < 300:
            return
        message = body.get("message") or f"HTTP {status}"
        hint = ""
        if status in (401, 403):
            hint = "; check the 'basic-auth.*' or 'bearer-auth.*' options"
        raise SchemaRegistryError(
            f"schema registry at {self.url} failed {doing}: {message} (HTTP {status}){hint}"
        )


def _json(data: bytes) -> dict:
    try:
        body = json.loads(data or b"{}")
    except ValueError:
        return {"message": data[:200].decode("utf-8", "replace")}
    return body if isinstance(body, dict) else {"message": str(body)[:200]}
