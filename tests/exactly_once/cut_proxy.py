"""A loopback TCP proxy in front of the broker that a test can cut and restore.

The broker advertises the proxy's port, so every client (the job's and the test's)
talks to the broker through it. ``cut()`` closes the listening socket and every
open connection, as a broker that went away; ``restore()`` listens again.
``cut_between(first, then)`` cuts at a chosen moment of the Kafka protocol: once a
request with API key ``first`` has passed, the next request with a key in ``then``
is dropped and the proxy cut, so the broker goes away between two steps of a
client's operation (e.g. ``send_offsets_to_transaction``'s AddOffsetsToTxn and its
FindCoordinator or TxnOffsetCommit). ``cut_after(api_key)`` lets the next request
with that key (a Produce: a transactional one) reach the broker, drops the broker's answer and cuts: the broker did
the work (an EndTxn: the transaction is committed) but the client never heard.
``swallow(api_key)`` and ``mute_after(api_key)`` leave the broker reachable but one
request unanswered: the next request with that key is dropped (never reaches the
broker), or reaches it and every later answer on its connection is dropped; the
connection stays open, so the client waits for an answer that never comes.
"""

from __future__ import annotations

import asyncio
import struct
import subprocess
import threading

from deltaflow.connectors.broker import broker_binary, free_port

PRODUCE = 0
FIND_COORDINATOR = 10
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
TXN_OFFSET_COMMIT = 28


class CutProxy:
    def __init__(self, target_port: int) -> None:
        self.port = free_port()
        self.target = target_port
        self.loop = asyncio.new_event_loop()
        self.server: asyncio.Server | None = None
        self.writers: set[asyncio.StreamWriter] = set()
        self.trip_key: int | None = None
        self.trip_then: tuple[int, ...] = ()
        self.trip_after: int | None = None
        self.tripped = threading.Event()  # set when cut_after's cut happened
        self.swallow_key: int | None = None
        self.mute_key: int | None = None
        self.hung = threading.Event()  # set when swallow's or mute_after's request came
        self._armed = False
        threading.Thread(target=self.loop.run_forever, daemon=True, name="cut-proxy").start()

    def _run(self, coro) -> None:
        asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    def restore(self) -> None:
        self._run(self._listen())

    def cut(self) -> None:
        self._run(self._cut())

    def cut_between(self, first: int, then: tuple[int, ...]) -> None:
        """Cut between the next requests ``first`` and one of ``then`` (module docstring)."""
        self.tripped.clear()
        self._armed, self.trip_key, self.trip_then = False, first, then

    def cut_after(self, api_key: int) -> None:
        """Cut once the next request ``api_key`` reached the broker, its answer dropped."""
        self.tripped.clear()
        self.trip_after = api_key

    def swallow(self, api_key: int) -> None:
        """Drop the next request ``api_key`` and leave its connection open (no answer)."""
        self.hung.clear()
        self.swallow_key = api_key

    def mute_after(self, api_key: int) -> None:
        """Let the next request ``api_key`` reach the broker, then drop every answer on its
        connection, which stays open."""
        self.hung.clear()
        self.mute_key = api_key

    def close(self) -> None:
        self.cut()
        self.loop.call_soon_threadsafe(self.loop.stop)

    async def _listen(self) -> None:
        self.server = await asyncio.start_server(self._client, "127.0.0.1", self.port)

    async def _cut(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        for writer in list(self.writers):
            writer.close()
        self.writers.clear()

    async def _client(self, reader, writer) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return
        self.writers.update((writer, up_writer))
        muted: list[bool] = []  # the broker's answers on this connection are dropped
        await asyncio.gather(
            self._requests(reader, up_writer, muted), self._pipe(up_reader, writer, muted)
        )

    async def _requests(self, reader, writer, muted: list[bool]) -> None:
        """Client to broker, one request frame (int32 size, int16 API key, ...) at a time."""
        try:
            while True:
                head = await reader.readexactly(4)
                body = await reader.readexactly(struct.unpack(">i", head)[0])
                key = struct.unpack(">h", body[:2])[0]
                if self._trips(key):
                    await self._cut()
                    self.tripped.set()
                    return
                if key == self.swallow_key:
                    self.swallow_key = None
                    self.hung.set()
                    continue
                if key == self.mute_key:
                    self.mute_key = None
                    muted.append(True)
                    self.hung.set()
                if key == self.trip_after and (key != PRODUCE or _transactional(body)):
                    self.trip_after = None
                    muted.append(True)
                    self.loop.call_later(0.3, self._cut_later)
                writer.write(head + body)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self.writers.discard(writer)

    def _trips(self, key: int) -> bool:
        if self.trip_key is None:
            return False
        if key == self.trip_key:
            self._armed = True
            return False
        if self._armed and key in self.trip_then:
            self.trip_key, self._armed = None, False
            return True
        return False

    def _cut_later(self) -> None:
        async def cut() -> None:
            await self._cut()
            self.tripped.set()

        asyncio.ensure_future(cut())

    async def _pipe(self, reader, writer, muted: list[bool] | None = None) -> None:
        try:
            while data := await reader.read(65536):
                if muted:
                    continue
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self.writers.discard(writer)


def _transactional(body: bytes) -> bool:
    """Whether a Produce request carries a transactional id (the job's producer, not a
    test's): request header v1/v2, then the nullable transactional_id string."""
    version = struct.unpack(">h", body[2:4])[0]
    pos = 8 + 2 + max(0, struct.unpack(">h", body[8:10])[0])  # past the client id
    if version >= 9:  # flexible: empty tagged fields, then a compact string (0 = null)
        return body[pos + 1] != 0
    return struct.unpack(">h", body[pos : pos + 2])[0] >= 0


def broker_behind_proxy() -> tuple[subprocess.Popen, CutProxy]:
    """A tansu broker on a private port advertising the proxy's port (proxy listening)."""
    inner = free_port()
    proxy = CutProxy(inner)
    proc = subprocess.Popen(
        [broker_binary(), "broker", "--listener-url", f"tcp://127.0.0.1:{inner}",
         "--advertised-listener-url", f"tcp://127.0.0.1:{proxy.port}",
         "--storage-engine", "memory://tansu/"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    proxy.restore()
    return proc, proxy
