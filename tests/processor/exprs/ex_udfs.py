"""Python UDFs the compile tests load by 'module.attr' (this folder is on sys.path)."""

from __future__ import annotations


def add_one(x: int | None) -> int | None:
    return None if x is None else x + 1
