"""Table functions for the udtf tests, declared as PyFlink's ``@udtf(result_types=...)`` does."""

from __future__ import annotations


def split_words(s):  # noqa: ANN001, ANN201
    """One (word, length) row per blank-separated word; nothing for NULL."""
    if s is None:
        return
    for w in s.split():
        yield w, len(w)


split_words.result_types = ["STRING", "INT"]


def upto(n):  # noqa: ANN001, ANN201
    """0, 1, ..., n - 1 as one atomic INT column."""
    return range(n or 0)


upto.result_types = "INT"


def pairs(s):  # noqa: ANN001, ANN201
    return [(s, 1)] if s else []


pairs.result_types = "ROW<word STRING, cnt INT>"


def broken(s):  # noqa: ANN001, ANN201
    yield (s,)  # declares two columns, yields one


broken.result_types = ["STRING", "INT"]


class Counted:
    """A TableFunction-style class: the runtime makes one instance per operator."""

    result_types = ["INT"]
    deterministic = False
    instances = 0

    def __init__(self) -> None:
        Counted.instances += 1

    def eval(self, n):  # noqa: ANN001, ANN201
        yield (n,)


class _Wrapper:
    """The attributes a PyFlink ``@udtf`` wrapper keeps its function and declaration in."""

    def __init__(self, func, result_types, deterministic) -> None:  # noqa: ANN001
        self._func = func
        self._result_types = result_types
        self._deterministic = deterministic


def _letters(s):  # noqa: ANN001, ANN202
    yield from (s or "")[:2]


wrapped = _Wrapper(_letters, "STRING", False)
