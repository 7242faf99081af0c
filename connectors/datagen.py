"""The ``datagen`` source (Flink's options), deterministic for a given ``seed``.

Rows are made in blocks of ``BLOCK`` rows, each block from its own random stream
(seed, block number), so a resumed source produces exactly the rows it would have.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from decimal import Decimal

from deltaflow.connectors.base import INSERT_ONLY, LocalSource, TableSpec
from deltaflow.connectors.options import TableOptions
from deltaflow.formats import types as T
from deltaflow.formats.changelog import Batch, RowKind

BLOCK = 1024
KNOWN = ("rows-per-second", "number-of-rows", "scan.parallelism", "seed")
FIELD_KEYS = ("kind", "min", "max", "max-past", "length", "var-len", "start", "end", "null-rate")
_EPOCH = dt.datetime(1970, 1, 1)


def _options(spec: TableSpec) -> TableOptions:
    opts = TableOptions(spec.name, "datagen", spec.options, KNOWN, ["fields."])
    names = {n for n, _ in spec.physical}
    for key in opts.with_prefix("fields."):
        field, _, sub = key.rpartition(".")
        if field not in names or sub not in FIELD_KEYS:
            raise opts.error(
                f"unknown option 'fields.{key}'; write fields.<column>.<key> with a column of the "
                f"table and a key among: {', '.join(FIELD_KEYS)}"
            )
    return opts


def source_mode(spec: TableSpec) -> frozenset[RowKind]:
    _options(spec)
    return INSERT_ONLY


def open_source(spec: TableSpec, bootstrap: str | None = None, start: str | None = None):
    opts = _options(spec)
    if spec.metadata:
        raise opts.error("the datagen connector has no metadata columns")
    if start not in (None, "earliest"):
        raise opts.error(
            f"start position '{start}' is not available for datagen; it always starts at row 0"
        )
    return DatagenSource(opts, spec)


class DatagenSource(LocalSource):
    changelog_mode = INSERT_ONLY

    def __init__(self, opts: TableOptions, spec: TableSpec) -> None:
        self.opts = opts
        self.rate = opts.number("rows-per-second", 10000.0)
        seed = opts.integer("seed")
        self.seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
        self.fields = [_generator(opts, name, dtype) for name, dtype in spec.physical]
        limits = [opts.integer("number-of-rows", minimum=0)]
        limits += [f.count for f in self.fields if f.count is not None]
        known = [n for n in limits if n is not None]
        self.total: int | None = min(known) if known else None
        self.rows = 0
        self.started = 0.0
        self._block: tuple[int, list[tuple]] | None = None

    def open(self, resume: dict | None = None) -> None:
        if resume:
            self.rows, self.seed = int(resume["rows"]), int(resume["seed"])
        self.started = time.monotonic()
        self.base = self.rows

    def _rows_of(self, block: int) -> list[tuple]:
        if self._block is None or self._block[0] != block:
            rng = random.Random(f"{self.seed}:{block}")
            first = block * BLOCK
            rows = [tuple(f.make(rng, i) for f in self.fields) for i in range(first, first + BLOCK)]
            self._block = (block, rows)
        return self._block[1]

    def poll(self, max_records: int, timeout: float) -> Batch:
        want = max_records if self.total is None else min(max_records, self.total - self.rows)
        if self.rate > 0:
            allowed = int(self.rate * (time.monotonic() - self.started)) - (self.rows - self.base)
            if allowed <= 0:
                time.sleep(min(timeout, (1 - allowed) / self.rate))
                allowed = int(self.rate * (time.monotonic() - self.started)) - (
                    self.rows - self.base
                )
            want = min(want, max(allowed, 0))
        out: list[tuple] = []
        while len(out) < want:
            block, skip = divmod(self.rows + len(out), BLOCK)
            out.extend(self._rows_of(block)[skip : skip + want - len(out)])
        self.rows += len(out)
        return Batch([RowKind.INSERT] * len(out), out)

    def position(self) -> dict:
        return {"rows": self.rows, "seed": self.seed}

    def finished(self) -> bool:
        return self.total is not None and self.rows >= self.total

    def progress(self) -> tuple[int, int | None]:
        return self.rows, self.total

    def close(self) -> None:
        self._block = None


class _Field:
    def __init__(self, make, count: int | None = None) -> None:
        self.make = make  # (rng, row index) -> value
        self.count = count  # rows a sequence can give


def _generator(opts: TableOptions, name: str, dtype: T.DataType) -> _Field:
    pre = f"fields.{name}."
    kind = opts.choice(pre + "kind", ("random", "sequence"), "random")
    null_rate = opts.number(pre + "null-rate", 0.0) or 0.0
    if kind == "sequence":
        field = _sequence(opts, pre, dtype)
    else:
        field = _Field(_random(opts, pre, dtype))
    if null_rate > 0:
        inner = field.make
        field.make = lambda rng, i: None if rng.random() < null_rate else inner(rng, i)
    return field


def _sequence(opts: TableOptions, pre: str, dtype: T.DataType) -> _Field:
    start, end = opts.integer(pre + "start"), opts.integer(pre + "end")
    if start is None or end is None:
        raise opts.error(f"a sequence field needs options '{pre}start' and '{pre}end'")
    if end < start:
        raise opts.error(f"option '{pre}end' must not be less than '{pre}start'")
    root = dtype.root
    if root in T.INTEGER_ROOTS:
        convert = int
    elif root in T.APPROX_ROOTS:
        convert = float
    elif root == T.DECIMAL:
        quantum = T.decimal_quantum(T.decimal_params(dtype)[1])
        convert = lambda n: Decimal(n).quantize(quantum)  # noqa: E731
    elif root in T.STRING_ROOTS:
        convert = str
    else:
        raise opts.error(f"a sequence field must be numeric or a string, not {dtype.sql()}")
    return _Field(lambda rng, i: convert(start + i), end - start + 1)


def _random(opts: TableOptions, pre: str, dtype: T.DataType):  # noqa: C901 - a table over types
    root = dtype.root
    if root in T.INTEGER_ROOTS:
        low, high = T.INT_RANGES[root]
        lo, hi = opts.integer(pre + "min", low), opts.integer(pre + "max", high)
        return lambda rng, i: rng.randint(lo, hi)
    if root in T.APPROX_ROOTS or root == T.DECIMAL:
        lo_f, hi_f = opts.number(pre + "min", -1e9), opts.number(pre + "max", 1e9)
        if root != T.DECIMAL:
            return lambda rng, i: rng.uniform(lo_f, hi_f)
        quantum = T.decimal_quantum(T.decimal_params(dtype)[1])
        return lambda rng, i: Decimal(repr(rng.uniform(lo_f, hi_f))).quantize(quantum)
    if root == T.BOOLEAN:
        return lambda rng, i: rng.random() < 0.5
    if root in T.STRING_ROOTS or root in T.BINARY_ROOTS:
        return _text(opts, pre, dtype)
    if root in (T.TIMESTAMP, T.TIMESTAMP_LTZ, T.DATE, T.TIME):
        past = opts.integer(pre + "max-past", 0, minimum=0)
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)

        def stamp(rng, i):
            value = now - dt.timedelta(milliseconds=rng.randint(0, past))  # type: ignore[arg-type]
            if root == T.DATE:
                return value.date()
            if root == T.TIME:
                return value.time().replace(microsecond=value.microsecond // 1000 * 1000)
            value = value.replace(microsecond=value.microsecond // 1000 * 1000)
            return value.replace(tzinfo=dt.UTC) if root == T.TIMESTAMP_LTZ else value

        return stamp
    raise opts.error(f"datagen cannot generate column type {dtype.sql()}")


def _text(opts: TableOptions, pre: str, dtype: T.DataType):
    """Random hex strings (or bytes) of ``length``; ``var-len`` draws a length in 1..length."""
    root = dtype.root
    variable = root in (T.VARCHAR, T.VARBINARY)
    length = opts.integer(pre + "length", 100 if variable else dtype.length, minimum=1)
    if dtype.length:
        length = min(length, dtype.length)  # type: ignore[type-var]
    if opts.boolean(pre + "var-len") and not variable:
        raise opts.error(f"option '{pre}var-len' needs a variable-length column, not {dtype.sql()}")
    size = (
        (lambda rng: rng.randint(1, length))
        if opts.boolean(pre + "var-len")
        else (lambda rng: length)
    )
    if root in T.BINARY_ROOTS:
        return lambda rng, i: rng.randbytes(size(rng))

    def text(rng, i):
        n = size(rng)
        return f"{rng.getrandbits(4 * n):0{n}x}"

    return text
