"""Generated Python code that can be seen and traced: the one way deltaflow compiles it.

Every site that generates a function (a Calc's loop, an aggregate's fold, a decoder's
batch reader, ...) calls ``define(source, name, scope)``. The code is compiled under a
file name naming its owner and function, ``<deltaflow GroupAggregate#3 fold>``, and its
source is registered with ``linecache``, so a traceback or a profiler shows the
generated line itself. The owner is set by whoever builds the operator or format
(``with owner("GroupAggregate#3"):``), so the generating code needs no extra argument.

``collecting()`` records every definition made inside it, for ``deltaflow explain
--code``; ``generated_at(traceback)`` finds the innermost generated frame of an error.
This module sits in ``formats`` (the lowest layer) so that every layer can use it.
"""

from __future__ import annotations

import linecache
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import Any

PREFIX = "<deltaflow "


@dataclass(frozen=True)
class Generated:
    """One compiled definition: its owner (a plan node such as ``Calc#2``), the
    function's name, the file name its code runs under, and the source."""

    owner: str
    name: str
    filename: str
    source: str


_OWNER: ContextVar[str] = ContextVar("deltaflow_generated_owner", default="")
_COLLECTED: ContextVar[list[Generated] | None] = ContextVar("deltaflow_generated", default=None)
# file name -> its definition: one file name never shows two different sources
_DEFINED: dict[str, Generated] = {}


@contextmanager
def owner(label: str) -> Iterator[None]:
    """Code generated inside is named after ``label`` (e.g. ``GroupAggregate#3``)."""
    token = _OWNER.set(label)
    try:
        yield
    finally:
        _OWNER.reset(token)


def for_node(node: Any) -> AbstractContextManager[None]:
    """``owner`` of a plan node: its class name and id, ``GroupAggregate#3``."""
    return owner(f"{type(node).__name__}#{node.node_id}")


@contextmanager
def collecting() -> Iterator[list[Generated]]:
    """The list of every definition made inside, in order."""
    found: list[Generated] = []
    token = _COLLECTED.set(found)
    try:
        yield found
    finally:
        _COLLECTED.reset(token)


def define(source: str, name: str, scope: dict[str, Any] | None = None, part: str = "") -> Any:
    """Compiles ``source`` in ``scope`` (a new dict when None) and returns its ``name``.

    ``part`` names the function in the file name when ``name`` alone is ambiguous
    within one owner (an aggregate's ``fold`` that adds and the one that retracts).
    """
    label, part = _OWNER.get(), part or name
    filename = _register(f"{PREFIX}{label} {part}" if label else PREFIX + part, source)
    namespace = {} if scope is None else scope
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - deltaflow's own code
    defined = _DEFINED[filename] = Generated(label, part, filename, source)
    found = _COLLECTED.get()
    if found is not None:
        found.append(defined)
    return namespace[name]


def _register(base: str, source: str) -> str:
    """A file name for ``source`` (``base``, or ``base`` with a count when that name
    already holds other code), its lines put into ``linecache``."""
    filename, n = base + ">", 1
    while filename in _DEFINED and _DEFINED[filename].source != source:
        n += 1
        filename = f"{base} {n}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    return filename


def generated_at(tb: TracebackType | None) -> tuple[str, int] | None:
    """(file name, line) of the innermost frame of generated code in ``tb``, or None."""
    found = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.startswith(PREFIX):
            found = (filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


def definition(filename: str) -> Generated | None:
    """The definition compiled under ``filename``, or None."""
    return _DEFINED.get(filename)


def listing(found: list[Generated]) -> str:
    """The definitions as text: ``-- <deltaflow Calc#2 _calc>``, then the source."""
    shown = {g.filename: g for g in found}  # a definition made twice is listed once
    return "\n".join(f"-- {g.filename}\n{g.source.rstrip()}\n" for g in shown.values())
