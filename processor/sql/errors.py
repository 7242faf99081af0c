"""SQL errors with positions: wrapping sqlglot's errors, and naming the closest candidates."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from sqlglot.errors import ParseError, TokenError

from deltaflow.formats.errors import SqlError

_HINTS = {
    "Expecting )": "close the parenthesis or remove the extra comma before this point",
    "Expecting (": "add the opening parenthesis",
    "Required keyword": "complete the clause",
    "Invalid expression / Unexpected token": "remove or quote this word (reserved words need `backticks`)",
}


def wrap_parse_error(
    err: ParseError | TokenError, fallback_line: int = 0, fallback_col: int = 0
) -> SqlError:
    """One sentence with line, column and what to write instead, for a sqlglot error."""
    if isinstance(err, ParseError) and err.errors:
        info = err.errors[0]
        description = str(info.get("description") or "cannot parse this SQL")
        highlight = str(info.get("highlight") or "")
        hint = next((h for key, h in _HINTS.items() if description.startswith(key)), "")
        near = f" near {highlight!r}" if highlight else ""
        message = f"{description}{near}" + (f"; {hint}" if hint else "")
        col = int(info.get("col") or fallback_col)
        col = max(col - len(highlight) + 1, 1) if highlight and col else col
        return SqlError(message, int(info.get("line") or fallback_line), col, highlight)
    return SqlError(
        f"cannot read this SQL ({err}); check quotes and comments", fallback_line, fallback_col
    )


_CLOSERS = {
    "'": ("'", "string", "; a quote inside a string is written twice, as in 'it''s'"),
    "`": ("`", "quoted name", ""),
    "/*": ("*/", "comment", ""),
}


def unclosed(text: str) -> SqlError | None:
    """The string, quoted name or comment that ``text`` opens and never closes, with the
    line and column of its opening quote (sqlglot reports where it gave up instead)."""
    i, n = 0, len(text)
    while i < n:
        opener = "/*" if text.startswith("/*", i) else text[i]
        if text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if opener not in _CLOSERS:
            i += 1
            continue
        closer, what, advice = _CLOSERS[opener]
        end = _close(text, i + len(opener), closer)
        if end < 0:
            line = text.count("\n", 0, i) + 1
            col = i - (text.rfind("\n", 0, i) + 1) + 1
            return SqlError(
                f"this {what} is never closed: it opens with {opener} here and the file ends "
                f"before a closing {closer}; close it{advice}",
                line, col, opener,
            )  # fmt: skip
        i = end
    return None


def _close(text: str, start: int, closer: str) -> int:
    """The index after the closer of a quoted run starting at ``start`` (a doubled quote
    is an escaped one), or -1."""
    i = start
    while True:
        end = text.find(closer, i)
        if end < 0:
            return -1
        if closer != "*/" and text.startswith(closer, end + 1):
            i = end + 2
            continue
        return end + len(closer)


def closest(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean a, b?)`` or the list of names available when nothing is close."""
    pool = sorted(set(candidates))
    near = difflib.get_close_matches(name, pool, n=3, cutoff=0.5)
    if not near:
        near = difflib.get_close_matches(name.lower(), [c.lower() for c in pool], n=3, cutoff=0.5)
    if near:
        return "; did you mean " + " or ".join(repr(n) for n in near) + "?"
    if pool:
        shown = ", ".join(repr(n) for n in pool[:12])
        return f"; available: {shown}"
    return ""


def position(node: object) -> tuple[int, int]:
    """(line, col) of a sqlglot node, from its first identifier token's metadata when present."""
    meta = getattr(node, "meta", None) or {}
    if "line" in meta:
        return int(meta["line"]), int(meta.get("col", 0))
    for child in getattr(node, "walk", lambda: iter(()))():
        cmeta = getattr(child, "meta", None) or {}
        if "line" in cmeta:
            return int(cmeta["line"]), int(cmeta.get("col", 0))
    return 0, 0


def start_position(node: object) -> tuple[int, int]:
    """(line, col) where a sqlglot expression starts: the first character of its leftmost
    identifier token (sqlglot's ``col`` is a token's last column), or (0, 0)."""
    best = None
    for child in getattr(node, "walk", lambda: iter(()))():
        meta = getattr(child, "meta", None) or {}
        if "line" in meta and "start" in meta and (best is None or meta["start"] < best["start"]):
            best = meta
    if best is None:
        return 0, 0
    width = int(best.get("end", best["start"])) - int(best["start"])
    return int(best["line"]), max(int(best.get("col", 0)) - width, 1)
