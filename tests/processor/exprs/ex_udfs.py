"""Python UDFs the compile tests load by 'module.attr' (this folder is on sys.path)."""

from __future__ import annotations


def add_one(x: int | None) -> int | None:
    return None if x is None else x + 1


class Doubler:
    """A ScalarFunction-style class: deltaflow instantiates it once and calls ``eval``."""

    def __init__(self) -> None:
        self.factor = 2

    def eval(self, x: int | None) -> int | None:
        return None if x is None else x * self.factor
