"""Aggregate functions with retraction, as Flink's streaming aggregates compute them.

A group's accumulator is a list: slot 0 counts the rows the group holds (Flink's
record counter), then one slot per ``AggCall``. ``Aggregates`` builds, once per
operator, the functions that fold one input row into that list, take one back out,
and read the result values. Accumulators are kept as Python values while a batch
runs; ``dump``/``load`` turn them into state values (lists, no dicts) and back.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_DOWN, ROUND_HALF_UP, Context, Decimal, localcontext

from deltaflow.formats.errors import PlanError
from deltaflow.formats.types import APPROX_ROOTS, DECIMAL, INTEGER_ROOTS, DataType
from deltaflow.processor.plan import AggCall

_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_WIDE = Context(prec=80, rounding=ROUND_HALF_UP)  # wide enough for any DECIMAL(38, s)
_QUANTUM = [Decimal(1).scaleb(-s) for s in range(39)]


def wrap_integer(value: int, dtype: DataType) -> int:
    """Java two's-complement overflow of an integer type (INT 32-bit, BIGINT 64-bit)."""
    bits = _INT_BITS[dtype.root]
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
        self.start = Decimal(0) if dtype.root == DECIMAL else 0

    def init(self):
        return [self.start, 0]

    def add(self, acc, v):
        acc[0] += v
        acc[1] += 1
        return acc

    def retract(self, acc, v):
        acc[0] -= v
        acc[1] -= 1
        return acc

    def value(self, acc):
        if acc[1] == 0:
            return self.empty
        total = acc[0]
        if self.dtype.root in _INT_BITS and type(total) is int:
            return wrap_integer(total, self.dtype)
        return cast_number(total, self.dtype)


class Avg(Sum):
    """Flink's AVG: sum / count in the result type; integer AVG truncates toward zero."""

    def __init__(self, dtype: DataType) -> None:
        super().__init__(dtype, zero_when_empty=False)

    def value(self, acc):
        total, count = acc
        if count == 0:
            return None
        if self.dtype.root in INTEGER_ROOTS:
            quotient = abs(total) // count
            return cast_number(quotient if total >= 0 else -quotient, self.dtype)
        if self.dtype.root == DECIMAL:
            with localcontext() as c:
                c.prec = 80
                return cast_number(Decimal(total) / count, self.dtype)
        return float(total) / count


class MinMax:
    """MIN/MAX with retraction: value -> count of copies."""

    def __init__(self, pick: Callable) -> None:
        self.pick = pick

    def init(self):
        return {}

    def add(self, acc, v):
        acc[v] = acc.get(v, 0) + 1
        return acc

    def retract(self, acc, v):
        n = acc.get(v, 0)
        if n <= 1:
            acc.pop(v, None)
        else:
            acc[v] = n - 1
        return acc

    def value(self, acc):
        return self.pick(acc) if acc else None

    def dump(self, acc):
        return [[k, n] for k, n in acc.items()]

    def load(self, raw):
        return {k: n for k, n in raw}


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
    if name == "MIN":
        return MinMax(min)
    if name == "MAX":
        return MinMax(max)
    if name == "LISTAGG" and len(call.args) == 2:
        return ListAggWs()
    if name == "LISTAGG":
        sep = str(call.params[0]) if call.params else ","
        return Ordered(sep.join)
    if name == "FIRST_VALUE":
        return Ordered(lambda values: values[0])
    if name == "LAST_VALUE":
        return Ordered(lambda values: values[-1])
    raise PlanError(
        f"aggregate function {call.function} ({call.name}) is not supported by the streaming "
        "runtime; use COUNT, SUM, SUM0, AVG, MIN, MAX, LISTAGG, FIRST_VALUE or LAST_VALUE"
    )


def _arg_getter(args: tuple[int, ...]) -> Callable[[tuple], object] | None:
    """The argument of one row; None for COUNT(*); a tuple (None if any is NULL) for several."""
    if not args:
        return None
    if len(args) == 1:
        (i,) = args
        return lambda row: row[i]

    def several(row: tuple) -> object:
        values = tuple(row[i] for i in args)
        return None if None in values else values

    return several


