"""DeltaJoinCascade: several joins of mirrored sources, one operator, no join state.

The plan's tree (``plan.DeltaView``) has a source at each leaf, a Calc or a binary join at
each inner node. Every node can be looked up: its current rows whose given columns equal
given values, rebuilt from the sources' mirrors through their indexes (a join looks one
input up by part of the key, then the other input by the join keys of the rows found).

A batch of one source climbs from its leaf to the root: a Calc maps the changes, a join
runs the regular join's rules (``delta_join.JoinStep``) on them against the other input
looked up as it is now, and, when the other input is outer, against its own input as it
was before the batch (the mirror of the batch's source keeps the rows the batch replaced).
This is exactly what the chain of regular joins would do with their states, since a
regular join's state of one input is that input's current result: the output is the
regular plan's changelog. Processing the sources' batches one after another is the
delta-join rule d(A x B) = dA x B(old) + A(new) x dB, with nothing counted twice.

A table read at several leaves (TPC-H Q7's two nations) has its batch climb from each of
its leaves, one after the other (``Round``): while one leaf's change climbs, the other
leaves of that table are read as the regular joins' states would hold them, after the
batch where their climb is done, before it where not. The order is the regular plan's: at
the join where two such leaves meet, the scan itself as the right input takes the batch
before the left input's subtree (it runs first in the regular graph), else left first.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from deltaflow.formats.changelog import Batch
from deltaflow.processor.exprs.compile import compile_calc
from deltaflow.processor.exprs.nodes import InputRef
from deltaflow.processor.plan import Calc, DeltaJoinCascade, DeltaView, Key, MirrorSide
from deltaflow.processor.runtime.base import Operator, key_getter
from deltaflow.processor.runtime.delta_join import JoinStep, Memo, memoizable, projector
from deltaflow.processor.runtime.mirror import SourceReader

Found = Mapping[tuple, Sequence[tuple]]  # a memo's rows are tuples (delta_join.Memo)


def _group(rows: list[tuple], keys: list[tuple], key_of) -> Found:
    wanted: dict[tuple, list[tuple]] = {k: [] for k in keys}
    for row in rows:
        group = wanted.get(key_of(row))
        if group is not None:
            group.append(row)
    return wanted


def _sub_keys(keys: list[tuple], positions: Key) -> list[tuple]:
    """The distinct tuples of the values at ``positions`` of each of ``keys``, in order."""
    return list(dict.fromkeys(map(key_getter(tuple(positions)), keys)))


class Round:
    """The batch being applied and the ports that have taken it (for tables read twice)."""

    def __init__(self) -> None:
        self.batch: Batch | None = None
        self.port = -1
        self.done: set[int] = set()

    def start(self, batch: Batch, port: int) -> None:
        if batch is not self.batch:
            self.batch, self.done = batch, set()
        self.port = port

    def finish(self) -> None:
        self.done.add(self.port)


class _Source:
    """A source's lookups; those by exactly its primary key with no Calc are remembered
    (``delta_join.Memo``) and forgotten by the keys of the source's own batches, which alone
    change its mirror, unless another leaf reads the same table (``twins``: ports)."""

    def __init__(self, view: DeltaView, backend, ctx, types: list, twins, clock: Round) -> None:
        sides: dict[Key, MirrorSide] = {}
        for lk in view.lookups:
            assert lk.side is not None, "a source's lookups read its mirror"
            sides[lk.key] = lk.side
        self.readers = {
            key: SourceReader(side, key, backend, ctx, types) for key, side in sides.items()
        }
        self.first = next(iter(self.readers.values()))
        self.port, self.twins, self.clock = view.port, twins, clock
        self.memos = {
            key: Memo(self.readers[key])
            for key, side in sides.items()
            if not twins and memoizable(side, self.readers[key])
        }

    def changes(self, batch: Batch) -> tuple[list[int], list[tuple]]:
        kinds, rows = self.first.changes(batch)
        for key, memo in self.memos.items():
            memo.forget(dict.fromkeys(map(self.readers[key].key_of, batch.rows)))
        return kinds, rows

    def rows(self, key: Key, keys: list[tuple], before: Batch | None) -> Found:
        clock = self.clock
        if clock.port != self.port and clock.port in self.twins:  # a twin's batch climbs
            before = None if self.port in clock.done else clock.batch
        memo = self.memos.get(key)
        if memo is None or before is not None:  # as before a batch: from the mirror
            return self.readers[key].rows(keys, before)
        return memo.rows(keys)


class _Calc:
    def __init__(self, view: DeltaView, child, ctx) -> None:
        self.child = child
        self.calc = compile_calc(list(view.projection), view.condition, ctx.eval_context())
        self.lookups = {
            lk.key: (lk.positions, lk.via_key, key_getter(lk.key)) for lk in view.lookups
        }

    def change(self, kinds, rows, side: int, batch: Batch):
        return self.calc(kinds, rows)

    def rows(self, key: Key, keys: list[tuple], before: Batch | None) -> Found:
        positions, via_key, key_of = self.lookups[key]
        subs = _sub_keys(keys, positions)
        found = self.child.rows(via_key, subs, before)
        raw = [row for sub in subs for row in found[sub]]
        if raw:
            raw = self.calc([0] * len(raw), raw)[1]
        return _group(raw, keys, key_of)


class _Join:
    def __init__(self, view: DeltaView, left, right, eventual: bool, ctx) -> None:
        self.sides = (left, right)
        self.join_keys = (view.left_keys, view.right_keys)
        self.key_of = (key_getter(view.left_keys), key_getter(view.right_keys))
        widths = (view.inputs[0].width, view.inputs[1].width)
        self.step = JoinStep(view.join_type, view.condition, widths, eventual, ctx)
        self.lookups = {
            lk.key: (lk.via, lk.positions, lk.via_key, key_getter(lk.key)) for lk in view.lookups
        }

    def change(self, kinds, rows, side: int, batch: Batch):
        """The join's changes for changes of its input ``side`` (from ``batch`` of a source)."""
        key_of = self.key_of[side]
        keys = list(map(key_of, rows))
        live = [k for k in dict.fromkeys(keys) if None not in k]
        other = 1 - side
        others = self.sides[other].rows(self.join_keys[other], live, None) if live else {}
        own = {}
        if live and self.step.needs_own(side):
            own = self.sides[side].rows(self.join_keys[side], live, batch)
        out = self.step.run(kinds, rows, keys, others, own, side == 0)
        return out.kinds, out.rows

    def rows(self, key: Key, keys: list[tuple], before: Batch | None) -> Found:
        """The join's current rows of each key: rows of input ``via`` looked up by part of
        the key, joined with the other input's rows of their join keys."""
        via, positions, via_key, key_of = self.lookups[key]
        subs = _sub_keys(keys, positions)
        found = self.sides[via].rows(via_key, subs, before)
        drive = [row for sub in subs for row in found[sub]]
        other = 1 - via
        join_of = self.key_of[via]
        drive_keys = list(map(join_of, drive))
        live = [k for k in dict.fromkeys(drive_keys) if None not in k]
        others = self.sides[other].rows(self.join_keys[other], live, before) if live else {}
        step, is_left = self.step, via == 0
        pad = step.nulls[other] if step.outer[via] else None
        out = []
        for row, jk in zip(drive, drive_keys, strict=True):
            matches = step.matches(row, others[jk], is_left) if jk in others else []
            if matches:
                out += [row + e for e in matches] if is_left else [e + row for e in matches]
            elif pad is not None:
                out.append(row + pad if is_left else pad + row)
        return _group(out, keys, key_of)


