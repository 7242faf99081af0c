"""State TTL (``SET 'table.exec.state.ttl' = '1 h'``): state of a key not written for the TTL
is gone, as Flink's ``StateTtlConfig`` with ``OnCreateAndWrite`` / ``NeverReturnExpired``.

Each value is stored with the wall-clock time (ms) of its last write, as an 8-byte prefix of
its encoding. A read of an expired value returns nothing (the operator treats the key as new;
a GroupAggregate ignores a retraction for it) and deletes it. At each checkpoint a sweep looks
at a bounded number of stored entries per table, resuming where the last one stopped, and
deletes the expired ones, so keys never read again are dropped too.

Operators get a ``TtlBackend`` in place of the state backend; its tables have the
``StateTable`` read and write methods the keyed operators use.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from deltaflow.processor.settings import parse_duration_ms
from deltaflow.state.keys import EMPTY, encode_key
from deltaflow.state.values import TypedValues, decode_value, encode_value

STATE_TTL = "table.exec.state.ttl"
SWEEP_LIMIT = 2000  # stored entries a sweep looks at per table


def state_ttl_ms(settings: dict[str, str]) -> int:
    """``table.exec.state.ttl`` in ms; 0 (Flink's default) keeps state forever."""
    text = settings.get(STATE_TTL, "").strip()
    return parse_duration_ms(text, STATE_TTL) if text else 0


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class TtlValues:
    """The codec of a TTL table: (last write ms, value) as 8 bytes, then the value's encoding."""

    def __init__(self, values: TypedValues | None) -> None:
        self._encode = encode_value if values is None else values.encode
        self._decode = decode_value if values is None else values.decode

    def encode(self, stamped: tuple[int, object]) -> bytes:
        return stamped[0].to_bytes(8, "big") + self._encode(stamped[1])

    def decode(self, data: bytes) -> tuple[int, object]:
        return int.from_bytes(data[:8], "big"), self._decode(bytes(data[8:]))


class TtlTable:
    """A ``StateTable`` whose values expire ``ttl_ms`` after their last write."""

    def __init__(self, inner, ttl_ms: int, clock: Callable[[], int]) -> None:  # noqa: ANN001
        self.inner = inner
        self.name = inner.name
        self.ttl_ms = ttl_ms
        self.clock = clock
        self.resume = b""  # where the next sweep starts

    def get(self, key: tuple) -> object | None:
        return self.get_encoded(encode_key(key) or EMPTY)

    def get_encoded(self, kb: bytes) -> object | None:
        return self.get_many_encoded([kb])[0]

    def get_many(self, keys: list[tuple]) -> list[object | None]:
        return self.get_many_encoded([encode_key(k) or EMPTY for k in keys])

    def get_many_encoded(self, encoded: list[bytes]) -> list[object | None]:
        deadline = self.clock() - self.ttl_ms
        out: list[object | None] = []
        for kb, stamped in zip(encoded, self.inner.get_many_encoded(encoded), strict=True):
            if stamped is None:
                out.append(None)
            elif stamped[0] <= deadline:  # expired: written ttl_ms or more ago
                self.inner.delete_encoded(kb)
                out.append(None)
            else:
                out.append(stamped[1])
        return out

    def put(self, key: tuple, value: object) -> None:
        self.put_encoded(encode_key(key) or EMPTY, value)

    def put_encoded(self, kb: bytes, value: object) -> None:
        self.inner.put_encoded(kb, (self.clock(), value))

    def put_many_encoded(self, items: list[tuple[bytes, object]]) -> None:
        now = self.clock()
        self.inner.put_many_encoded([(kb, (now, value)) for kb, value in items])

    def delete(self, key: tuple) -> None:
        self.inner.delete(key)

    def delete_encoded(self, kb: bytes) -> None:
        self.inner.delete_encoded(kb)

    def items(self) -> list[tuple[tuple, object]]:
        """The live (key, value) pairs in key order (for tests and inspection)."""
        deadline = self.clock() - self.ttl_ms
        return [(k, v[1]) for k, v in self.inner.items() if v[0] > deadline]

    def sweep(self, backend, limit: int = SWEEP_LIMIT) -> int:  # noqa: ANN001
        """Deletes expired stored entries among the next ``limit`` after the last sweep's;
        returns how many it deleted. Reads only each entry's 8-byte write time."""
        deadline = self.clock() - self.ttl_ms
        cursor = backend.read_txn().cursor(db=self.inner.db)
        found = cursor.set_range(self.resume) if self.resume else cursor.first()
        expired: list[bytes] = []
        seen = 0
        while found and seen < limit:
            kb, data = cursor.item()
            if int.from_bytes(data[:8], "big") <= deadline:
                expired.append(bytes(kb))
            seen += 1
            found = cursor.next()
        self.resume = bytes(cursor.key()) if found else b""
        gone = 0
        for kb, stamped in zip(expired, self.inner.get_many_encoded(expired), strict=True):
            if stamped is not None and stamped[0] <= deadline:  # not rewritten since
                self.inner.delete_encoded(kb)
                gone += 1
        return gone


class TtlBackend:
    """The state backend as operators with state TTL see it: ``table`` gives TTL tables,
    everything else is the backend's."""

    def __init__(self, backend, ttl_ms: int, clock: Callable[[], int]) -> None:  # noqa: ANN001
        self.backend = backend
        self.ttl_ms = ttl_ms
        self.clock = clock
        self.tables: dict[str, TtlTable] = {}

    def table(self, name: str, values: TypedValues | None = None) -> TtlTable:
        table = self.tables.get(name)
        if table is None:
            inner = self.backend.table(name, TtlValues(values))  # type: ignore[arg-type]
            table = self.tables[name] = TtlTable(inner, self.ttl_ms, self.clock)
        return table

    def sweep(self, limit: int = SWEEP_LIMIT) -> int:
        """One bounded sweep of every TTL table (at a checkpoint); returns the entries deleted."""
        return sum(t.sweep(self.backend, limit) for t in self.tables.values())

    def __getattr__(self, name: str) -> object:
        return getattr(self.backend, name)
