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
