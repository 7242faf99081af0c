"""What every runtime operator shares: the operator protocol and the runtime context."""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from operator import itemgetter

from deltaflow.formats.changelog import Batch
from deltaflow.formats.errors import DeltaflowError
from deltaflow.formats.types import (
    APPROX_ROOTS,
    BINARY_ROOTS,
    BOOLEAN,
    DATE,
    DECIMAL,
    INTEGER_ROOTS,
    STRING_ROOTS,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
)
from deltaflow.processor.exprs.compile import EvalContext
from deltaflow.processor.runtime.ttl import state_ttl_ms, wall_clock_ms
from deltaflow.state.keys import EMPTY, decode_key, encode_key

NOT_NULL_ENFORCER = "table.exec.sink.not-null-enforcer"
MIN_WATERMARK = -(1 << 63)
MAX_WATERMARK = (1 << 63) - 1

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS = dt.timedelta(milliseconds=1)


@dataclass
class RuntimeContext:
    """Job-wide runtime settings, read once from the plan's ``SET`` options."""

    time_zone: str = "UTC"
    mini_batch: bool = False
    drop_not_null_violations: bool = False  # table.exec.sink.not-null-enforcer = DROP
    state_ttl_ms: int = 0  # table.exec.state.ttl; 0 keeps state forever
    clock: Callable[[], int] = field(default=wall_clock_ms)  # processing time (ms) for the TTL

    @classmethod
    def from_settings(cls, settings: dict[str, str]) -> RuntimeContext:
        mini = settings.get("table.exec.mini-batch.enabled", "false").strip().lower() == "true"
        enforcer = settings.get(NOT_NULL_ENFORCER, "ERROR").strip().upper()
        if enforcer not in ("ERROR", "DROP"):
            raise DeltaflowError(
                f"option {NOT_NULL_ENFORCER!r} is {enforcer!r}; write 'ERROR' (the default) or 'DROP'"
            )
        return cls(
            time_zone=settings.get("table.local-time-zone", "UTC"),
            mini_batch=mini,
            drop_not_null_violations=enforcer == "DROP",
            state_ttl_ms=state_ttl_ms(settings),
        )

    def eval_context(self) -> EvalContext:
        return EvalContext(time_zone=self.time_zone)


class Operator(ABC):
    """One node of the graph. ``process`` takes the batch arriving on input ``port``."""

    timed = False  # True: the graph calls on_processing_time as the wall clock moves on
    # An event-time operator's rows found behind the watermark and dropped (Flink's
    # numLateRecordsDropped); None: the operator drops no late rows.
    late_rows: int | None = None

    @abstractmethod
    def process(self, batch: Batch, port: int = 0) -> Batch: ...

    def on_watermark(self, watermark: int) -> Batch:
        """Called when the node's input watermark (epoch ms) advances; event-time operators fire."""
        return Batch()

    def flush(self) -> Batch:
        """Empties buffers before a checkpoint."""
        return Batch()

    def on_processing_time(self, now_ms: int) -> Batch:
        """Called as the wall clock moves on (epoch ms); processing-time windows fire."""
        return Batch()


def key_getter(indexes: tuple[int, ...]) -> Callable[[tuple], tuple]:
    """A function returning the columns ``indexes`` of a row, always as a tuple."""
    if not indexes:
        return lambda row: ()
    if len(indexes) == 1:
        (i,) = indexes
        return lambda row: (row[i],)
    return itemgetter(*indexes)


