"""sqlglot function nodes to Flink's built-in calls: the name and operand order Flink uses.

sqlglot reads some Flink functions into its own generic nodes (``POSITION``, ``LOCATE`` and
``INSTR`` into ``StrPosition``; ``LTRIM``/``RTRIM`` into ``Trim``; ``TRUNCATE`` into ``Trunc``;
``LOG10`` into ``Log(10, x)``), or adds operands of other dialects (``Initcap``'s delimiter
set). Each is mapped back here, so ``infer_call`` sees the call as Flink's documentation writes it.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from deltaflow.formats.types import timestamp_ltz
from deltaflow.processor.exprs.functions import infer_call, symbol
from deltaflow.processor.exprs.nodes import Call, Expr, UdfCall
from deltaflow.processor.planner.udfs import udf_signature

Bind = Callable[[exp.Expr], Expr]

_RENAMED = {
    "LENGTH": "CHAR_LENGTH",
    "CURRENTTIMESTAMP": "CURRENT_TIMESTAMP",
    "CURRENTDATE": "CURRENT_DATE",
    "TRUNC": "TRUNCATE",
    "SHA": "SHA1",
    "DAY_OF_WEEK": "DAYOFWEEK",
    "DAY_OF_MONTH": "DAYOFMONTH",
    "DAY_OF_YEAR": "DAYOFYEAR",
}
# Niladic functions Flink writes without parentheses, which sqlglot reads as column names.
BARE_FUNCTIONS = frozenset({"LOCALTIMESTAMP", "LOCALTIME", "CURRENT_TIMESTAMP", "CURRENT_DATE"})
_UNIT_CALLS = ("TIMESTAMPDIFF", "TIMESTAMPADD")


def function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).upper()
    if isinstance(node, exp.Pad):  # sqlglot parses LPAD and RPAD as one Pad node
        return "LPAD" if node.args.get("is_left") else "RPAD"
    name = node.sql_name().upper()
    return _RENAMED.get(name, name)


def bind_function(node: exp.Func, bind: Bind, udfs: dict[str, str]) -> Expr:
    """The typed call for ``node``; ``bind`` binds an operand, ``udfs`` maps UDF names to targets."""
    special = _SPECIAL.get(type(node))
    if special is not None:
        return special(node, bind)
    name = function_name(node)
    args = arguments(node)
    if name in _UNIT_CALLS and args and isinstance(args[0], exp.Column | exp.Var):
        return infer_call(name, [symbol(args[0].name), *(bind(a) for a in args[1:])])
    if name == "PROCTIME" and not args:
        return Call(timestamp_ltz(3, nullable=False), "PROCTIME", ())
    operands = [bind(a) for a in args]
    target = udfs.get(name)
    if target is not None:
        dtype, deterministic = udf_signature(name, target)
        return UdfCall(dtype, name, target, tuple(operands), deterministic)
    return infer_call(name, operands)


def arguments(node: exp.Func) -> list[exp.Expr]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    out: list[exp.Expr] = []
    for key in node.arg_types:
        value = node.args.get(key)
        if isinstance(value, list):
            out += [v for v in value if isinstance(v, exp.Expr)]
        elif isinstance(value, exp.Expr):
            out.append(value)
    return out


def _extract(node: exp.Extract, bind: Bind) -> Expr:
    return infer_call("EXTRACT", [symbol(node.this.name), bind(node.expression)])


def _floor_ceil(node: exp.Floor | exp.Ceil, bind: Bind) -> Expr:
    name = function_name(node)
    unit = node.args.get("to")
    if isinstance(unit, exp.Var):  # FLOOR(ts TO HOUR): the unit is a symbol operand
        return infer_call(name, [bind(node.this), symbol(unit.name)])
    return infer_call(name, [bind(a) for a in arguments(node)])


def _trim(node: exp.Trim, bind: Bind) -> Expr:
    """``TRIM([BOTH|LEADING|TRAILING] [chars] FROM s)``, ``LTRIM(s[, chars])``, ``RTRIM``."""
    mode = str(node.args.get("position") or "BOTH").upper()
    chars = node.args.get("expression")
    if chars is None:
        name = {"BOTH": "TRIM", "LEADING": "LTRIM", "TRAILING": "RTRIM"}[mode]
        return infer_call(name, [bind(node.this)])
    return infer_call("TRIM", [symbol(mode), bind(chars), bind(node.this)])


def _position(node: exp.StrPosition, bind: Bind) -> Expr:
    """``POSITION(needle IN s)``, ``INSTR(s, needle)`` and ``LOCATE(needle, s[, from])``."""
    start = node.args.get("position")
    operands = [bind(node.args["substr"]), bind(node.this)]
    if start is None:
        return infer_call("POSITION", operands)
    return infer_call("LOCATE", [*operands, bind(start)])


def _initcap(node: exp.Initcap, bind: Bind) -> Expr:
    return infer_call("INITCAP", [bind(node.this)])  # sqlglot adds a delimiter set


def _log(node: exp.Log, bind: Bind) -> Expr:
    """``LOG(x)``, ``LOG(base, x)``; sqlglot reads ``LOG10(x)`` / ``LOG2(x)`` as ``Log(10|2, x)``,
    told apart by the length of the name the call was written with."""
    value = node.args.get("expression")
    if value is None:
        return infer_call("LOG", [bind(node.this)])
    spelled = node.meta.get("end", 0) - node.meta.get("start", 0) + 1
    if spelled > len("LOG") and isinstance(node.this, exp.Literal):
        return infer_call(f"LOG{node.this.name}", [bind(value)])
    return infer_call("LOG", [bind(node.this), bind(value)])


_SPECIAL: dict[type, Callable[..., Expr]] = {
    exp.Extract: _extract,
    exp.Floor: _floor_ceil,
    exp.Ceil: _floor_ceil,
    exp.Trim: _trim,
    exp.StrPosition: _position,
    exp.Initcap: _initcap,
    exp.Log: _log,
}
