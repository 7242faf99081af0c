"""Straight-line Python compiled once per debezium-json plan: the fast path's row
reader and the loop over a batch of messages.

The generated code holds no per-column loop: a row is one tuple display whose items
read the decoded struct's fields (``o.c0``, ``o.c1``, ...). A DECIMAL column that
msgspec already decoded to a ``Decimal`` is rounded inline
(``debezium_values.decimal_rounding``); only when that gives no nonzero finite value
does the column's converter run. Every column with another Python converter calls it.
With a pre-filter the loop tests each image's struct fields first and builds only the
rows of the images that pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from deltaflow.formats.debezium_values import CONVERSION_ERRORS, Converter
from deltaflow.formats.generated import define
from deltaflow.formats.prefilter import Rejected

# The fast path's fallback for message ``i``: read it on the checked path.
Slow = Callable[[int, Any], None]
BatchReader = Callable[..., int]  # (values, kinds, rows, slow, schema=None) -> dropped


@dataclass(frozen=True)
class Keep:
    """A pre-filter compiled for one row struct: ``code`` is a condition over the image
    named ``{o}`` (``{o}.c3 == K0``), ``scope`` the constants it names."""

    code: str
    scope: dict[str, Any]


# The batch loop: an image failing ``keep_a`` / ``keep_b`` (a pre-filter) is counted in
# ``dropped`` and its row never built. Without a pre-filter both are ``True``, and CPython
# folds those tests and their dead branches away at compile time. A count follows its
# row's append, so a message whose row raises goes to ``slow`` (which reads every image
# of it) uncounted. With ``partial`` (before-images taken from state downstream) an update
# without a before-image gives its +U alone, and so does one whose before-image is read for
# its key alone (``before``) when that key is the after-image's (``same_key``).
_BATCH = """\
def run(values, kinds, rows, slow, schema=None):
    add_kind, add_row = kinds.append, rows.append
    dropped = 0
    for i, value in enumerate(values):
        if not value:
            continue  # a tombstone
        try:
            env = decode(value)
            op = env.op{meta}
            if op == "u":
                b, a = env.before, env.after
                if b is not None and a is not None:
                    if {same_key}:
                        add_row({row_a})
                        add_kind(UPDATE_AFTER)
                        continue
                    if {keep_b}:
                        if {keep_a}:
                            rows += ({row_b}, {row_a})
                            kinds += UPDATE
                        else:
                            add_row({row_b})
                            add_kind(UPDATE_BEFORE)
                            dropped += 1
                    elif {keep_a}:
                        add_row({row_a})
                        add_kind(UPDATE_AFTER)
                        dropped += 1
                    else:
                        dropped += 2
                    continue
                if {partial} and b is None and a is not None:
                    if {keep_a}:
                        add_row({row_a})
                        add_kind(UPDATE_AFTER)
                    else:
                        dropped += 1
                    continue
            elif op == "c" or op == "r":
                a = env.after
                if a is not None and env.before is None:
                    if {keep_a}:
                        add_row({row_a})
                        add_kind(INSERT)
                    else:
                        dropped += 1
                    continue
            elif op == "d":
                b = env.before
                if b is not None and env.after is None:
                    if {keep_b}:
                        add_row({row_b})
                        add_kind(DELETE)
                    else:
                        dropped += 1
                    continue
        except ERRORS:
            pass
        slow(i, value)
    return dropped
"""


# The batch loop of a source taking before-images from state with a pre-filter: the
# normalizer needs every change (a key outside the filter is still a key), so nothing is
# dropped; an after-image failing ``keep_a`` is built as a ``Rejected`` row of fewer
# columns (``row_r``: ``formats/prefilter.py``), which the normalizer stores and never
# emits. A before-image is read for its key alone and never tested.
_STATE_BATCH = """\
def run(values, kinds, rows, slow, schema=None):
    add_kind, add_row = kinds.append, rows.append
    for i, value in enumerate(values):
        if not value:
            continue  # a tombstone
        try:
            env = decode(value)
            op = env.op{meta}
            if op == "u":
                b, a = env.before, env.after
                if a is not None:
                    if b is None or {same_key}:
                        add_row({row_a} if {keep_a} else REJECTED({row_r}))
                        add_kind(UPDATE_AFTER)
                    else:
                        rows += ({row_b}, {row_a} if {keep_a} else REJECTED({row_r}))
                        kinds += UPDATE
                    continue
            elif op == "c" or op == "r":
                a = env.after
                if a is not None and env.before is None:
                    add_row({row_a} if {keep_a} else REJECTED({row_r}))
                    add_kind(INSERT)
                    continue
            elif op == "d":
                b = env.before
                if b is not None and env.after is None:
                    add_row({row_b})
                    add_kind(DELETE)
                    continue
        except ERRORS:
            pass
        slow(i, value)
    return 0
