"""Classify the statements of a Flink SQL script: SET/RESET, CREATE TABLE/VIEW/FUNCTION,
INSERT (with ``ON CONFLICT DO ...``), statement sets, EXPLAIN and bare SELECT."""

from __future__ import annotations

from sqlglot import exp

from deltaflow.processor.sql.ddl import CreateTable, parse_create_table
from deltaflow.processor.sql.statements import (
    CreateFunction,
    CreateView,
    Explain,
    Insert,
    Query,
    ResetStatement,
    SetStatement,
    Span,
    StatementSet,
    split,
)

Statement = (
    SetStatement
    | ResetStatement
    | CreateTable
    | CreateView
    | CreateFunction
    | Insert
    | StatementSet
    | Explain
    | Query
)
_EXPLAIN_DETAILS = {"CHANGELOG_MODE", "ESTIMATED_COST", "JSON_EXECUTION_PLAN", "PLAN_ADVICE"}
_CONFLICT = {"ERROR", "NOTHING", "DEDUPLICATE"}


def parse_script(text: str) -> list[Statement]:
    """Every statement of ``text`` in order; raises SqlError with line and column."""
    spans = split(text)
    out: list[Statement] = []
    i = 0
    while i < len(spans):
        stmt, i = _statement(spans, i)
        out.append(stmt)
    return out


def _statement(spans: list[Span], i: int) -> tuple[Statement, int]:
    span = spans[i]
    head = span.words(4)
    if head[:1] == ["EXPLAIN"]:
        return _explain(spans, i)
    if _is_statement_set(head):
        return _statement_set(spans, i, span)
    return _single(span), i + 1


def _is_statement_set(words: list[str]) -> bool:
    return (
        words[:3] == ["BEGIN", "STATEMENT", "SET"]
        or words[:3] == ["EXECUTE", "STATEMENT", "SET"]
        or (words[:2] == ["STATEMENT", "SET"])
    )


def _statement_set(spans: list[Span], i: int, first: Span) -> tuple[StatementSet, int]:
    words = first.words(4)
    skip = 4 if words[0] == "EXECUTE" else 3
    body = [first.tail(skip)] if len(first.tokens) > skip else []
    j = i + 1
    while j < len(spans) and spans[j].words(1) != ["END"]:
        body.append(spans[j])
        j += 1
    if j == len(spans):
        raise first.error("this statement set has no END; close it with END;")
    inserts = []
    for span in body:
        stmt = _single(span)
        if not isinstance(stmt, Insert):
            raise span.error(
                "a statement set holds only INSERT INTO statements; move this statement before it"
            )
        inserts.append(stmt)
    return StatementSet(tuple(inserts), first.pos), j + 1


def _explain(spans: list[Span], i: int) -> tuple[Explain, int]:
    span = spans[i]
    k = 1
    details = []
    while k < len(span.tokens) and span.tokens[k].text.upper() in _EXPLAIN_DETAILS | {","}:
        if span.tokens[k].text != ",":
            details.append(span.tokens[k].text.upper())
        k += 1
    if span.words(k + 2)[k:] == ["PLAN", "FOR"]:
        k += 2
    rest = span.tail(k)
    if not rest.tokens:
        raise span.error(
            "EXPLAIN needs a statement: EXPLAIN [CHANGELOG_MODE] INSERT INTO ... or SELECT ..."
        )
    if _is_statement_set(rest.words(4)):
        patched = [*spans[:i], rest, *spans[i + 1 :]]
        body, j = _statement_set(patched, i, rest)
        return Explain(body, tuple(details), span.pos), j
    stmt = _single(rest)
    if not isinstance(stmt, Insert | Query):
        raise rest.error("EXPLAIN works on INSERT INTO, SELECT or a statement set")
    body_q = stmt.query if isinstance(stmt, Query) else stmt
    return Explain(body_q, tuple(details), span.pos), i + 1


