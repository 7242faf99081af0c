"""What a ``read_committed`` consumer of a partition sees, decided from the log itself.

The embedded broker (tansu 0.6) keeps transaction markers but does not send the
list of aborted transactions with a fetch, so librdkafka's ``read_committed``
consumer returns the records of aborted transactions too. This reader speaks the
Kafka Fetch protocol (version 4, isolation READ_COMMITTED, so nothing past the last
stable offset) and applies the control records itself, as the Kafka consumer
does: a transactional record is visible when its producer's next control record
is a COMMIT, and dropped when it is an ABORT.
"""

from __future__ import annotations

import socket
import struct

FETCH, VERSION = 1, 4
_BATCH_HEAD = struct.Struct(">qiibIhiqqqhii")  # 61 bytes, the record batch v2 header
_TRANSACTIONAL, _CONTROL = 0x10, 0x20


def committed_records(bootstrap: str, topic: str, partition: int = 0) -> list[tuple]:
    """(offset, key, value, headers) of every committed record, in offset order."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        offset, end, batches = 0, None, []
        while end is None or offset < end:
            end, chunk = _fetch(sock, topic, partition, offset)
            if not chunk:
                break
            batches.extend(chunk)
            offset = chunk[-1][0] + chunk[-1][1] + 1  # base offset + last offset delta + 1
    return _visible(batches)


def _visible(batches: list) -> list[tuple]:
    pending: dict[int, list] = {}
    out = []
    for _base, _delta, attributes, producer, records in batches:
        if attributes & _CONTROL:
            kind = struct.unpack_from(">hh", records[0][1])[1]  # key: version, type
            kept = pending.pop(producer, [])
            if kind == 1:  # COMMIT
                out.extend(kept)
        elif attributes & _TRANSACTIONAL:
            pending.setdefault(producer, []).extend(records)
        else:
            out.extend(records)
    return sorted(out, key=lambda r: r[0])


def _fetch(sock: socket.socket, topic: str, partition: int, offset: int):
    name = topic.encode()
    body = struct.pack(">iiiib", -1, 500, 1, 32 << 20, 1)
    body += struct.pack(">ih", 1, len(name)) + name
    body += struct.pack(">iiqi", 1, partition, offset, 32 << 20)
    client = b"committed-log"
    header = struct.pack(">hhih", FETCH, VERSION, 7, len(client)) + client
    request = header + body
    sock.sendall(struct.pack(">i", len(request)) + request)
    data = _read(sock, struct.unpack(">i", _read(sock, 4))[0])
    pos = 4 + 4 + 4  # correlation id, throttle time, topics count
    (tlen,) = struct.unpack_from(">h", data, pos)
    pos += 2 + tlen + 4  # topic name, partitions count
    _part, error, high, stable = struct.unpack_from(">ihqq", data, pos)
    if error:
        raise RuntimeError(f"fetch of {topic}/{partition} at {offset} failed with error {error}")
    pos += 22
    (aborted,) = struct.unpack_from(">i", data, pos)
    pos += 4 + max(aborted, 0) * 16
    (size,) = struct.unpack_from(">i", data, pos)
    pos += 4
    return stable, _batches(data[pos : pos + max(size, 0)], offset)


def _batches(data: bytes, start: int) -> list:
    out, pos = [], 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if pos + 12 + length > len(data):
            break  # a partial batch at the end of the response
        head = _BATCH_HEAD.unpack_from(data, pos)
        attributes, delta, producer, count = head[5], head[6], head[9], head[12]
        if attributes & 0x07:
            raise RuntimeError("compressed batches are not read by this test reader")
        records = _records(data[pos + 61 : pos + 12 + length], base, count)
        records = [r for r in records if r[0] >= start]
        out.append((base, delta, attributes, producer, records))
        pos += 12 + length
    return out


def _records(data: bytes, base: int, count: int) -> list[tuple]:
    out, pos = [], 0
    for _ in range(count):
        length, pos = _varint(data, pos)
        end = pos + length
        pos += 1  # attributes
        _, pos = _varint(data, pos)  # timestamp delta
        delta, pos = _varint(data, pos)
        key, pos = _bytes(data, pos)
        value, pos = _bytes(data, pos)
        n, pos = _varint(data, pos)
        headers = []
        for _ in range(n):
            hkey, pos = _bytes(data, pos)
            hval, pos = _bytes(data, pos)
            headers.append((hkey.decode() if hkey is not None else "", hval))
        out.append((base + delta, key, value, headers))
        pos = end
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = raw = 0
    while True:
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def _bytes(data: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = _varint(data, pos)
    if length < 0:
        return None, pos
    return data[pos : pos + length], pos + length


def _read(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
