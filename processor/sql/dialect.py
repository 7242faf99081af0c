"""The Flink SQL dialect: sqlglot's default dialect with Flink's lexical rules and window TVFs.

Flink quotes identifiers with backticks and strings with single quotes, and its window
table functions take a table argument: ``TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL ...)``,
which sqlglot would read as a sub-select. ``/*+ OPTIONS(...) */`` table hints stay as
comments on the table (read by the binder).
"""

from __future__ import annotations

from sqlglot import exp, parser, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

WINDOW_TVFS = ("TUMBLE", "HOP", "CUMULATE", "SESSION")
UNIT_CALLS = ("TIMESTAMPDIFF", "TIMESTAMPADD")
PARTITIONED = "$PARTITIONED"  # ``TABLE t PARTITION BY k`` of SESSION: (table, *keys)
CHANGELOG_PTFS = ("TO_CHANGELOG", "FROM_CHANGELOG")  # Flink 2.3 built-in PTFs, same argument shape


def _parse_window_tvf(self: Flink.Parser, name: str) -> exp.Expr:
    args: list[exp.Expr] = []
    while True:
        arg = _window_tvf_arg(self, name)
        if arg is None:
            break
        args.append(arg)
        if not self._match(TokenType.COMMA):
            break
    return exp.Anonymous(this=name, expressions=args)


def _window_tvf_arg(self: Flink.Parser, name: str) -> exp.Expr | None:
    named = None
    if self._curr and self._next and self._next.token_type == TokenType.FARROW:
        named = self._curr.text.upper()
        self._advance(2)
    if self._match(TokenType.TABLE):
        value: exp.Expr | None = self._parse_table_parts()
        if self._match(TokenType.PARTITION_BY) or self._match_text_seq("PARTITION", "BY"):
            if name != "SESSION":
                self.raise_error(_partition_by_error(name))
            keys: list[exp.Expr | None]
            if self._match(TokenType.L_PAREN):  # TABLE t PARTITION BY (k1, k2)
                keys = self._parse_csv(self._parse_column)
                self._match_r_paren()
            else:  # TABLE t PARTITION BY k
                keys = [self._parse_column()]
            value = exp.Anonymous(this=PARTITIONED, expressions=[value, *keys])
    else:
        value = self._parse_lambda()
    if value is None or named is None:
        return value
    return exp.Kwarg(this=exp.var(named), expression=value)


def _partition_by_error(name: str) -> str:
    if name in CHANGELOG_PTFS:  # Flink 2.3's words: both take a table with row semantics
        return (
            "Only tables with set semantics may be partitioned. Invalid PARTITION BY clause "
            f"in the 0-th operand of table function '{name}'"
        )
    return f"PARTITION BY is only allowed in SESSION windows, not in {name}"


def _parse_unit_call(self: Flink.Parser, name: str) -> exp.Expr:
    """TIMESTAMPDIFF(unit, a, b) / TIMESTAMPADD(unit, n, t): the unit stays a plain word."""
    return exp.Anonymous(this=name, expressions=self._parse_csv(self._parse_lambda))


class Flink(Dialect):
    NORMALIZE_FUNCTIONS = "upper"

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS = ["`"]
        QUOTES = ["'"]
        STRING_ESCAPES = ["'"]
        HEX_STRINGS = [("x'", "'"), ("X'", "'")]
        COMMANDS = tokens.Tokenizer.COMMANDS - {TokenType.EXECUTE}
        # SESSION is a window function name in Flink, not sqlglot's SET SESSION keyword; ROW
        # is read as STRUCT: `CAST(x AS ROW<a INT>)` parses, ROW(a, b) is a Struct call
        KEYWORDS = {
            **tokens.Tokenizer.KEYWORDS,
            "EXPLAIN": TokenType.VAR,
            "SESSION": TokenType.VAR,
            "ROW": TokenType.STRUCT,
        }

    class Parser(parser.Parser):
        FUNCTION_PARSERS = {
            **parser.Parser.FUNCTION_PARSERS,
            **{
                name: (lambda self, n=name: _parse_window_tvf(self, n))
                for name in WINDOW_TVFS + CHANGELOG_PTFS
            },
            **{name: (lambda self, n=name: _parse_unit_call(self, n)) for name in UNIT_CALLS},
        }
