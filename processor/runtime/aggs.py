"""The aggregates of one operator, folded into a group's accumulator by generated code.

A group's accumulator is a list: slot 0 counts the rows the group holds (Flink's
record counter), then one slot per ``AggCall``. ``Aggregates`` writes, once per
operator, the Python source that folds one input row into that list, takes one back
out, and reads the result values; COUNT, SUM, SUM0 and AVG are written inline, every
other function (``agg_functions``) is called through its object. The same source
pieces (``fold_lines``, ``value_exprs``, ``init_expr``) let an operator generate one
loop over a whole batch (``group_agg``). Accumulators are kept as Python values
while a batch runs; ``dump``/``load`` turn them into state values and back. A
COUNT(*) without FILTER reads the row counter (slot 0, which it always equals); its
own slot keeps its place in the stored layout but is not folded.

Exactness of an inline SUM over DECIMAL: Flink types ``SUM(DECIMAL(p, s))`` as
``DECIMAL(38, s)`` (the same scale), and every DECIMAL(p, s) value deltaflow holds
has exactly ``s`` digits (``formats/types.py``). Adding or subtracting two Decimals
gives the exponent of the finer one, exactly, when the context has digits enough;
the sums add in an 80-digit context (``WIDE``), so a sum of values of scale ``s``
(starting from ``Decimal(0)``) has scale ``s`` and is already the result value: no
``quantize`` is needed. A sum whose result scale differs from its argument's takes
the general path (``Sum.value``: quantize HALF_UP), as before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from decimal import Decimal

from deltaflow.formats.changelog import ADDS
from deltaflow.formats.generated import define
from deltaflow.formats.types import APPROX_ROOTS, DECIMAL, INT_BITS, INTEGER_ROOTS, DataType
from deltaflow.processor.plan import AggCall
from deltaflow.processor.runtime.agg_functions import (
    UNKNOWN,
    WIDE,
    Avg,
    Count,
    Distinct,
    MinMax,
    Sum,
    cast_number,
    make_function,
    wrap_integer,
)
from deltaflow.state.values import decode_value, encode_value

__all__ = ["Aggregates", "LiveAccs", "cast_number", "make_function", "wrap_integer"]


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


def _row_count(call: AggCall, fn: object) -> bool:
    """COUNT(*) without FILTER: the same number as the accumulator's row counter."""
    return type(fn) is Count and not call.args and call.filter_arg is None


def _distinct_count(fn: object) -> bool:
    """COUNT(DISTINCT x): folded inline on its ``[value -> copies, count]`` slot."""
    return type(fn) is Distinct and type(fn.inner) is Count


def _distinct_count_lines(retract: bool, at: str, slot: str) -> list[str]:
    """``Distinct.add``/``retract`` of a COUNT, written out: the count moves when a value's
    copies go 0 -> 1 or 1 -> 0 (``v`` is not NULL here)."""
    if not retract:
        return [
            f"{at}d = {slot}",
            f"{at}s = d[0]",
            f"{at}if (n := s.get(v, 0)):",
            f"{at}    s[v] = n + 1",
            f"{at}else:",
            f"{at}    s[v] = 1",
            f"{at}    d[1] += 1",
        ]
    return [
        f"{at}d = {slot}",
        f"{at}s = d[0]",
        f"{at}if (n := s.get(v, 0)) == 1:",
        f"{at}    del s[v]",
        f"{at}    d[1] -= 1",
        f"{at}elif n:",
        f"{at}    s[v] = n - 1",
    ]


def exact_decimal_sum(fn: object, call: AggCall, arg_type: DataType | None) -> bool:
    """A SUM/SUM0 whose result is its running total as is (see the module docstring)."""
    return (
        type(fn) is Sum
        and call.type.root == DECIMAL
        and arg_type is not None
        and arg_type.root == DECIMAL
        and arg_type.scale == call.type.scale
    )


def _decimal_avg(fn: object) -> bool:
    """An AVG with a DECIMAL result: its value is written inline (``Avg.value``'s steps)."""
    return type(fn) is Avg and fn.dtype.root == DECIMAL


def _integer_sum(fn: object, call: AggCall, arg_type: DataType | None) -> bool:
    return (
        type(fn) is Sum
        and call.type.root in INT_BITS
        and arg_type is not None
        and arg_type.root in INTEGER_ROOTS
    )


