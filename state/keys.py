"""Order-preserving binary encoding of key tuples.

``encode_key(a) < encode_key(b)`` (as bytes) exactly when ``a < b`` (as tuples),
for tuples whose elements at each position have the same type; NULL (``None``)
sorts before every value. The encoding of a tuple prefix is a byte prefix of the
encoding of the whole tuple, so a prefix scan in LMDB visits keys in tuple order.

Each element is a tag byte followed by a body:

| value            | tag         | body                                               |
|------------------|-------------|----------------------------------------------------|
| None             | 0x01        | -                                                  |
| bytes            | 0x02        | bytes, 0x00 escaped as 0x00 0xFF, ended by 0x00    |
| str              | 0x03        | UTF-8 (code-point order), escaped like bytes       |
| int, < 8 bytes   | 0x0c..0x1c  | 0x14 +/- byte length; big-endian magnitude,        |
|                  |             | one's complement when negative                     |
| int, >= 8 bytes  | 0x0b / 0x1d | 4-byte length (complemented when negative), body   |
| float            | 0x21        | IEEE-754 big-endian, sign bit flipped (all bits    |
|                  |             | when negative); -0.0 is 0.0, NaN sorts last        |
| Decimal < 0      | 0x22        | exponent as an int, negated; digits complemented,  |
|                  |             | ended by 0xFF                                      |
| Decimal 0        | 0x23        | -                                                  |
|                  |             | (every Decimal then ends with its exponent, an int)|
| Decimal > 0      | 0x24        | exponent as an int; ASCII digits, ended by 0x00    |
| False / True     | 0x26 / 0x27 | -                                                  |
| date             | 0x30        | proleptic ordinal, 4 bytes                         |
| time             | 0x31        | microseconds of the day, 8 bytes                   |
| datetime, naive  | 0x32        | microseconds since 0001-01-01, 8 bytes             |
| datetime, aware  | 0x33        | the same, of the UTC instant                       |
|                  |             | (with nanoseconds below the microsecond, a         |
|                  |             | ``NanoDatetime``: then 0xF0 and 2 bytes of them)   |
| tuple (ROW)      | 0x05        | each element encoded, ended by 0x00                |
| list (ARRAY)     | 0x06        | the same                                           |

LMDB cannot store an empty key, so tables store ``()`` as ``EMPTY`` (one 0x00 byte,
which starts no element and sorts first); ``decode_key`` reads it back as ``()``.

A Decimal key keeps its scale so that it decodes to the same Decimal: the order
is by value, and ``Decimal('1.5')`` and ``Decimal('1.50')`` are different keys. A
``DECIMAL(p, s)`` column always holds values of scale ``s``, so that never splits a
group. ``-0.0`` and ``0.0`` are one key.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from deltaflow.formats.nanos import NanoDatetime, nanos_of, plain, with_nanos

NONE, BYTES, STR = 0x01, 0x02, 0x03
EMPTY = b"\x00"  # how a table stores the empty tuple: LMDB keys cannot be empty
INT_ZERO, INT_BIG_NEG, INT_BIG_POS = 0x14, 0x0B, 0x1D
FLOAT, DEC_NEG, DEC_ZERO, DEC_POS = 0x21, 0x22, 0x23, 0x24
FALSE, TRUE = 0x26, 0x27
DATE, TIME, DATETIME, DATETIME_TZ = 0x30, 0x31, 0x32, 0x33
TUPLE, LIST = 0x05, 0x06
NANOS = 0xF0  # after a datetime's 8 bytes: 2 bytes of nanoseconds follow

_U64 = struct.Struct(">Q")
_U32 = struct.Struct(">I")
_SIGN = 1 << 63
_MASK64 = (1 << 64) - 1
_DAY_US = 86_400_000_000
_EPOCH = datetime(1, 1, 1)
_EPOCH_TZ = datetime(1, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
_COMPLEMENT = bytes(range(255, -1, -1))  # translate table: b -> 0xFF - b


def encode_key(key: tuple) -> bytes:
    """The order-preserving bytes of a key tuple."""
    out = bytearray()
    for value in key:
        encoder = _ENCODERS.get(type(value))
        if encoder is None:
            encoder = _encoder_for_subclass(value)
        encoder(out, value)
    return bytes(out)


def decode_key(data: bytes) -> tuple:
    """The key tuple that ``encode_key`` turned into ``data``."""
    if data == EMPTY:
        return ()
    values = []
    pos = 0
    end = len(data)
    while pos < end:
        value, pos = _DECODERS[data[pos]](data, pos + 1)
        values.append(value)
    return tuple(values)


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix``."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


# -- encoders -----------------------------------------------------------------


def _enc_none(out: bytearray, _: None) -> None:
    out.append(NONE)


def _enc_escaped(out: bytearray, tag: int, raw: bytes) -> None:
    out.append(tag)
    out += raw.replace(b"\x00", b"\x00\xff")
    out.append(0)


def _enc_bytes(out: bytearray, value: bytes) -> None:
    _enc_escaped(out, BYTES, bytes(value))


def _enc_str(out: bytearray, value: str) -> None:
    _enc_escaped(out, STR, value.encode("utf-8", "surrogatepass"))


def _enc_int(out: bytearray, value: int) -> None:
    if value == 0:
        out.append(INT_ZERO)
        return
    magnitude = -value if value < 0 else value
    length = (magnitude.bit_length() + 7) // 8
    if value < 0:  # one's complement of the magnitude: bigger magnitudes sort first
        body = (value + (1 << (8 * length)) - 1).to_bytes(length, "big")
    else:
        body = value.to_bytes(length, "big")
    if length < 8:
        out.append(INT_ZERO - length if value < 0 else INT_ZERO + length)
    elif value < 0:
        out.append(INT_BIG_NEG)
        out += _U32.pack(0xFFFFFFFF - length)
    else:
        out.append(INT_BIG_POS)
        out += _U32.pack(length)
    out += body


def _enc_bool(out: bytearray, value: bool) -> None:
    out.append(TRUE if value else FALSE)


def _enc_float(out: bytearray, value: float) -> None:
    if value != value:  # NaN: one canonical NaN, sorting after +inf
        bits = 0x7FF8000000000000
    else:
        bits = _U64.unpack(struct.pack(">d", value + 0.0))[0]  # + 0.0 turns -0.0 into 0.0
    bits = (bits ^ _MASK64) if bits & _SIGN else (bits | _SIGN)
    out.append(FLOAT)
    out += _U64.pack(bits)


def _enc_decimal(out: bytearray, value: Decimal) -> None:
    if not value.is_finite():
        raise ValueError(f"a key cannot hold the decimal {value}; only finite decimals")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # a finite decimal's exponent (not 'n', 'N', 'F')
    if not value:
        out.append(DEC_ZERO)
    else:
        text = "".join(map(str, digits)).rstrip("0").encode("ascii")
        adjusted = exponent + len(digits)  # value = 0.<digits> * 10 ** adjusted
        if sign:
            out.append(DEC_NEG)
            _enc_int(out, -adjusted)
            out += text.translate(_COMPLEMENT)
            out.append(0xFF)
        else:
            out.append(DEC_POS)
            _enc_int(out, adjusted)
            out += text
            out.append(0)
    _enc_int(out, exponent)  # the scale, so that the key decodes to the same Decimal


def _enc_date(out: bytearray, value: date) -> None:
    out.append(DATE)
    out += _U32.pack(value.toordinal())


def _enc_time(out: bytearray, value: time) -> None:
    micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000
    out.append(TIME)
    out += _U64.pack(micros + value.microsecond)


def _enc_datetime(out: bytearray, value: datetime) -> None:
    if value.tzinfo is None:
        out.append(DATETIME)
        out += _U64.pack((value - _EPOCH) // _US)
    else:
        out.append(DATETIME_TZ)
        out += _U64.pack((value - _EPOCH_TZ) // _US)


def _enc_nano_datetime(out: bytearray, value: datetime) -> None:
    # After the microseconds: 0xF0 (above every tag and the 0x00 that ends a nested
    # tuple, so the value sorts after the same microsecond without nanoseconds) and the
    # nanoseconds, 1..999, in 2 bytes.
    _enc_datetime(out, plain(value))
    nanos = nanos_of(value)
    if nanos:
        out.append(NANOS)
        out += nanos.to_bytes(2, "big")


def _enc_nested(out: bytearray, value: tuple | list) -> None:
    # No element starts with 0x00, so 0x00 ends the nested sequence unambiguously.
    out.append(TUPLE if isinstance(value, tuple) else LIST)
    for item in value:
        encoder = _ENCODERS.get(type(item))
        if encoder is None:
            encoder = _encoder_for_subclass(item)
        encoder(out, item)
    out.append(0)


_ENCODERS: dict[type, Callable[[bytearray, Any], None]] = {
    type(None): _enc_none,
    bytes: _enc_bytes,
    bytearray: _enc_bytes,
    str: _enc_str,
    int: _enc_int,
    bool: _enc_bool,
    float: _enc_float,
    Decimal: _enc_decimal,
    date: _enc_date,
    time: _enc_time,
    datetime: _enc_datetime,
    NanoDatetime: _enc_nano_datetime,
    tuple: _enc_nested,
    list: _enc_nested,
}


def _encoder_for_subclass(value: object) -> Callable[[bytearray, object], None]:
    # bool before int and datetime before date: the subclass wins.
    for kind in (bool, int, str, bytes, float, Decimal, datetime, date, time, tuple, list):
        if isinstance(value, kind):
            return _ENCODERS[kind]
    raise TypeError(f"a state key cannot hold a {type(value).__name__} value ({value!r})")


# -- decoders -----------------------------------------------------------------


def _dec_escaped(data: bytes, pos: int) -> tuple[bytes, int]:
    chunks = []
    while True:
        stop = data.index(0, pos)
        chunks.append(data[pos:stop])
        if stop + 1 < len(data) and data[stop + 1] == 0xFF:
            chunks.append(b"\x00")
            pos = stop + 2
        else:
            return b"".join(chunks), stop + 1


def _dec_bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    return _dec_escaped(data, pos)


def _dec_str(data: bytes, pos: int) -> tuple[str, int]:
    raw, pos = _dec_escaped(data, pos)
    return raw.decode("utf-8", "surrogatepass"), pos


def _small_int_decoder(length: int, negative: bool) -> Callable[[bytes, int], tuple[int, int]]:
    full = (1 << (8 * length)) - 1

    def decode(data: bytes, pos: int) -> tuple[int, int]:
        raw = int.from_bytes(data[pos : pos + length], "big")
        return (raw - full if negative else raw), pos + length

    return decode


def _dec_big_int(data: bytes, pos: int) -> tuple[int, int]:
    negative = data[pos - 1] == INT_BIG_NEG
    length = _U32.unpack_from(data, pos)[0]
    if negative:
        length = 0xFFFFFFFF - length
    pos += 4
    raw = int.from_bytes(data[pos : pos + length], "big")
    if negative:
        raw -= (1 << (8 * length)) - 1
    return raw, pos + length


def _dec_float(data: bytes, pos: int) -> tuple[float, int]:
    bits = _U64.unpack_from(data, pos)[0]
    bits = (bits ^ _SIGN) if bits & _SIGN else (bits ^ _MASK64)
    return struct.unpack(">d", _U64.pack(bits))[0], pos + 8


def _dec_decimal(data: bytes, pos: int) -> tuple[Decimal, int]:
    tag = data[pos - 1]
    if tag == DEC_ZERO:
        exponent, pos = _DECODERS[data[pos]](data, pos + 1)
        return Decimal(f"0E{exponent}"), pos
    adjusted, pos = _DECODERS[data[pos]](data, pos + 1)
    if tag == DEC_NEG:
        stop = data.index(0xFF, pos)
        digits = data[pos:stop].translate(_COMPLEMENT).decode("ascii")
        adjusted = -adjusted
    else:
        stop = data.index(0, pos)
        digits = data[pos:stop].decode("ascii")
    exponent, pos = _DECODERS[data[stop + 1]](data, stop + 2)
    padding = "0" * (adjusted - exponent - len(digits))
    return Decimal(f"{'-' if tag == DEC_NEG else ''}{digits}{padding}E{exponent}"), pos


def _dec_date(data: bytes, pos: int) -> tuple[date, int]:
    return date.fromordinal(_U32.unpack_from(data, pos)[0]), pos + 4


def _dec_time(data: bytes, pos: int) -> tuple[time, int]:
    micros = _U64.unpack_from(data, pos)[0]
    seconds, micro = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return time(hour, minute, second, micro), pos + 8


def _dec_datetime(data: bytes, pos: int) -> tuple[datetime, int]:
    base = _EPOCH if data[pos - 1] == DATETIME else _EPOCH_TZ
    value = base + timedelta(microseconds=_U64.unpack_from(data, pos)[0])
    pos += 8
    if pos < len(data) and data[pos] == NANOS:
        return with_nanos(value, int.from_bytes(data[pos + 1 : pos + 3], "big")), pos + 3
    return value, pos


def _dec_nested(data: bytes, pos: int) -> tuple[tuple | list, int]:
    is_tuple = data[pos - 1] == TUPLE
    values = []
    while data[pos] != 0:
        value, pos = _DECODERS[data[pos]](data, pos + 1)
        values.append(value)
    return (tuple(values) if is_tuple else values), pos + 1


def _dec_constant(value: object) -> Callable[[bytes, int], tuple[object, int]]:
    return lambda data, pos: (value, pos)


def _build_decoders() -> dict[int, Callable[[bytes, int], tuple[Any, int]]]:
    table: dict[int, Callable[[bytes, int], tuple[Any, int]]] = {
        NONE: _dec_constant(None),
        BYTES: _dec_bytes,
        STR: _dec_str,
        INT_ZERO: _dec_constant(0),
        INT_BIG_NEG: _dec_big_int,
        INT_BIG_POS: _dec_big_int,
        FLOAT: _dec_float,
        DEC_NEG: _dec_decimal,
        DEC_ZERO: _dec_decimal,
        DEC_POS: _dec_decimal,
        FALSE: _dec_constant(False),
        TRUE: _dec_constant(True),
        DATE: _dec_date,
        TIME: _dec_time,
        DATETIME: _dec_datetime,
        DATETIME_TZ: _dec_datetime,
        TUPLE: _dec_nested,
        LIST: _dec_nested,
    }
    for length in range(1, 8):
        table[INT_ZERO - length] = _small_int_decoder(length, True)
        table[INT_ZERO + length] = _small_int_decoder(length, False)
    return table


_DECODERS = _build_decoders()
