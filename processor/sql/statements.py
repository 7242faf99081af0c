"""Flink SQL scripts split into typed statements, keeping every line/column position.

A script is tokenized once with the Flink dialect; statements end at top-level
semicolons. Statement sets (``EXECUTE STATEMENT SET BEGIN ... END`` and
``BEGIN STATEMENT SET; ... END;``) group their INSERTs. Each statement is parsed
from the original text padded so that sqlglot reports positions in the whole file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from deltaflow.formats.errors import SqlError
from deltaflow.processor.sql.dialect import Flink
from deltaflow.processor.sql.errors import unclosed, wrap_parse_error

_DIALECT = Flink()


@dataclass(frozen=True)
class Source:
    """The script text; ``parse`` reads a span of it with positions relative to the file."""

    text: str

    def padded(self, start: int, end: int) -> str:
        return re.sub(r"[^\n]", " ", self.text[:start]) + self.text[start:end]

    def parse(self, start: int, end: int, into: type[exp.Expr] | None = None) -> exp.Expr:
        try:
            parsed = sqlglot.parse_one(self.padded(start, end), read=_DIALECT, into=into)
        except (ParseError, TokenError) as err:
            raise wrap_parse_error(err) from None
        if parsed is None:
            line, col = line_col(self.text, start)
            raise SqlError("expected an expression here", line, col)
        return parsed


def line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


@dataclass(frozen=True)
class Span:
    """Tokens of one statement: ``tokens`` (no trailing semicolon) within ``source``."""

    source: Source
    tokens: tuple[Token, ...]

    @property
    def start(self) -> int:
        return self.tokens[0].start

    @property
    def end(self) -> int:
        return self.tokens[-1].end + 1

    @property
    def pos(self) -> tuple[int, int]:
        return self.tokens[0].line, self.tokens[0].col - len(self.tokens[0].text) + 1

    def words(self, n: int) -> list[str]:
        return [t.text.upper() for t in self.tokens[:n]]

    def tail(self, skip: int) -> Span:
        return Span(self.source, self.tokens[skip:])

    def error(self, message: str, index: int = 0) -> SqlError:
        tok = self.tokens[min(index, len(self.tokens) - 1)]
        return SqlError(message, tok.line, tok.col - len(tok.text) + 1, tok.text)


# --------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class SetStatement:
    key: str | None  # None: SET alone lists the settings
    value: str | None
    pos: tuple[int, int]


@dataclass(frozen=True)
class ResetStatement:
    key: str | None  # None resets every setting
    pos: tuple[int, int]


@dataclass(frozen=True)
class CreateFunction:
    name: str
    target: str
    language: str
    pos: tuple[int, int]


@dataclass(frozen=True)
class CreateView:
    name: str
    query: exp.Query
    columns: tuple[str, ...]
    pos: tuple[int, int]


@dataclass(frozen=True)
class Insert:
    table: str
    query: exp.Query
    columns: tuple[str, ...]
    on_conflict: str | None  # ERROR, NOTHING, DEDUPLICATE
    pos: tuple[int, int]
    hints: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StatementSet:
    inserts: tuple[Insert, ...]
    pos: tuple[int, int]


@dataclass(frozen=True)
class Explain:
    body: Insert | StatementSet | exp.Query
    details: tuple[str, ...]  # CHANGELOG_MODE, ESTIMATED_COST, ...
    pos: tuple[int, int]


@dataclass(frozen=True)
class Query:
    """A bare SELECT in a job file (Flink would print it; deltaflow plans it as a print sink)."""

    query: exp.Query
    pos: tuple[int, int]


# --------------------------------------------------------------------------- splitting


def tokenize(text: str) -> list[Token]:
    try:
        return _DIALECT.tokenize(text)
    except TokenError as err:
        raise unclosed(text) or wrap_parse_error(err, 1, 1) from None


def split(text: str) -> list[Span]:
    """Top-level statements, semicolons dropped, empty statements skipped."""
    source = Source(text)
    spans: list[Span] = []
    current: list[Token] = []
    depth = 0
    for tok in tokenize(text):
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
        if tok.token_type == TokenType.SEMICOLON and depth <= 0:
            if current:
                spans.append(Span(source, tuple(current)))
            current, depth = [], 0
            continue
        current.append(tok)
    if current:
        spans.append(Span(source, tuple(current)))
    return spans
