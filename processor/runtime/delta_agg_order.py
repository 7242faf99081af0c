"""Arrival order for DeltaAggregate's LISTAGG, FIRST_VALUE and LAST_VALUE.

Flink's retracting versions of these functions (``LISTAGG_RETRACT``, ``FIRST_VALUE_RETRACT``,
``LAST_VALUE_RETRACT``) keep a group's non-null values in the order they arrived, and a
retraction removes the *earliest* copy of the retracted value, whichever row it came from.
So after rows 1=a, 2=w, 3=a and a delete of row 3, Flink's list is ``w,a`` (row 1's slot
went), not ``a,w`` (the rows still there, in any order).

The mirror holds rows, not that list, so this module keeps, per source row, one arrival
number per order-dependent call: the slot the row's value holds in Flink's list. They are
stored per group (one state value: primary key -> numbers), read once per changed group, as
the group's rows are. A group is rebuilt from its rows' numbers (sorted), the batch's
changes are folded in as Flink folds them (append with a new number; remove the earliest
equal value), and the numbers left are handed back to the rows holding those values (a row
keeps its own where it can); the group's value is rewritten only if a number changed. The
numbers come from one counter per operator, advanced by the batch's length.
"""

from __future__ import annotations

from deltaflow.formats.changelog import ADDS, Batch
from deltaflow.processor.exprs.compile import compile_calc
from deltaflow.processor.exprs.nodes import InputRef
from deltaflow.processor.plan import AggCall, DeltaAggregate
from deltaflow.processor.runtime.base import key_getter
from deltaflow.processor.runtime.mirror import SourceReader

ORDERED = frozenset({"LISTAGG", "FIRST_VALUE", "LAST_VALUE"})
_COUNTER = (0,)


def ordered_calls(calls: tuple[AggCall, ...]) -> list[tuple[int, AggCall]]:
    """(accumulator slot, call) of each order-dependent call; slot 0 is the row count."""
    return [(slot, c) for slot, c in enumerate(calls, start=1) if c.function.upper() in ORDERED]


class _Group:
    """One group while a batch is folded: its rows by primary key and each call's slots,
    ``(arrival number, value)`` in arrival order."""

    __slots__ = ("counts", "key", "live", "slots", "stored")

    def __init__(self, key: tuple, stored: dict, live: dict, slots: list, counts: list) -> None:
        self.key, self.stored, self.live = key, stored, live
        self.slots, self.counts = slots, counts


