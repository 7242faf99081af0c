"""String helpers called by compiled expressions (Flink's string functions)."""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import re

from deltaflow.processor.exprs.errors import EvalError


def like_regex(pattern: str, escape: str | None = None) -> re.Pattern[str]:
    """SQL LIKE pattern (``%`` any run, ``_`` one character) as a compiled regex."""
    if escape is not None and len(escape) != 1:
        raise EvalError(f"LIKE escape {escape!r} must be exactly one character")
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape:
            if i + 1 >= len(pattern) or pattern[i + 1] not in ("%", "_", escape):
                raise EvalError(f"invalid escape sequence in LIKE pattern {pattern!r}")
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


@functools.lru_cache(maxsize=256)
def _cached_like(pattern: str, escape: str | None) -> re.Pattern[str]:
    return like_regex(pattern, escape)


def like(value: str, pattern: str, escape: str | None = None) -> bool:
    return _cached_like(pattern, escape).fullmatch(value) is not None


@functools.lru_cache(maxsize=256)
def java_regex(pattern: str) -> re.Pattern[str] | None:
    """A Java regular expression compiled with Python's ``re``; None when invalid."""
    try:
        return re.compile(pattern)
    except re.error:
        return None


def regexp_replace(value: str, pattern: str, repl: str) -> str | None:
    """Flink quotes the replacement (``Matcher.quoteReplacement``): ``$1`` is literal text."""
    rx = java_regex(pattern)
    if rx is None:
        return None
    return rx.sub(lambda _m: repl, value)


def regexp_extract(value: str, pattern: str, index: int = 0) -> str | None:
    rx = java_regex(pattern)
    if rx is None or index < 0 or index > rx.groups:
        return None
    m = rx.search(value)
    return None if m is None else m.group(index)


def regexp(value: str, pattern: str) -> bool:
    """REGEXP: a match anywhere; an empty or invalid pattern gives FALSE, as Flink's regExp."""
    rx = java_regex(pattern) if pattern else None
    return rx is not None and rx.search(value) is not None


def substring(value: str, start: int, length: int | None = None) -> str | None:
    """SQL SUBSTRING: 1-based; 0 counts as 1; a negative start counts from the end (a start
    before the beginning gives ''); a negative length gives NULL, as Flink's substringSQL."""
    if length is not None and length < 0:
        return None
    n = len(value)
    if start > 0:
        begin = start - 1
    elif start < 0:
        begin = n + start
        if begin < 0:
            return ""
    else:
        begin = 0
    return value[begin:] if length is None else value[begin : begin + length]


def trim_chars(value: str, chars: str, leading: bool, trailing: bool) -> str:
    if leading:
        value = value.lstrip(chars)
    if trailing:
        value = value.rstrip(chars)
    return value


def locate(needle: str, haystack: str, start: int = 1) -> int:
    """1-based position of ``needle`` from ``start`` (Flink searches from 1 when ``start`` < 1)."""
    return haystack.find(needle, max(start, 1) - 1) + 1


def pad(value: str, length: int, filler: str, left: bool) -> str | None:
    if length < 0 or not filler:
        return None
    if length <= len(value):
        return value[:length]
    need = length - len(value)
    fill = (filler * (need // len(filler) + 1))[:need]
    return fill + value if left else value + fill


_WHITESPACE = re.compile(r"\s")


def split_index(value: str, delimiter: str, index: int) -> str | None:
    """The ``index``-th (0-based) field; an empty delimiter splits at whitespace, as Flink."""
    if index < 0 or not value:
        return None
    parts = value.split(delimiter) if delimiter else _WHITESPACE.split(value)
    return parts[index] if index < len(parts) else None


def repeat(value: str, times: int) -> str:
    return value * times if times > 0 else ""


def initcap(value: str) -> str:
    """Calcite's INITCAP, which Flink runs: a word is a run of ASCII letters and digits; its
    first letter is upper-cased, the others lower-cased. Every other character, non-ASCII
    letters too, is kept as it is and ends a word (``Ünïcode`` -> ``ÜNïCode``)."""
    out = []
    start = True
    for ch in value:
        if ch.isascii() and ch.isalnum():
            out.append(ch.upper() if start else ch.lower())
            start = False
        else:
            out.append(ch)
            start = True
    return "".join(out)


def md5(value: str) -> str:
    return hashlib.md5(value.encode()).hexdigest()


def sha1(value: str) -> str:
    return hashlib.sha1(value.encode()).hexdigest()


def sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def from_base64(value: str) -> str | None:
    try:
        return base64.b64decode(value, validate=False).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return None


def to_base64(value: str) -> str:
    return base64.b64encode(value.encode()).decode("ascii")


def ascii_code(value: str) -> int:
    return ord(value[0]) if value else 0


def chr_code(code: int) -> str:
    """Flink's CHR: the character of the code's low 8 bits; '' for a negative code."""
    if code < 0:
        return ""
    return chr(code & 0xFF)


def left(value: str, n: int) -> str:
    return value[:n] if n > 0 else ""


def right(value: str, n: int) -> str:
    return value[-n:] if n > 0 else ""


def concat_ws(sep: str, *parts: str | None) -> str:
    return sep.join(p for p in parts if p is not None)


_MODE = re.compile(r"^\s*(lax|strict)\s+", re.IGNORECASE)
_PATH_STEP = re.compile(r"\.(\w+)|\[(\d+)\]|\['([^']*)'\]")


def json_value(text: str, path: str) -> str | None:
    """JSON_VALUE for ``$.a.b[0]`` paths: the scalar as a string, NULL when absent or not scalar."""
    path = _MODE.sub("", path, count=1)  # 'lax $.a' and 'strict $.a' (errors give NULL)
    if not path.startswith("$"):
        return None
    try:
        node: object = json.loads(text)
    except ValueError:
        return None
    pos = 1
    while pos < len(path):
        m = _PATH_STEP.match(path, pos)
        if m is None:
            return None
        key = m.group(1) or m.group(3)
        if key is not None:
            node = node.get(key) if isinstance(node, dict) else None
        else:
            i = int(m.group(2))
            node = node[i] if isinstance(node, list) and i < len(node) else None
        pos = m.end()
    if node is None or isinstance(node, (dict, list)):
        return None
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)
