"""Aggregate functions with retraction, as Flink's streaming aggregates compute them.

Each function keeps one slot of a group's accumulator list (see ``aggs.Aggregates``,
which folds rows into that list with generated code and calls these objects only for
the functions it does not write inline).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Context, Decimal

from deltaflow.formats.errors import PlanError
from deltaflow.formats.types import (
    APPROX_ROOTS,
    DECIMAL,
    DECIMAL_MAX_PRECISION,
    INT_BITS,
    INTEGER_ROOTS,
    DataType,
    decimal_quantum,
)
from deltaflow.processor.plan import AggCall

_WIDE = Context(prec=80, rounding=ROUND_HALF_UP)  # wide enough for any DECIMAL(38, s)
# Sums of DECIMAL values add in WIDE: exact whatever the caller's decimal context is
# (the default context keeps 28 digits, fewer than DECIMAL(38, s) holds).
WIDE = _WIDE
_DIVIDE = Context(prec=80, rounding=ROUND_HALF_EVEN)
_QUANTUM = [decimal_quantum(s) for s in range(DECIMAL_MAX_PRECISION + 1)]


def wrap_integer(value: int, dtype: DataType) -> int:
    """Java two's-complement overflow of an integer type (INT 32-bit, BIGINT 64-bit)."""
    bits = INT_BITS[dtype.root]
    half = 1 << (bits - 1)
    if -half <= value < half:
        return value
    return (value + half) % (1 << bits) - half


def cast_number(value: object, dtype: DataType) -> object:
    """A sum or average as a value of the result type (DECIMAL scale HALF_UP, ints wrapped)."""
    if value is None:
        return None
    root = dtype.root
    if root == DECIMAL:
        if type(value) is not Decimal:
            value = Decimal(value)  # type: ignore[arg-type]
        return value.quantize(_QUANTUM[dtype.scale or 0], context=_WIDE)
    if root in INTEGER_ROOTS:
        if isinstance(value, Decimal):
            value = int(value.to_integral_value(rounding=ROUND_DOWN))
        return wrap_integer(int(value), dtype)  # type: ignore[call-overload]
    if root in APPROX_ROOTS:
        return float(value)  # type: ignore[arg-type]
    return value


def zero_of(dtype: DataType) -> object:
    if dtype.root == DECIMAL:
        return cast_number(0, dtype)
    if dtype.root in APPROX_ROOTS:
        return 0.0
    return 0


class Count:
    def init(self) -> object:
        return 0

    def add(self, acc, v):
        return acc + 1

    def retract(self, acc, v):
        return acc - 1

    def value(self, acc):
        return acc


class Sum:
    """[sum, count of non-null values]; NULL when the count is 0 (SUM0: zero)."""

    def __init__(self, dtype: DataType, zero_when_empty: bool) -> None:
        self.dtype = dtype
        self.empty = zero_of(dtype) if zero_when_empty else None
        decimal = dtype.root == DECIMAL
        self.start = Decimal(0) if decimal else 0
        self.plus = WIDE.add if decimal else operator.add
        self.minus = WIDE.subtract if decimal else operator.sub

    def init(self):
        return [self.start, 0]

    def add(self, acc, v):
        acc[0] = self.plus(acc[0], v)
        acc[1] += 1
        return acc

    def retract(self, acc, v):
        acc[0] = self.minus(acc[0], v)
        acc[1] -= 1
        return acc

    def value(self, acc):
        if acc[1] == 0:
            return self.empty
        total = acc[0]
        if self.dtype.root in INT_BITS and type(total) is int:
            return wrap_integer(total, self.dtype)
        return cast_number(total, self.dtype)


class Avg(Sum):
    """Flink's AVG: sum / count in the result type; integer AVG truncates toward zero."""

    def __init__(self, dtype: DataType) -> None:
        super().__init__(dtype, zero_when_empty=False)
        # a DECIMAL result, as ``value`` computes it: ``divide(total, count).quantize(
        # quantum, context=quantize_context)`` (generated code writes it inline)
        self.divide = _DIVIDE.divide
        self.quantum = _QUANTUM[dtype.scale or 0]
        self.quantize_context = _WIDE

    def value(self, acc):
        total, count = acc
        if count == 0:
            return None
        if self.dtype.root in INTEGER_ROOTS:
            quotient = abs(total) // count
            return cast_number(quotient if total >= 0 else -quotient, self.dtype)
        if self.dtype.root == DECIMAL:
            return cast_number(_DIVIDE.divide(Decimal(total), count), self.dtype)
        return float(total) / count


class _Counts(dict):
    """MIN/MAX's accumulator: value -> count of copies, and ``best`` (the current result,
    or ``UNKNOWN`` until it is next needed)."""

    __slots__ = ("best",)


UNKNOWN = object()


