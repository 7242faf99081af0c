"""CREATE TABLE in Flink's shape: physical, computed and metadata columns, WATERMARK,
PRIMARY KEY ... NOT ENFORCED and WITH options. Read from tokens; expressions and
types inside are parsed by sqlglot and ``parse_type`` on the original text span."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from deltaflow.formats.types import DataType, TypeParseError, parse_type
from deltaflow.processor.sql.statements import Span


@dataclass(frozen=True)
class Column:
    name: str
    type: DataType | None  # None for a computed column (the binder infers it)
    expr: exp.Expr | None = None  # computed column
    metadata_key: str | None = None  # METADATA [FROM 'key']; the column name when FROM is absent
    virtual: bool = False
    pos: tuple[int, int] = (0, 0)

    @property
    def is_metadata(self) -> bool:
        return self.metadata_key is not None


@dataclass(frozen=True)
class CreateTable:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    watermark: tuple[str, exp.Expr] | None
    options: dict[str, str]
    pos: tuple[int, int]
    like: str | None = None


def parse_create_table(span: Span, at: int) -> CreateTable:
    """``span.tokens[at]`` is the table name (after CREATE [TEMPORARY] TABLE [IF NOT EXISTS])."""
    toks = span.tokens
    name, i = _qualified_name(span, at)
    if i >= len(toks) or toks[i].token_type != TokenType.L_PAREN:
        raise span.error(f"expected '(' and the column list after CREATE TABLE {name}", i)
    close = _matching_paren(span, i)
    columns: list[Column] = []
    pk: tuple[str, ...] = ()
    watermark = None
    for lo, hi in _top_level_items(toks, i + 1, close):
        head = toks[lo].text.upper()
        if head == "WATERMARK":
            watermark = _watermark(span, lo, hi)
        elif head.startswith("PRIMARY") or head == "CONSTRAINT":
            pk = _primary_key(span, lo, hi)
        else:
            column, inline_pk = _column(span, lo, hi)
            columns.append(column)
            if inline_pk:
                pk = (column.name,)
    options = _with_options(span, close + 1)
    return CreateTable(name, tuple(columns), pk, watermark, options, span.pos)


def _qualified_name(span: Span, i: int) -> tuple[str, int]:
    toks = span.tokens
    if i >= len(toks):
        raise span.error("expected a table name", i)
    parts = [toks[i].text]
    i += 1
    while i + 1 < len(toks) and toks[i].token_type == TokenType.DOT:
        parts.append(toks[i + 1].text)
        i += 2
    return ".".join(parts), i


def _matching_paren(span: Span, i: int) -> int:
    depth = 0
    for j in range(i, len(span.tokens)):
        kind = span.tokens[j].token_type
        depth += kind == TokenType.L_PAREN
        depth -= kind == TokenType.R_PAREN
        if depth == 0:
            return j
    raise span.error("this parenthesis is never closed; add ')'", i)


_GENERIC_TYPES = frozenset({"ARRAY", "MAP", "MULTISET", "ROW"})


def _top_level_items(toks: tuple[Token, ...], lo: int, hi: int) -> list[tuple[int, int]]:
    items, depth, angle, start = [], 0, 0, lo
    for j in range(lo, hi):
        kind = toks[j].token_type
        depth += (kind == TokenType.L_PAREN) - (kind == TokenType.R_PAREN)
        if kind == TokenType.LT and toks[j - 1].text.upper() in _GENERIC_TYPES:
            angle += 1
        elif kind == TokenType.GT and angle:
            angle -= 1
        if kind == TokenType.COMMA and depth == 0 and angle == 0:
            items.append((start, j))
            start = j + 1
    if start < hi:
        items.append((start, hi))
    return [(a, b) for a, b in items if a < b]


def _text(span: Span, lo: int, hi: int) -> str:
    return span.source.text[span.tokens[lo].start : span.tokens[hi - 1].end + 1]


def _expr(span: Span, lo: int, hi: int) -> exp.Expr:
    return span.source.parse(span.tokens[lo].start, span.tokens[hi - 1].end + 1)


def _watermark(span: Span, lo: int, hi: int) -> tuple[str, exp.Expr]:
    words = [t.text.upper() for t in span.tokens[lo:hi]]
    if len(words) < 5 or words[1] != "FOR" or "AS" not in words[3:]:
        raise span.error("write the watermark as WATERMARK FOR <column> AS <expression>", lo)
    as_at = lo + 3 + words[3:].index("AS")
    return span.tokens[lo + 2].text, _expr(span, as_at + 1, hi)


def _primary_key(span: Span, lo: int, hi: int) -> tuple[str, ...]:
    toks = span.tokens
    while lo < hi and toks[lo].token_type != TokenType.L_PAREN:
        lo += 1
    close = _matching_paren(span, lo)
    names = tuple(t.text for t in toks[lo + 1 : close] if t.token_type != TokenType.COMMA)
    tail = [t.text.upper() for t in toks[close + 1 : hi]]
    if tail != ["NOT", "ENFORCED"]:
        raise span.error(
            "Flink only supports PRIMARY KEY (...) NOT ENFORCED; add NOT ENFORCED", close
        )
    return names


def _column(span: Span, lo: int, hi: int) -> tuple[Column, bool]:
    toks = span.tokens
    name = toks[lo].text
    pos = (toks[lo].line, toks[lo].col - len(name) + 1)
    if lo + 1 < hi and toks[lo + 1].text.upper() == "AS":
        return Column(name, None, expr=_expr(span, lo + 2, hi), pos=pos), False
    words = [t.text.upper().split()[0] for t in toks[lo:hi]]
    end = hi
    inline_pk = False
    if "PRIMARY" in words:
        end = lo + words.index("PRIMARY")
        inline_pk = True
    for stop in ("COMMENT", "METADATA"):
        if stop in words[: end - lo]:
            end = min(end, lo + words.index(stop))
    type_text = _text(span, lo + 1, end) if end > lo + 1 else ""
    try:
        dtype = parse_type(type_text)
    except (TypeParseError, ValueError) as err:  # parse_type lets int() errors through
        raise span.error(f"column {name!r}: {err}", lo + 1) from None
    key, virtual = _metadata(span, lo, hi, words)
    return Column(name, dtype, metadata_key=key, virtual=virtual, pos=pos), inline_pk


def _metadata(span: Span, lo: int, hi: int, words: list[str]) -> tuple[str | None, bool]:
    if "METADATA" not in words:
        return None, False
    at = words.index("METADATA")
    key = span.tokens[lo].text
    if at + 2 < len(words) and words[at + 1] == "FROM":
        key = span.tokens[lo + at + 2].text
    return key, "VIRTUAL" in words[at:]


def _skip_table_clauses(span: Span, i: int) -> int:
    """Past ``COMMENT '...'`` and ``PARTITIONED BY (...)`` (kept by Flink's catalog, unused here)."""
    toks = span.tokens
    while i < len(toks):
        word = toks[i].text.upper()
        if word == "COMMENT" and i + 1 < len(toks):
            i += 2
        elif word == "PARTITIONED" and i + 2 < len(toks):
            i = _matching_paren(span, i + 2) + 1
        elif word == "PARTITIONED BY" and i + 1 < len(toks):
            i = _matching_paren(span, i + 1) + 1
        else:
            return i
    return i


def _with_options(span: Span, i: int) -> dict[str, str]:
    toks = span.tokens
    i = _skip_table_clauses(span, i)
    if i >= len(toks):
        return {}
    if toks[i].text.upper() != "WITH" or i + 1 >= len(toks):
        raise span.error("expected WITH ('connector' = '...', ...) after the column list", i)
    close = _matching_paren(span, i + 1)
    options: dict[str, str] = {}
    for lo, hi in _top_level_items(toks, i + 2, close):
        kinds = [t.token_type for t in toks[lo:hi]]
        if kinds != [TokenType.STRING, TokenType.EQ, TokenType.STRING]:
            raise span.error("write each option as 'key' = 'value'", lo)
        options[toks[lo].text] = toks[hi - 1].text
    if close + 1 < len(toks):
        raise span.error(
            "unexpected text after the WITH options; end the statement with ';'", close + 1
        )
    return options
