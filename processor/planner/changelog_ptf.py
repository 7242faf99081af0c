"""TO_CHANGELOG and FROM_CHANGELOG, Flink 2.3's built-in process table functions, in FROM.

    TO_CHANGELOG(input => TABLE t [, op => DESCRIPTOR(op)] [, op_mapping => MAP['INSERT', 'I', ...]])
    FROM_CHANGELOG(input => TABLE t [, op => DESCRIPTOR(op)] [, op_mapping => MAP['c, r', 'INSERT', ...]])

TO_CHANGELOG turns any changelog into an append-only table: one insert per change, the
change's name (or its mapped code) in a leading STRING column; with ``op_mapping`` only the
mapped changes are kept. FROM_CHANGELOG reads an append-only table whose op column names the
change, drops that column and emits the change itself. Flink 2.3 takes neither with
PARTITION BY (the parser rejects it in Flink's words), requires UPDATE_BEFORE in a
FROM_CHANGELOG mapping (retract mode only) and gives an unknown op code as a runtime error.
Both are stateless; errors use Flink's validation messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import DataType, string
from deltaflow.processor import plan as P
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import ScopeColumn
from deltaflow.processor.sql.errors import position

KIND_NAMES = ("INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE")  # by RowKind value
_VALID = "[INSERT, DELETE, UPDATE_BEFORE, UPDATE_AFTER]"  # Flink lists them in hash order
_PARAMS = ("INPUT", "OP", "OP_MAPPING", "ON_TIME", "UID")


@dataclass(eq=False)
class ChangelogFunction(L.LNode):
    """A TO_CHANGELOG or FROM_CHANGELOG call over its one input.

    ``mapping`` is the op_mapping as written (pairs of literals, for EXPLAIN), empty for the
    default; ``codes`` gives TO_CHANGELOG's code per RowKind (None: dropped); ``kinds`` gives
    FROM_CHANGELOG's RowKind per op code and ``op_index`` the op column of its input.
    """

    function: str = "TO_CHANGELOG"
    op_column: str | None = None  # the DESCRIPTOR as written, None for the default
    mapping: tuple[tuple[str, str], ...] = ()
    codes: tuple[str | None, ...] = KIND_NAMES
    kinds: dict[str, int] = field(default_factory=dict)
    op_index: int = -1
    at: tuple[int, int] = (0, 0)

    def produces(self, inputs: list[L.Mode]) -> L.Mode:
        if self.function == "TO_CHANGELOG":
            return L.INSERT_ONLY
        if inputs[0] != L.INSERT_ONLY:
            from deltaflow.processor.planner.explain import describe  # explain imports this module
            from deltaflow.processor.planner.traits import producer_of_updates

            producer = describe(producer_of_updates(self.inputs[0]))
            raise SqlError(
                "StreamPhysicalProcessTableFunction doesn't support consuming update and delete "
                f"changes which is produced by node {producer}; {self.function} reads an "
                "append-only table", *self.at)  # fmt: skip
        return L.ALL  # Flink 2.3: retract mode, UPDATE_BEFORE required in the mapping

    def input_needs_update_before(self, needs: bool) -> list[bool]:
        return [True]  # TO_CHANGELOG declares REQUIRE UPDATE BEFORE; FROM's input has none

    def can_drop_update_before(self) -> bool:
        return self.function == "TO_CHANGELOG"  # FROM emits the -U rows its op column names

    def upsert_keys(self) -> tuple[P.Key, ...]:
        return ()


def changelog_relation(binder, call: exp.Anonymous, node: exp.Expr):  # noqa: ANN001, ANN201 - FromBinder -> Rel
    """The relation of a TO_CHANGELOG / FROM_CHANGELOG call in FROM."""
    from deltaflow.processor.planner.relation import Rel, fields_of

    name = str(call.this).upper()
    at = position(node)
    args = _arguments(name, call, at)
    if "INPUT" not in args:
        _fail(name, "Argument 'input' is missing", at)
    base = binder.relation(args["INPUT"])
    op = _descriptor(name, args.get("OP"), at)
    pairs = _mapping(name, args.get("OP_MAPPING"), at)
    fn = ChangelogFunction([base.node], [], function=name, op_column=op, mapping=pairs, at=at)
    op = op or "op"
    if name == "TO_CHANGELOG":
        fn.codes = _to_codes(pairs, at)
        columns = [ScopeColumn(None, op, string())] + [
            ScopeColumn(None, c.name, c.type.with_nullable(True)) for c in base.columns
        ]
        _unique(name, [c.name for c in columns], at)
    else:
        fn.op_index = _op_column(name, base.columns, op, at)
        fn.kinds = _from_kinds(name, pairs, at)
        columns = [
            ScopeColumn(None, c.name, c.type.with_nullable(True))
            for i, c in enumerate(base.columns)
            if i != fn.op_index
        ]
    fn.fields = fields_of(columns)
    return Rel(fn, columns)


def _arguments(name: str, call: exp.Anonymous, at: tuple[int, int]) -> dict[str, exp.Expr]:
    """Arguments by Flink's parameter names (named in any order, or positional)."""
    args: dict[str, exp.Expr] = {}
    for i, arg in enumerate(call.expressions):
        if isinstance(arg, exp.Kwarg):
            key, value = arg.this.name.upper(), arg.expression
        elif i < len(_PARAMS):
            key, value = _PARAMS[i], arg
        else:
            _fail(name, f"It takes at most {len(_PARAMS)} arguments", at)
        if key not in _PARAMS:
            _fail(name, f"Unknown argument '{key.lower()}'; the arguments are "
                  "input, op, op_mapping, on_time and uid", at)  # fmt: skip
        if key in ("ON_TIME", "UID"):
            raise SqlError(
                f"deltaflow does not support the '{key.lower()}' argument of {name}; leave it out",
                *at,
            )
        args[key] = value
    return args


