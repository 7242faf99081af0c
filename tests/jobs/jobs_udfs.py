"""The Python functions of the ``python_udf`` and ``lateral_`` cases, loadable by PyFlink
and by deltaflow.

PyFlink's ``@udf`` / ``@udtf`` wrap the function; without PyFlink (deltaflow's venv) the same
decorators are the plain function with the ``result_type`` (``result_types``) and
``deterministic`` attributes deltaflow reads.
"""

from __future__ import annotations

try:
    from pyflink.table.udf import udf, udtf
except ImportError:

    def udtf(result_types, deterministic: bool = True):  # noqa: ANN001, ANN201
        def mark(fn):  # noqa: ANN001, ANN202
            fn.result_types = result_types
            fn.deterministic = deterministic
            return fn

        return mark

    def udf(result_type: str, deterministic: bool = True):  # noqa: ANN201
        def mark(fn):  # noqa: ANN001, ANN202
            fn.result_type = result_type
            fn.deterministic = deterministic
            return fn

        return mark


@udf(result_type="STRING")
def label(customer: str | None, qty: int | None) -> str:
    """``alice x2``; an unknown customer is ``?``, an unknown quantity ``x?``."""
    who = customer if customer is not None else "?"
    return f"{who} x{qty if qty is not None else '?'}"


@udf(result_type="STRING")
def price_band(amount) -> str:  # noqa: ANN001 - a DECIMAL(10, 2) arrives as Decimal or None
    """``cheap`` below 5, ``mid`` below 20, else ``dear``; an unknown amount is ``none``."""
    if amount is None:
        return "none"
    return "cheap" if amount < 5 else "mid" if amount < 20 else "dear"


@udf(result_type="BOOLEAN")
def has_double_letter(word: str | None) -> bool:
    """Whether ``word`` has the same letter twice in a row (``apple``)."""
    return word is not None and any(a == b for a, b in zip(word, word[1:], strict=False))


@udtf(result_types=["STRING", "INT"])
def units(product: str | None, qty: int | None):  # noqa: ANN201
    """One (product#i, i) row per unit ordered, at most 3; nothing for an unknown quantity."""
    for i in range(1, min(qty or 0, 3) + 1):
        yield f"{product}#{i}", i