class DeltaCascadeOperator(Operator):
    """See the module docstring. ``fused``: a Calc above the cascade, its only consumer,
    that only selects columns (the plan's ``fused_calc``): the top join emits its rows with
    just those columns (a top Calc's rows are projected after it)."""

    def __init__(self, node: DeltaJoinCascade, backend, ctx, fused: Calc | None = None) -> None:
        self.eventual = node.eventual
        self.scan_types = [scan.types for scan in node.inputs]
        self.paths: dict[int, tuple[_Source, list]] = {}
        self.clock = Round()
        self.twins = {
            port: {other for other, o in enumerate(node.inputs) if o is scan and other != port}
            for port, scan in enumerate(node.inputs)
        }
        self.bare: dict[int, bool] = {}
        root, _ = self._build(node.tree, backend, ctx)
        self.rounds = {port: self._round_order(port) for port, twins in self.twins.items() if twins}
        self.project = projector(fused)
        if isinstance(root, _Join):
            root.step.fold(fused)
            self.project = None

    def _build(self, view: DeltaView, backend, ctx):
        """The runtime node of ``view``; returns it with the paths of its leaves, each the
        list of (ancestor, side) from the leaf up, appended to as the ancestors are built."""
        if view.kind == "source":
            port = view.port
            source = _Source(
                view, backend, ctx, self.scan_types[port], self.twins[port], self.clock
            )
            path: list = []
            self.paths[view.port] = (source, path)
            self.bare[port] = view.condition is None and all(
                isinstance(e, InputRef) and e.index == i for i, e in enumerate(view.projection)
            )
            return source, [path]
        built = [self._build(child, backend, ctx) for child in view.inputs]
        node: _Calc | _Join
        if view.kind == "calc":
            node = _Calc(view, built[0][0], ctx)
        else:
            node = _Join(view, built[0][0], built[1][0], self.eventual, ctx)
        paths = []
        for side, (_, child_paths) in enumerate(built):
            for path in child_paths:
                path.append((node, side))
                paths.append(path)
        return node, paths

    def _round_order(self, port: int) -> list[int]:
        """The ports of ``port``'s table in the order the regular joins would take a batch."""

        def first(p: int, q: int) -> int:
            ups = {id(node): side for node, side in self.paths[q][1]}
            for depth, (node, side) in enumerate(self.paths[p][1]):
                if id(node) in ups and ups[id(node)] != side:  # where the two leaves meet
                    q_depth = next(i for i, (n, _) in enumerate(self.paths[q][1]) if n is node)
                    right_bare = self.bare[p] if side == 1 else self.bare[q]
                    right_direct = (depth if side == 1 else q_depth) == 0
                    lead = 1 if right_bare and right_direct else 0
                    return -1 if side == lead else 1
            return 0

        return sorted([port, *self.twins[port]], key=functools.cmp_to_key(first))

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        if port not in self.rounds:
            return self._climb(batch, port)
        clock = self.clock
        if batch is clock.batch and port in clock.done:
            return Batch()  # climbed already, in its turn, when the first port took the batch
        out = Batch()
        for p in self.rounds[port]:
            if batch is not clock.batch or p not in clock.done:
                out.extend(self._climb(batch, p))
        return out

    def _climb(self, batch: Batch, port: int) -> Batch:
        source, path = self.paths[port]
        self.clock.start(batch, port)
        try:
            kinds, rows = source.changes(batch)
            for node, side in path:
                if not rows:
                    return Batch()
                kinds, rows = node.change(kinds, rows, side, batch)
        finally:
            self.clock.finish()
        if self.project is not None:
            return Batch(list(kinds), list(map(self.project, rows)))
        return Batch(list(kinds), list(rows))