class ArrivalOrder:
    def __init__(self, node: DeltaAggregate, backend, ctx) -> None:
        side = node.source
        scan_types = node.inputs[0].types
        width = len(side.projection)
        pk_refs = [InputRef(scan_types[c], c) for c in side.primary_key]
        # the operator's input row with the source's primary key appended
        self.calc = compile_calc([*side.projection, *pk_refs], side.condition, ctx.eval_context())
        self.pk_of = key_getter(tuple(range(width, width + len(pk_refs))))
        self.calls = ordered_calls(node.aggs)
        self.args = [(c.args[0], c.filter_arg) for _, c in self.calls]
        self.distinct = [c.distinct for _, c in self.calls]
        self.numbers = backend.table(f"{node.node_id}:DeltaAggregate:arrival")
        self.counter = backend.table(f"{node.node_id}:DeltaAggregate:next")
        self.stored: dict[tuple, dict | None] = {}  # group key -> {primary key: numbers}
        self.puts: dict[tuple, dict] = {}
        self.base = 0

    def changes(self, reader: SourceReader, batch: Batch) -> tuple[list[int], list[tuple]]:
        """As ``reader.changes``, each row with its primary key appended."""
        reader.mirror.apply(batch)
        return self.calc(batch.kinds, batch.rows)

    def rows(self, reader: SourceReader, keys: list[tuple], before: Batch) -> dict[tuple, list]:
        """As ``reader.rows`` (rows with their primary key appended); loads their numbers."""
        lookups = list(dict.fromkeys(tuple(k[p] for p in reader.positions) for k in keys))
        found = reader.mirror.lookup(reader.index, lookups, before)
        raw = [row for rows in found for row in rows]
        rows = self.calc([0] * len(raw), raw)[1] if raw else []
        wanted: dict[tuple, list[tuple]] = {k: [] for k in keys}
        key_of = reader.key_of
        for row in rows:
            group = wanted.get(key_of(row))
            if group is not None:
                group.append(row)
        self.stored = dict(zip(keys, self.numbers.get_many(keys), strict=True))
        self.puts = {}
        self.base = self.counter.get(_COUNTER) or 0
        return wanted

    def open(self, key: tuple, rows: list[tuple]) -> _Group:
        """A group as it was before the batch: each call's values sorted by arrival."""
        live = {self.pk_of(r): r for r in rows}
        stored = self.stored.get(key) or {}
        slots, counts = [], []
        for j in range(len(self.args)):
            found, count = self._slots(j, live, stored)
            slots.append(found)
            counts.append(count)
        return _Group(key, stored, live, slots, counts)

    def _slots(self, j: int, live: dict, stored: dict) -> tuple[list, dict]:
        """Call ``j``'s (number, value) slots sorted, and for DISTINCT the count per value
        (one slot per value, its number carried by one of the rows holding it)."""
        (arg, flt), distinct = self.args[j], self.distinct[j]
        found: list[tuple[int, object]] = []
        count: dict[object, int] = {}
        for pk, row in live.items():
            v = row[arg]
            if v is None or (flt is not None and row[flt] is not True):
                continue
            numbers = stored.get(pk)
            number = None if numbers is None else numbers[j]
            if distinct:
                count[v] = count.get(v, 0) + 1
                if number is None:
                    continue
            found.append((-1 if number is None else number, v))
        found.sort(key=_number)
        if distinct:
            first = {v: n for n, v in reversed(found)}
            found = sorted(((first.get(v, -1), v) for v in count), key=_number)
        return found, count

    def fold(self, group: _Group, kind: int, row: tuple, position: int) -> None:
        """One change of the batch, as Flink's retracting functions take it (for DISTINCT:
        as the function sees it, when a value's count goes 0 -> 1 and 1 -> 0)."""
        adds = ADDS[kind]
        if adds:
            group.live[self.pk_of(row)] = row
        else:
            group.live.pop(self.pk_of(row), None)
        number = self.base + position
        for j, slots in enumerate(group.slots):
            arg, flt = self.args[j]
            v = row[arg]
            if v is None or (flt is not None and row[flt] is not True):
                continue
            if self.distinct[j] and not _counted(group.counts[j], v, adds):
                continue
            if adds:
                slots.append((number, v))
                continue
            for i, (_, held) in enumerate(slots):
                if held == v:
                    del slots[i]
                    break

    def fill(self, group: _Group, acc: list) -> None:
        """Puts each call's values, in Flink's order, into the group's accumulator."""
        for (slot, call), slots in zip(self.calls, group.slots, strict=True):
            values = [v for _, v in slots]
            holder, at = (acc[slot], 1) if call.distinct else (acc, slot)  # [seen, inner]
            if len(call.args) > 1:  # LISTAGG(x, sep): [values, separator], sep a constant
                holder[at][0] = values
            else:
                holder[at] = values

    def close(self, group: _Group) -> None:
        """Hands the group's arrival numbers back to the rows now holding those values."""
        empty = [None] * len(self.args)
        numbers = {pk: list(empty) for pk in group.live}
        for j, slots in enumerate(group.slots):
            self._hand_out(j, group, dict(slots), numbers)
        kept = {pk: n for pk, n in numbers.items() if n != empty}
        if kept != group.stored:
            self.puts[group.key] = kept

    def _hand_out(self, j: int, group: _Group, value_of: dict, numbers: dict) -> None:
        """Rows keep their own number where it still holds their value (``value_of``: number
        -> value); the other rows of a value take that value's remaining numbers (which row
        holds which does not matter: Flink's list has values, not rows)."""
        arg, flt = self.args[j]
        live, stored = group.live, group.stored
        waiting = []
        for pk, row in live.items():
            v = row[arg]
            if v is None or (flt is not None and row[flt] is not True):
                continue
            old = stored.get(pk)
            mine = None if old is None else old[j]
            if mine is not None and mine in value_of and value_of[mine] == v:
                del value_of[mine]
                numbers[pk][j] = mine
            else:
                waiting.append(pk)
        if not waiting:
            return
        by_value: dict[object, list[int]] = {}
        for number in sorted(value_of):
            by_value.setdefault(value_of[number], []).append(number)
        for pk in waiting:
            held = by_value.get(live[pk][arg])
            if held:
                numbers[pk][j] = held.pop(0)

    def finish(self, n_changes: int) -> None:
        """Writes the groups whose numbers changed and advances the counter past the batch."""
        for key, kept in self.puts.items():
            if kept:
                self.numbers.put(key, kept)
            else:
                self.numbers.delete(key)
        self.counter.put(_COUNTER, self.base + n_changes)


def _number(slot: tuple) -> int:
    return slot[0]


def _counted(count: dict, v: object, adds: bool) -> bool:
    """Counts ``v`` in or out; whether a DISTINCT function sees the change (0 -> 1, 1 -> 0)."""
    n = count.get(v, 0)
    if adds:
        count[v] = n + 1
        return n == 0
    if n == 0:
        return False
    count[v] = n - 1
    return n == 1