def _single(span: Span) -> Statement:  # noqa: C901 - a dispatch table over statement heads
    words = span.words(6)
    if words[0] == "SET":
        return _set(span)
    if words[0] == "RESET":
        key = span.tokens[1].text if len(span.tokens) > 1 else None
        return ResetStatement(key, span.pos)
    if words[0] == "CREATE":
        return _create(span, words)
    if words[0] == "INSERT":
        return _insert(span)
    if words[:2] == ["EXECUTE", "INSERT"]:
        return _insert(span.tail(1))
    if words[0] in ("SELECT", "WITH", "(", "VALUES"):
        return Query(_query(span, span.start), span.pos)
    raise span.error(
        f"unsupported statement {words[0]!r}; a job file holds SET, RESET, CREATE TABLE/VIEW/FUNCTION, "
        "INSERT INTO, statement sets, EXPLAIN and SELECT"
    )


def _set(span: Span) -> SetStatement:
    toks = span.tokens
    if len(toks) == 1:
        return SetStatement(None, None, span.pos)
    if len(toks) != 4 or toks[2].text != "=":
        raise span.error("write settings as SET 'key' = 'value';", 1)
    return SetStatement(toks[1].text, toks[3].text, span.pos)


def _create(span: Span, words: list[str]) -> Statement:
    k = 1
    while k < len(words) and words[k] in ("TEMPORARY", "SYSTEM", "OR", "REPLACE"):
        k += 1
    kind = words[k] if k < len(words) else ""
    k += 1
    if span.words(k + 3)[k:] == ["IF", "NOT", "EXISTS"]:
        k += 3
    if kind == "TABLE":
        return parse_create_table(span, k)
    if kind == "VIEW":
        return _create_view(span, k)
    if kind == "FUNCTION":
        return _create_function(span, k)
    raise span.error("expected CREATE [TEMPORARY] TABLE, VIEW or FUNCTION", k - 1)


def _create_view(span: Span, k: int) -> CreateView:
    toks = span.tokens
    if k >= len(toks):
        raise span.error("write CREATE VIEW name AS SELECT ...", k)
    name = toks[k].text
    words = [t.text.upper() for t in toks]
    if "AS" not in words[k:]:
        raise span.error(f"write CREATE VIEW {name} AS SELECT ...", k)
    at = words.index("AS", k)
    if at + 1 >= len(toks):
        raise span.error(f"write CREATE VIEW {name} AS SELECT ...", at)
    columns = tuple(t.text for t in toks[k + 1 : at] if t.text not in "(),")
    return CreateView(name, _query(span, toks[at + 1].start), columns, span.pos)


def _create_function(span: Span, k: int) -> CreateFunction:
    toks = span.tokens
    words = [t.text.upper() for t in toks]
    if len(toks) < k + 3 or words[k + 1] != "AS":
        raise span.error("write CREATE FUNCTION name AS 'module.attr' LANGUAGE PYTHON", k)
    language = words[k + 4] if len(words) > k + 4 and words[k + 3] == "LANGUAGE" else "JAVA"
    if language != "PYTHON":
        raise span.error(
            "deltaflow runs Python functions only; add LANGUAGE PYTHON and name a Python 'module.attr'",
            k,
        )
    return CreateFunction(toks[k].text, toks[k + 2].text, language, span.pos)


def _insert(span: Span) -> Insert:
    words = [t.text.upper() for t in span.tokens]
    conflict = None
    end = span.tokens[-1].end + 1
    if len(words) > 4 and words[-4:-1] == ["ON", "CONFLICT", "DO"] and words[-1] in _CONFLICT:
        conflict = words[-1]
        end = span.tokens[-5].end + 1
    parsed = span.source.parse(span.start, end)
    if not isinstance(parsed, exp.Insert) or not isinstance(parsed.expression, exp.Query):
        raise span.error("write INSERT INTO <table> SELECT ...")
    target = parsed.this
    columns: tuple[str, ...] = ()
    if isinstance(target, exp.Schema):
        columns = tuple(c.name for c in target.expressions)
        target = target.this
    return Insert(target.name, parsed.expression, columns, conflict, span.pos)


def _query(span: Span, start: int) -> exp.Query:
    parsed = span.source.parse(start, span.end)
    if not isinstance(parsed, exp.Query):
        raise span.error("expected a query (SELECT ...)")
    return parsed
