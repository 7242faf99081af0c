"""Nexmark q14's ``count_char`` as a Python function, loadable by PyFlink and by deltaflow.

The published q14 names a Java class (``com.github.nexmark.flink.udf.CountChar``: the number of
times a character occurs in a string, 0 for NULL); both engines here run it as this Python
function instead. Without PyFlink (deltaflow's venv) ``udf`` is a marker that sets the
attributes deltaflow reads."""

from __future__ import annotations

try:
    from pyflink.table.udf import udf
except ImportError:

    def udf(result_type: str, deterministic: bool = True):  # noqa: ANN201
        def mark(fn):  # noqa: ANN001, ANN202
            fn.result_type = result_type
            fn.deterministic = deterministic
            return fn

        return mark


@udf(result_type="BIGINT")
def count_char(text: str | None, char: str | None) -> int:
    """How many times ``char`` occurs in ``text`` (0 when either is NULL)."""
    if text is None or not char:
        return 0
    return text.count(char)