"""


class RowCode:
    """The tuple display reading one decoded row struct, and the names it uses."""

    def __init__(
        self,
        count: int,
        posts: dict[int, Converter],
        skipped: set[int],
        decimals: dict[int, tuple[Decimal, Context]],
        raw_decimals: dict[int, Callable[[Any], Decimal | None]] | None = None,
    ) -> None:
        self.count = count
        self.posts = posts
        self.skipped = skipped
        self.decimals = decimals
        # DECIMAL columns decoded as raw JSON, read with their ``D<i>`` only for a row built
        self.raw_decimals = raw_decimals or {}
        self.scope: dict[str, Any] = {f"P{i}": conv for i, conv in posts.items()}
        for i, (quantum, context) in decimals.items():
            self.scope[f"Q{i}"], self.scope[f"X{i}"] = quantum, context
        for i, read in self.raw_decimals.items():
            self.scope[f"D{i}"] = read

    def row(self, o: str) -> str:
        """A tuple display of the row struct named ``o``."""
        parts = [self._column(o, i) for i in range(self.count)]
        return f"({', '.join(parts)}{',' if self.count == 1 else ''})"

    def _column(self, o: str, i: int) -> str:
        if i in self.skipped:
            return "None"
        if i in self.decimals:
            rounded = f"q{i} if (q{i} := x{i}.quantize(Q{i}, None, X{i})) and q{i} == q{i}"
            if i in self.raw_decimals:
                null = f"(x{i} := {o}.c{i}) is None or (x{i} := D{i}(x{i})) is None"
                return f"(None if {null} else {rounded} else P{i}(x{i}))"
            return f"(None if (x{i} := {o}.c{i}) is None else {rounded} else P{i}(x{i}))"
        if i in self.posts:
            return f"(None if (x{i} := {o}.c{i}) is None else P{i}(x{i}))"
        return f"{o}.c{i}"

    def compile_reader(self) -> Converter:
        """``read(struct) -> tuple``."""
        return self._exec(f"def read(o):\n    return {self.row('o')}\n", {}, "read")

    def compile_batch(
        self,
        decode: Callable[[Any], Any],
        meta: Sequence[Callable[[Any, str | None], Any]] = (),
        errors: tuple[type[BaseException], ...] = (),
        keep: Keep | None = None,
        partial: bool = False,
        before: RowCode | None = None,
        rejected: RowCode | None = None,
    ) -> BatchReader:
        """``run(values, kinds, rows, slow, schema=None) -> dropped``: appends the
        changes of each message, each row followed by the values of the ``meta``
        readers (``read(envelope, schema)``, once per message).

        A message the typed decode rejects, whose converters or metadata readers raise
        (``CONVERSION_ERRORS`` or ``errors``), or which is not a plain ``c``/``r``/
        ``u``/``d`` event with exactly the images its op needs goes to
        ``slow(i, value)``, in order, so the checked path decides it as before.

        ``keep``: a pre-filter's condition over the decoded image (``keep.code`` with
        ``{o}`` for the image's name); an image failing it is dropped before its row is
        built, and ``run`` returns how many were dropped (else 0).

        ``partial``: an update whose before-image is null gives its ``+U`` alone (the
        source's normalizer takes the before-image from its state).

        ``before``: the code reading a before-image (default this one), for a struct of
        fewer columns (the others None).

        ``rejected``: with ``partial`` and ``keep``, the code reading an after-image that
        fails ``keep`` into a ``Rejected`` row (``_STATE_BATCH``: nothing is dropped).
        """
        row_a, row_b, line = self.row("a"), (before or self).row("b"), ""
        row_r = (rejected or self).row("a")
        if meta:
            calls = "".join(f"M{n}(env, schema), " for n in range(len(meta)))
            line = f"\n            m = ({calls})"
            row_a, row_b, row_r = f"{row_a} + m", f"{row_b} + m", f"{row_r} + m"
        state = partial and keep is not None
        names = {
            **{f"M{n}": read for n, read in enumerate(meta)},
            "decode": decode,
            "ERRORS": CONVERSION_ERRORS + errors,
            "UPDATE": (UPDATE_BEFORE, UPDATE_AFTER),
            "UPDATE_BEFORE": UPDATE_BEFORE,
            "UPDATE_AFTER": UPDATE_AFTER,
            "INSERT": INSERT,
            "DELETE": DELETE,
        }
        source = (_STATE_BATCH if state else _BATCH).format(
            row_a=row_a,
            row_b=row_b,
            row_r=row_r,
            meta=line,
            keep_a="True" if keep is None else f"({keep.code.format(o='a')})",
            keep_b="True" if keep is None else f"({keep.code.format(o='b')})",
            partial="True" if partial else "False",
            same_key=self._same_key(before) if partial else "False",
        )
        if keep is not None:
            names.update(keep.scope, REJECTED=Rejected)
        return self._exec(source, names, "run")

    def _same_key(self, before: RowCode | None) -> str:
        """A test that an update's before-image, read for its key alone (``before``),
        holds the after-image's key: the struct fields equal (their converted values then
        are too; a key whose fields differ but convert alike gives the -U/+U pair, which
        the normalizer reads as one update of its key)."""
        if before is None:
            return "False"
        at = [i for i in range(self.count) if i not in before.skipped]
        return " and ".join(f"b.c{i} == a.c{i}" for i in at) or "False"

    def _exec(self, source: str, names: dict[str, Any], name: str) -> Any:
        part = f"debezium-json {name}"
        return define(source, name, {**self.scope, **names}, part)