class Aggregates:
    """All aggregates of one operator, folded per row into a group's accumulator list."""

    def __init__(self, calls: tuple[AggCall, ...], input_types: list[DataType]) -> None:
        self.calls = calls
        self.fns = []
        self.arg_types = [input_types[c.args[0]] if c.args else None for c in calls]
        for call, arg_type in zip(calls, self.arg_types, strict=True):
            fn = make_function(call, arg_type)
            if call.distinct and call.args:
                fn = Distinct(fn)
            self.fns.append(fn)
        # the objects generated code refers to, by name
        self.scope: dict[str, object] = {
            "fns": self.fns,
            "getters": [_arg_getter(c.args) for c in calls],
            "vals": [fn.value for fn in self.fns],
            "_dadd": WIDE.add,
            "_dsub": WIDE.subtract,
            "_wrap": wrap_integer,
            "Decimal": Decimal,
            "_UNKNOWN": UNKNOWN,
        }
        for slot, fn in enumerate(self.fns, start=1):
            if isinstance(fn, Sum):
                self.scope[f"_start{slot}"] = fn.start
                self.scope[f"_empty{slot}"] = fn.empty
                self.scope[f"_type{slot}"] = fn.dtype
            if _decimal_avg(fn):
                self.scope[f"_div{slot}"] = fn.divide
                self.scope[f"_quantum{slot}"] = fn.quantum
                self.scope[f"_qctx{slot}"] = fn.quantize_context
        # accumulators that are state values as they are (no dump/load of a slot)
        self.plain = not any(hasattr(fn, "dump") for fn in self.fns)
        self.init = self.build(["def init():", f"    return {self.init_expr()}"], "init")
        values = f"    return {self.values_expr('acc')}"
        self.values = self.build(["def values(acc):", values], "values")
        self.accumulate = self.build(
            ["def fold(acc, row):", *self.fold_lines(False, "    ", "acc", "row")],
            "fold",
            part="accumulate",
        )
        self.retract = self.build(
            ["def fold(acc, row):", *self.fold_lines(True, "    ", "acc", "row")],
            "fold",
            part="retract",
        )

    @functools.cached_property
    def fold_pairs(self) -> Callable[[list, list], None]:
        """Folds a list of ``(kind, row)`` into ``acc`` in order, the per-row statements
        inlined in one loop (a window's or session's rows at once)."""
        lines = ["def fold_pairs(acc, pairs):", "    for kind, row in pairs:",
                 "        if ADDS[kind]:", *self.fold_lines(False, " " * 12, "acc", "row"),
                 "        else:", *self.fold_lines(True, " " * 12, "acc", "row")]  # fmt: skip
        return self.build(lines, "fold_pairs", {"ADDS": ADDS})  # type: ignore[no-any-return]

    @functools.cached_property
    def merge(self) -> Callable[[list, list], None] | None:
        """``merge(acc, other)`` adds accumulator ``other`` into ``acc`` (as if ``acc`` had
        folded ``other``'s rows too), or None when an aggregate cannot: only COUNT, SUM,
        SUM0 and AVG without DISTINCT add up (a slice of a HOP window into the window,
        ``window_slices``). Callers check ``window.any_order`` first: a float sum's
        result would depend on the grouping."""
        lines = ["def merge(acc, other):", "    acc[0] += other[0]"]
        for slot, (call, fn) in enumerate(zip(self.calls, self.fns, strict=True), start=1):
            if call.distinct or type(fn) not in (Count, Sum, Avg):
                return None
            if _row_count(call, fn):
                continue  # slot 0 is its value
            if type(fn) is Count:
                lines.append(f"    acc[{slot}] += other[{slot}]")
                continue
            lines.append(f"    a, b = acc[{slot}], other[{slot}]")
            if fn.dtype.root == DECIMAL:
                lines.append("    a[0] = _dadd(a[0], b[0])")
            else:
                lines.append("    a[0] += b[0]")
            lines.append("    a[1] += b[1]")
        return self.build(lines, "merge")  # type: ignore[no-any-return]

    def build(
        self, lines: list[str], name: str, extra: dict[str, object] | None = None, part: str = ""
    ) -> Callable:  # type: ignore[type-arg]
        """Compiles generated source in this operator's scope (plus ``extra`` names);
        returns the function ``name`` (``part``: its name in tracebacks, when not ``name``)."""
        scope = {**self.scope, **(extra or {})}
        return define("\n".join(lines) + "\n", name, scope, part)  # type: ignore[no-any-return]

    def init_expr(self, extra: list[str] | None = None) -> str:
        """A new accumulator (fresh lists on every evaluation), ``extra`` slots appended."""
        extra = extra or []
        parts = ["0"]
        for slot, fn in enumerate(self.fns, start=1):
            if type(fn) is Count:
                parts.append("0")
            elif type(fn) in (Sum, Avg):
                parts.append(f"[_start{slot}, 0]")
            else:
                parts.append(f"fns[{slot - 1}].init()")
        return "[" + ", ".join(parts + extra) + "]"

    @property
    def counts_rows(self) -> bool:
        """An unfiltered COUNT(*) is among the results: every folded row changes them."""
        return any(_row_count(call, fn) for call, fn in zip(self.calls, self.fns, strict=True))

    def fold_lines(
        self, retract: bool, pad: str, acc: str, row: str, wide_context: bool = False
    ) -> list[str]:
        """Statements folding ``row`` into (or out of) ``acc``; they use the local ``v``.

        DECIMAL sums call ``WIDE.add``/``WIDE.subtract``, unless ``wide_context`` says the
        code runs with ``WIDE`` as the thread's decimal context (then ``+=`` is exact).
        """
        sign = "-" if retract else "+"
        method = "retract" if retract else "add"
        lines = [f"{pad}{acc}[0] {sign}= 1"]
        for slot, call, fn in zip(range(1, len(self.fns) + 1), self.calls, self.fns, strict=True):
            at = pad
            if call.filter_arg is not None:
                lines.append(f"{pad}if {row}[{call.filter_arg}] is True:")
                at = pad + "    "
            if _row_count(call, fn):
                continue  # its result is the row counter, slot 0
            if type(fn) is Count and not call.args:
                lines.append(f"{at}{acc}[{slot}] {sign}= 1")
                continue
            if not call.args:
                lines.append(f"{at}{acc}[{slot}] = fns[{slot - 1}].{method}({acc}[{slot}], None)")
                continue
            single = len(call.args) == 1
            get = f"{row}[{call.args[0]}]" if single else f"getters[{slot - 1}]({row})"
            lines.append(f"{at}if (v := {get}) is not None:")
            if type(fn) is Count:
                lines.append(f"{at}    {acc}[{slot}] {sign}= 1")
            elif _distinct_count(fn):
                lines += _distinct_count_lines(retract, f"{at}    ", f"{acc}[{slot}]")
            elif type(fn) in (Sum, Avg):
                lines.append(f"{at}    a = {acc}[{slot}]")
                if fn.dtype.root == DECIMAL and not wide_context:
                    op = "_dsub" if retract else "_dadd"
                    lines.append(f"{at}    a[0] = {op}(a[0], v)")
                else:
                    lines.append(f"{at}    a[0] {sign}= v")
                lines.append(f"{at}    a[1] {sign}= 1")
            else:
                lines.append(f"{at}    {acc}[{slot}] = fns[{slot - 1}].{method}({acc}[{slot}], v)")
        return lines

    def value_exprs(self, acc: str) -> list[str]:
        """One expression per aggregate reading its result from ``acc`` (may bind ``_t``)."""
        parts = []
        for slot, (call, fn) in enumerate(zip(self.calls, self.fns, strict=True), start=1):
            arg_type = self.arg_types[slot - 1]
            a = f"{acc}[{slot}]"
            if _row_count(call, fn):
                parts.append(f"{acc}[0]")
            elif type(fn) is Count:
                parts.append(a)
            elif _distinct_count(fn):
                parts.append(f"{a}[1]")
            elif exact_decimal_sum(fn, call, arg_type):
                parts.append(f"({a}[0] if {a}[1] else _empty{slot})")
            elif type(fn) is MinMax and fn.cached:  # MinMax.value: the kept result, else a scan
                best = f"(_t.best if _t.best is not _UNKNOWN else vals[{slot - 1}](_t))"
                parts.append(f"(None if not (_t := {a}) else {best})")
            elif type(fn) is Avg and fn.dtype.root in APPROX_ROOTS:  # Avg.value of FLOAT/DOUBLE
                parts.append(f"(float(_t[0]) / _t[1] if (_t := {a})[1] else None)")
            elif _decimal_avg(fn):  # Avg.value written out: Decimal(total) / count, quantized
                avg = f"_div{slot}(Decimal(_t[0]), _t[1]).quantize(_quantum{slot}, context=_qctx{slot})"
                parts.append(f"({avg} if (_t := {a})[1] else None)")
            elif _integer_sum(fn, call, arg_type):
                half = 1 << (INT_BITS[call.type.root] - 1)
                fits = f"{-half} <= (_t := {a}[0]) < {half}"
                wrapped = f"(_t if {fits} else _wrap(_t, _type{slot}))"
                parts.append(f"({wrapped} if {a}[1] else _empty{slot})")
            else:
                parts.append(f"vals[{slot - 1}]({a})")
        return parts

    def values_expr(self, acc: str) -> str:
        """The result values of ``acc`` as one tuple expression."""
        parts = self.value_exprs(acc)
        return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"

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


class LiveAccs:
    """The codec of a state table that buffers live accumulators (an operator puts the
    accumulator objects and changes them until the commit): each is dumped as a state
    value at the commit (the bytes ``Aggregates.dump`` gives) and loaded when read from
    LMDB, so a read returns an accumulator either way."""

    def __init__(self, aggs: Aggregates) -> None:
        self.dump, self.load = aggs.dump, aggs.load

    def encode(self, acc: list) -> bytes:
        return encode_value(self.dump(acc))

    def encode_many(self, accs: list[list]) -> list[bytes]:
        return list(map(encode_value, map(self.dump, accs)))

    def decode(self, data: bytes) -> list:
        return self.load(decode_value(data))  # type: ignore[arg-type]  # a dumped accumulator list