def _descriptor(name: str, arg: exp.Expr | None, at: tuple[int, int]) -> str | None:
    if arg is None:
        return None
    cols = arg.expressions if isinstance(arg, exp.Anonymous) else []
    if str(getattr(arg, "this", "")).upper() != "DESCRIPTOR" or len(cols) != 1:
        _fail(name, "The descriptor for argument 'op' must contain exactly one column name.", at)
    return cols[0].name


def _mapping(name: str, arg: exp.Expr | None, at: tuple[int, int]) -> tuple[tuple[str, str], ...]:
    if arg is None:
        return ()
    is_map = isinstance(arg, exp.Bracket) and arg.this.name.upper() == "MAP"
    items = arg.expressions if is_map else []
    literal = all(isinstance(x, exp.Literal) and x.is_string for x in items)
    if not items or len(items) % 2 or not literal:
        _fail(
            name, "The 'op_mapping' must be a MAP of string literals: MAP['INSERT', 'I', ...]", at
        )
    texts = [x.this for x in items]
    return tuple(zip(texts[::2], texts[1::2], strict=True))


def _to_codes(pairs: tuple[tuple[str, str], ...], at: tuple[int, int]) -> tuple[str | None, ...]:
    """TO_CHANGELOG: keys name change operations (comma-separated), values are the codes."""
    if not pairs:
        return KIND_NAMES
    codes: list[str | None] = [None] * 4
    for key, code in pairs:
        for kind in _kind_names("TO_CHANGELOG", key, at):
            codes[KIND_NAMES.index(kind)] = code
    return tuple(codes)


def _from_kinds(
    name: str, pairs: tuple[tuple[str, str], ...], at: tuple[int, int]
) -> dict[str, int]:
    """FROM_CHANGELOG: keys are op codes (comma-separated), values name change operations."""
    if not pairs:
        return {kind: i for i, kind in enumerate(KIND_NAMES)}
    kinds: dict[str, int] = {}
    seen: set[str] = set()
    for codes, kind in pairs:
        (target,) = _kind_names(name, kind, at)
        if target in seen:
            _fail(name, "Invalid target mapping for argument 'op_mapping'. Duplicate change "
                  f"operation: '{target}'. Use comma-separated keys to map multiple codes to the "
                  "same operation (e.g., MAP['c, r', 'INSERT']).", at)  # fmt: skip
        seen.add(target)
        for code in codes.split(","):
            kinds[code.strip()] = KIND_NAMES.index(target)
    if KIND_NAMES.index("UPDATE_BEFORE") not in kinds.values():
        _fail(name, "The 'op_mapping' must include UPDATE_BEFORE for retract mode. Upsert mode "
              "(without UPDATE_BEFORE) is not supported in this version.", at)  # fmt: skip
    return kinds


