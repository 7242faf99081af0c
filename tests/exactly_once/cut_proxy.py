"""A loopback TCP proxy in front of the broker that a test can cut and restore.

The broker advertises the proxy's port, so every client (the job's and the test's)
talks to the broker through it. ``cut()`` closes the listening socket and every
open connection, as a broker that went away; ``restore()`` listens again.
``cut_between(first, then)`` cuts at a chosen moment of the Kafka protocol: once a
request with API key ``first`` has passed, the next request with a key in ``then``
is dropped and the proxy cut, so the broker goes away between two steps of a
client's operation (e.g. ``send_offsets_to_transaction``'s AddOffsetsToTxn and its
FindCoordinator or TxnOffsetCommit).
"""

from __future__ import annotations

import asyncio
import struct
import subprocess
import threading

from deltaflow.connectors.broker import broker_binary, free_port

FIND_COORDINATOR = 10
ADD_OFFSETS_TO_TXN = 25
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
        self.tripped = threading.Event()  # set when cut_after's cut happened
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
        await asyncio.gather(self._requests(reader, up_writer), self._pipe(up_reader, writer))

    async def _requests(self, reader, writer) -> None:
        """Client to broker, one request frame (int32 size, int16 API key, ...) at a time."""
        try:
            while True:
                head = await reader.readexactly(4)
                body = await reader.readexactly(struct.unpack(">i", head)[0])
                if self._trips(struct.unpack(">h", body[:2])[0]):
                    await self._cut()
                    self.tripped.set()
                    return
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

    async def _pipe(self, reader, writer) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self.writers.discard(writer)


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