def epoch_ms(value: object) -> int:
    """A TIMESTAMP (naive: read as UTC, as Flink's TimestampData does) or TIMESTAMP_LTZ in ms."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return (value - _EPOCH) // _MS
        return (value - _EPOCH_UTC) // _MS
    if isinstance(value, int):
        return value
    raise TypeError(f"not a time attribute value: {value!r}")


def from_epoch_ms(ms: int, aware: bool) -> dt.datetime:
    if aware:
        return _EPOCH_UTC + ms * _MS
    return _EPOCH + ms * _MS


_UNHASHABLE_ROOTS = frozenset({"ARRAY", "MAP", "MULTISET"})


def _unhashable(dtype) -> bool:
    if dtype.root in _UNHASHABLE_ROOTS:
        return True
    return dtype.root == "ROW" and any(_unhashable(t) for _, t in dtype.fields)


def _freeze(value: object) -> object:
    if isinstance(value, list):
        return ("\x00array", tuple(_freeze(v) for v in value))
    if isinstance(value, dict):
        return ("\x00map", frozenset((_freeze(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, tuple):
        return tuple(_freeze(v) for v in value)
    return value


def row_freezer(types) -> Callable[[tuple], tuple] | None:
    """A function making rows of ``types`` hashable (ARRAY/MAP values become tuples), or
    None when rows of these types already are."""
    if not any(_unhashable(t) for t in types):
        return None
    return lambda row: tuple(_freeze(v) for v in row)


_SCALAR_SHAPES: dict[str, object] = {
    **dict.fromkeys(INTEGER_ROOTS, int),
    **dict.fromkeys(APPROX_ROOTS, float),
    **dict.fromkeys(STRING_ROOTS, str),
    **dict.fromkeys(BINARY_ROOTS, bytes),
    BOOLEAN: bool,
    DECIMAL: Decimal,
    DATE: dt.date,
    TIME: dt.time,
    TIMESTAMP: dt.datetime,
    TIMESTAMP_LTZ: dt.datetime,
}


def row_shape(types) -> object | None:
    """The msgspec type of rows of ``types`` (every column nullable), for a typed state
    codec; None when a column is nested (ARRAY, MAP, ROW) or of another type."""
    shapes = [_SCALAR_SHAPES.get(t.root) for t in types]
    if any(s is None for s in shapes):
        return None
    return tuple[tuple(s | None for s in shapes)]  # type: ignore[misc, operator]


class StateKeys:
    """``state_key`` with a memory: one per operator (its key columns have fixed types,
    so keys equal as tuples, such as ``1`` and ``True``, never meet), bounded by
    ``limit`` keys (then it starts over). Hot keys are encoded once, not once a batch."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self.known: dict[tuple, bytes] = {}

    def of(self, keys) -> dict[tuple, bytes]:
        """Each distinct key of ``keys`` (in first-seen order) -> its state key."""
        known = self.known
        distinct = dict.fromkeys(keys)
        if len(known) + len(distinct) > self.limit:
            known.clear()
        for key in distinct:
            kb = known.get(key)
            if kb is None:
                kb = known[key] = encode_key(key) or EMPTY
            distinct[key] = kb
        return distinct  # type: ignore[return-value]


def key_prefixes(table, width: int) -> set[tuple]:  # noqa: ANN001
    """The distinct first ``width`` values of the keys of ``table`` (buffered writes
    included): one pass over its keys, each prefix decoded once (a window operator's
    windows, read back at its first watermark after a start)."""
    found: set[tuple] = set()
    head: bytes | None = None
    for kb in table.scan_many([b""], values=False)[0]:
        if head is None or not kb.startswith(head):
            prefix = decode_key(kb)[:width]
            found.add(prefix)
            head = encode_key(prefix)
    return found


def state_key(key: tuple) -> bytes:
    """The bytes a state table stores ``key`` under (the empty tuple too), for the
    ``*_encoded`` methods: operators encode each key of a batch once."""
    return encode_key(key) or EMPTY


def cache_misses(cache: dict, keys: dict, limit: int) -> list:
    """The ``keys`` not in ``cache``; all of them, the cache emptied, when keeping them
    too would take it past ``limit`` keys (an operator's cache of decoded state starts
    over: the state table stays the truth)."""
    missing = [key for key in keys if key not in cache]
    if len(cache) + len(missing) > limit:
        cache.clear()
        return list(keys)
    return missing