def _kind_names(name: str, text: str, at: tuple[int, int]) -> list[str]:
    out = [part.strip() for part in text.split(",")]
    for kind in out:
        if kind not in KIND_NAMES:
            _fail(name, f"Invalid target mapping for argument 'op_mapping'. Unknown change "
                  f"operation: '{kind}'. Valid values are: {_VALID}.", at)  # fmt: skip
    return out


def _op_column(name: str, columns: list[ScopeColumn], op: str, at: tuple[int, int]) -> int:
    hits = [i for i, c in enumerate(columns) if c.name == op]
    if not hits:
        _fail(name, f"The op column '{op}' does not exist in the input schema.", at)
    dtype: DataType = columns[hits[0]].type
    if dtype.root not in ("CHAR", "VARCHAR"):
        _fail(name, f"The op column '{op}' must be of STRING type, but was '{dtype.sql()}'.", at)
    return hits[0]


def _unique(name: str, names: list[str], at: tuple[int, int]) -> None:
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        _fail(name, f"Field names must be unique. Found duplicates: [{', '.join(dupes)}]", at)


def _fail(name: str, reason: str, at: tuple[int, int]) -> None:
    """Flink's validation error: its reason, after naming the call."""
    raise SqlError(f"Invalid function call to {name}: {reason}", *at)


def build_changelog_function(node: ChangelogFunction, base: dict[str, Any]) -> P.Node:
    """The physical node (for ``physical._BUILD``)."""
    if node.function == "TO_CHANGELOG":
        return P.ToChangelog(**base, codes=node.codes)
    return P.FromChangelog(**base, op_index=node.op_index, kinds=tuple(node.kinds.items()))


_CALCITE = {"INT": "INTEGER", "TIMESTAMP_LTZ": "TIMESTAMP_WITH_LOCAL_TIME_ZONE"}


def describe_changelog_function(node: ChangelogFunction) -> str:
    """Flink's line: ``ProcessTableFunction(invocation=[TO_CHANGELOG(TABLE(#0), ...)], ...)``."""
    op = f"DESCRIPTOR({_utf16(node.op_column)})" if node.op_column else "DEFAULT()"
    args = ["TABLE(#0)", op, _map_literal(node.mapping), "DEFAULT()", "DEFAULT()"]
    names = [f.name for f in node.fields]
    row_type = ", ".join(f"{_calcite_type(f.type)} {f.name}" for f in node.fields)
    return (
        f"ProcessTableFunction(invocation=[{node.function}({', '.join(args)})], uid=[null], "
        f"select=[{','.join(names)}], rowType=[RecordType({row_type})])"
    )


def _utf16(text: str) -> str:
    return f"_UTF-16LE'{text}'"


def _map_literal(pairs: tuple[tuple[str, str], ...]) -> str:
    """Calcite's MAP literal: keys (and values) of unequal lengths are cast to VARCHAR(longest)."""
    if not pairs:
        return "DEFAULT()"
    cast = []
    for side in zip(*pairs, strict=True):
        lengths = {len(text) for text in side}
        varchar = f':VARCHAR({max(lengths)}) CHARACTER SET "UTF-16LE"' if len(lengths) > 1 else ""
        cast.append(varchar)
    items = [_utf16(text) + cast[i % 2] for pair in pairs for i, text in enumerate(pair)]
    return f"MAP({', '.join(items)})"


def _calcite_type(dtype: DataType) -> str:
    if dtype.root in ("CHAR", "VARCHAR"):
        text = f"{dtype.root}({dtype.length})"
    else:
        text = dtype.sql().removesuffix(" NOT NULL").replace("STRING", "VARCHAR(2147483647)")
        root = text.split("(", 1)[0]
        text = _CALCITE.get(root, root) + text[len(root) :]
    return text if dtype.nullable else text + " NOT NULL"