class MinMax:
    """MIN/MAX with retraction: value -> count of copies.

    The result is kept with the counts (``_Counts.best``): an addition that beats it
    replaces it, a retraction of its last copy forgets it, and only then does the next
    result scan the values (``pick``), so a group with many distinct values is not
    scanned per emitted row. The result is the one ``pick`` gives: the strict
    comparison (``>`` for MAX, ``<`` for MIN) that ``max``/``min`` use. FLOAT and DOUBLE
    scan every time (``cached`` False): with a NaN among the values the result of
    ``max`` depends on their order.
    """

    def __init__(self, pick: Callable, cached: bool = True) -> None:
        self.pick = pick
        self.beats = operator.gt if pick is max else operator.lt
        self.cached = cached

    def init(self):
        acc = _Counts()
        acc.best = UNKNOWN
        return acc

    def add(self, acc, v):
        acc[v] = acc.get(v, 0) + 1
        best = acc.best
        if best is not UNKNOWN and self.beats(v, best):
            acc.best = v
        return acc

    def retract(self, acc, v):
        n = acc.get(v, 0)
        if n <= 1:
            if acc.pop(v, UNKNOWN) is not UNKNOWN and acc.best is not UNKNOWN and v == acc.best:
                acc.best = UNKNOWN
        else:
            acc[v] = n - 1
        return acc

    def value(self, acc):
        if not acc:
            return None
        if not self.cached:
            return self.pick(acc)
        best = acc.best
        if best is UNKNOWN:
            best = acc.best = self.pick(acc)
        return best

    def dump(self, acc):
        return [[k, n] for k, n in acc.items()]

    def load(self, raw):
        acc = _Counts((k, n) for k, n in raw)
        acc.best = UNKNOWN
        return acc


class Ordered:
    """The non-null values in arrival order; a retraction removes the earliest copy.

    Backs LISTAGG (joined with the separator), FIRST_VALUE and LAST_VALUE, as Flink's
    ``...WithRetract`` aggregate functions do.
    """

    def __init__(self, result: Callable[[list], object]) -> None:
        self.result = result

    def init(self):
        return []

    def add(self, acc, v):
        acc.append(v)
        return acc

    def retract(self, acc, v):
        try:
            acc.remove(v)
        except ValueError:
            pass
        return acc

    def value(self, acc):
        return self.result(acc) if acc else None


class ListAggWs:
    """``LISTAGG(value, separator)`` with the separator a column: each argument pair is
    ``(value, separator)``; the last separator seen joins the values (as Flink)."""

    def init(self):
        return [[], ","]

    def add(self, acc, v):
        acc[0].append(v[0])
        acc[1] = v[1]
        return acc

    def retract(self, acc, v):
        try:
            acc[0].remove(v[0])
        except ValueError:
            pass
        return acc

    def value(self, acc):
        return acc[1].join(acc[0]) if acc[0] else None


class WelfordM2:
    """Flink's internal ``$WELFORD_M2$1``: the sum of squared deviations from the mean, kept
    by Welford's online update in DOUBLE as [n, mean, m2]; the variance functions are this
    divided by a COUNT. A retraction undoes an update; n keeps counting below zero (a
    retraction before its row) without touching mean and m2, and the value is NULL then."""

    def init(self):
        return [0, 0.0, 0.0]

    def add(self, acc, v):
        acc[0] += 1
        if acc[0] > 0:
            x = float(v)
            step = x - acc[1]
            acc[1] += step / acc[0]
            acc[2] += step * (x - acc[1])
        return acc

    def retract(self, acc, v):
        acc[0] -= 1
        if acc[0] == 0:
            acc[1] = acc[2] = 0.0
        elif acc[0] > 0:
            x = float(v)
            step = x - acc[1]
            acc[1] -= step / acc[0]
            acc[2] -= (x - acc[1]) * step
        return acc

    def value(self, acc):
        return None if acc[0] <= 0 or acc[2] < 0 else acc[2]


class Distinct:
    """``AGG(DISTINCT x)``: the inner function sees a value when its count goes 0 -> 1 -> 0."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def init(self):
        return [{}, self.inner.init()]

    def add(self, acc, v):
        seen = acc[0]
        n = seen.get(v, 0)
        seen[v] = n + 1
        if n == 0:
            acc[1] = self.inner.add(acc[1], v)
        return acc

    def retract(self, acc, v):
        seen = acc[0]
        n = seen.get(v, 0)
        if n == 0:
            return acc
        if n == 1:
            del seen[v]
            acc[1] = self.inner.retract(acc[1], v)
        else:
            seen[v] = n - 1
        return acc

    def value(self, acc):
        return self.inner.value(acc[1])

    def dump(self, acc):
        inner = getattr(self.inner, "dump", None)
        return [[[k, n] for k, n in acc[0].items()], inner(acc[1]) if inner else acc[1]]

    def load(self, raw):
        inner = getattr(self.inner, "load", None)
        return [{k: n for k, n in raw[0]}, inner(raw[1]) if inner else raw[1]]


def make_function(call: AggCall, arg_type: DataType | None):
    name = call.function.upper()
    if name == "COUNT":
        return Count()
    if name in ("SUM", "SUM0", "$SUM0"):
        return Sum(call.type, zero_when_empty=name != "SUM")
    if name == "AVG":
        return Avg(call.type)
    if name in ("MIN", "MAX"):
        cached = arg_type is None or arg_type.root not in APPROX_ROOTS
        return MinMax(min if name == "MIN" else max, cached)
    if name == "LISTAGG" and len(call.args) == 2:
        return ListAggWs()
    if name == "LISTAGG":
        sep = str(call.params[0]) if call.params else ","
        return Ordered(sep.join)
    if name == "$WELFORD_M2$1":
        return WelfordM2()
    if name == "FIRST_VALUE":
        return Ordered(lambda values: values[0])
    if name == "LAST_VALUE":
        return Ordered(lambda values: values[-1])
    raise PlanError(
        f"aggregate function {call.function} ({call.name}) is not supported by the streaming "
        "runtime; use COUNT, SUM, SUM0, AVG, MIN, MAX, LISTAGG, FIRST_VALUE or LAST_VALUE"
    )