class Aggregates:
    """All aggregates of one operator, folded per row into a group's accumulator list."""

    def __init__(self, calls: tuple[AggCall, ...], input_types: list[DataType]) -> None:
        self.calls = calls
        self.fns = []
        for call in calls:
            arg_type = input_types[call.args[0]] if call.args else None
            fn = make_function(call, arg_type)
            if call.distinct and call.args:
                fn = Distinct(fn)
            self.fns.append(fn)
        self.values = self._compile_values()
        self.accumulate = self._compile(retract=False)
        self.retract = self._compile(retract=True)

    def init(self) -> list:
        return [0] + [fn.init() for fn in self.fns]

    def _compile(self, retract: bool) -> Callable[[list, tuple], None]:
        """One generated function folding a row into (or out of) a group's accumulator.

        COUNT and SUM/SUM0/AVG over one column are written inline; every other
        function is called through its object. Built once per operator.
        """
        sign = "-" if retract else "+"
        method = "retract" if retract else "add"
        lines = ["def fold(acc, row):", f"    acc[0] {sign}= 1"]
        for slot, call, fn in zip(range(1, len(self.fns) + 1), self.calls, self.fns, strict=True):
            pad = "    "
            if call.filter_arg is not None:
                lines.append(f"    if row[{call.filter_arg}] is True:")
                pad = "        "
            single = len(call.args) == 1
            if type(fn) is Count and not call.args:
                lines.append(f"{pad}acc[{slot}] {sign}= 1")
                continue
            if not call.args:
                lines.append(f"{pad}acc[{slot}] = fns[{slot - 1}].{method}(acc[{slot}], None)")
                continue
            get = f"row[{call.args[0]}]" if single else f"getters[{slot - 1}](row)"
            lines.append(f"{pad}v = {get}")
            lines.append(f"{pad}if v is not None:")
            if type(fn) is Count:
                lines.append(f"{pad}    acc[{slot}] {sign}= 1")
            elif type(fn) in (Sum, Avg):
                lines.append(f"{pad}    a = acc[{slot}]")
                lines.append(f"{pad}    a[0] {sign}= v")
                lines.append(f"{pad}    a[1] {sign}= 1")
            else:
                lines.append(f"{pad}    acc[{slot}] = fns[{slot - 1}].{method}(acc[{slot}], v)")
        scope = {"fns": self.fns, "getters": [_arg_getter(c.args) for c in self.calls]}
        exec(compile("\n".join(lines) + "\n", "<aggregates>", "exec"), scope)  # noqa: S102
        return scope["fold"]  # type: ignore[return-value]

    def _compile_values(self) -> Callable[[list], tuple]:
        """One generated function reading every result from an accumulator (COUNT inline)."""
        parts = []
        for slot, fn in enumerate(self.fns, start=1):
            parts.append(f"acc[{slot}]" if type(fn) is Count else f"vals[{slot - 1}](acc[{slot}])")
        source = (
            f"def values(acc):\n    return ({', '.join(parts)}{',' if len(parts) == 1 else ''})\n"
        )
        scope = {"vals": [fn.value for fn in self.fns]}
        exec(compile(source, "<aggregate values>", "exec"), scope)  # noqa: S102
        return scope["values"]  # type: ignore[return-value]

    def dump(self, acc: list) -> list:
        out = [acc[0]]
        for slot, fn in enumerate(self.fns, start=1):
            dump = getattr(fn, "dump", None)
            out.append(dump(acc[slot]) if dump else acc[slot])
        return out

    def load(self, raw: list) -> list:
        out = [raw[0]]
        for slot, fn in enumerate(self.fns, start=1):
            load = getattr(fn, "load", None)
            out.append(load(raw[slot]) if load else raw[slot])
        return out
