"""The debezium-json format: Debezium change events in JSON, read as Flink reads them.

Each message is one change event ``{"before": .., "after": .., "op": .., "source":
.., "ts_ms": ..}`` (inside ``{"schema": .., "payload": ..}`` with
``schema-include``). Like Flink's ``DebeziumJsonDeserializationSchema``:

- ``op`` ``c`` (create) and ``r`` (snapshot read) give ``+I(after)``; ``u`` gives
  ``-U(before)`` then ``+U(after)``; ``d`` gives ``-D(before)``.
- A tombstone (no value, or an empty one) is skipped.
- An update or delete whose ``before`` is null (a Postgres table without REPLICA
  IDENTITY FULL) is an error, with Flink's explanation, unless the source takes
  before-images from its state (``accept_partial_images``, the planner's choice for a
  table with a PRIMARY KEY, ``'debezium-json.before-image'``): an update without a
  before-image then gives its ``+U`` alone and ``t`` (truncate) a ``-D`` of
  ``TRUNCATED``, which the source's normalizer (``processor/runtime/normalize.py``)
  turns into an exact changelog; a before-image is then read for its primary key
  columns alone (the others are None, neither built nor checked).
- Otherwise ``t`` (truncate) and every other ``op`` are errors: Flink's debezium-json
  knows only ``c``/``r``/``u``/``d`` and fails on others ("Unknown "op" value").
- ``ignore-parse-errors`` (``on_error="skip"``): a message that cannot be read is
  dropped and counted in ``skipped``; a field that does not fit its column becomes
  NULL (counted in ``nulled``), as Flink sets such fields to null.
- ``on_error="dead-letter"``: a message that cannot be read, or holds a field that
  does not fit, is kept in ``dead_letters`` with its location and the reason.

Values are converted as ``debezium_values`` describes; with ``schema-include`` the
Debezium logical types of the message's schema are read exactly (``debezium_types``).

Speed: one msgspec pass per message into typed structs whose fields msgspec checks
and converts itself (strings, integers in range, doubles, booleans, decimals); only
the other columns run a Python converter. A message the typed pass rejects is read
again on a checked path that finds the column at fault or applies Flink's coercions
(a number in a string, a number for a STRING column, ...). With a pre-filter
(``FormatSpec.prefilter``, the job's WHERE) an image failing its tests is dropped
before its row is built (counted in ``filtered``); the checked path keeps every image.
Taking before-images from state (``accept_partial_images`` with a pre-filter), nothing is
dropped: a failing after-image is built as a ``Rejected`` row of fewer columns, which the
normalizer stores and never emits (``processor/runtime/normalize_source.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from deltaflow.formats.changelog import (
    DELETE,
    INSERT,
    TRUNCATED,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Batch,
    RawBatch,
)
from deltaflow.formats.codec_support import bool_option, on_error_policy
from deltaflow.formats.debezium_options import NAME, check_options, decimal_encoding
from deltaflow.formats.debezium_plan import (
    CONVERSION_ERRORS,
    Bad,
    Plan,
    envelope_decoder,
    metadata_reader,
    outer_decoder,
)
from deltaflow.formats.debezium_types import (
    decimal_encodings,
    image_fields,
    logical_fields,
    logical_step,
)
from deltaflow.formats.errors import FormatError
from deltaflow.formats.prefilter import PreFilter
from deltaflow.formats.spec import FormatSpec

BEFORE_IMAGE = f"{NAME}.before-image"
# Debezium's default 'unavailable.value.placeholder' (TOASTed columns an update left alone)
PLACEHOLDER = "__debezium_unavailable_value"
REPLICA_IDENTITY = (
    'The "before" field of {} message is null, if you are using Debezium Postgres '
    "Connector, please check the Postgres table has been set REPLICA IDENTITY to FULL level."
)
_SKIP_HINT = f"Set '{NAME}.ignore-parse-errors' = 'true' to skip messages that cannot be read"
# The remedy for what a database legitimately sends: what makes the result exact first.
STATE_REMEDY = (
    f"set '{BEFORE_IMAGE}' = 'state' (the default for a table with a PRIMARY KEY; declare "
    "the key with PRIMARY KEY (...) NOT ENFORCED): deltaflow then takes every before-image "
    "from the rows it keeps per key"
)
_LOSES = "skipping such messages ('ignore-parse-errors') loses their changes"
_REPLICA_HINT = (
    f"{STATE_REMEDY[0].upper()}{STATE_REMEDY[1:]}; or run ALTER TABLE <table> REPLICA "
    f"IDENTITY FULL in PostgreSQL; {_LOSES}"
)
_TRUNCATE_HINT = (
    f"{STATE_REMEDY[0].upper()}{STATE_REMEDY[1:]}, and a truncate retracts every row it "
    f"holds; or leave truncates out in Debezium (skipped.operations = 't'); {_LOSES}"
)
_NO_KEY_DELETE = (
    'the "before" field of a DELETE message is null: the database sent no key of the '
    "deleted row (PostgreSQL: REPLICA IDENTITY NOTHING)"
)
_NO_KEY_HINT = f"Run ALTER TABLE <table> REPLICA IDENTITY DEFAULT (or FULL) in PostgreSQL; {_LOSES}"
_PLAN_CACHE = 64
_NULL = msgspec.Raw(b"null")
_LOOSEN_AT = 16  # messages of one batch on the checked path (and 1 in 8) to go loose
_LOOSE_BATCHES = 64  # batches read loose before the typed decode is tried again
_NO_SCHEMA = object()  # no schema seen yet: never equal to a message's schema


class LogicalMessage(Exception):
    """A Debezium logical decoding message (``op`` ``m``): skipped and counted."""


class DebeziumJsonDecoder:
    """Decodes batches of Debezium JSON change events into changelog batches."""

    changelog_mode = frozenset({INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE})

    def __init__(self, spec: FormatSpec) -> None:
        check_options(spec.options)
        self.policy = on_error_policy(NAME, spec)
        self.skipped = 0
        self.nulled = 0
        self.dead_letters: list[tuple[str, int, int, bytes | None, str]] = []
        self._include = bool_option(NAME, spec.options, "schema-include", False)
        self._decimals = decimal_encoding(spec.options)
        self._columns = list(spec.physical)
        keys = [key for key, _ in spec.metadata]
        self._meta = [metadata_reader(key, dtype) for key, dtype in spec.metadata]
        self._meta_keys = keys
        self._wants_schema = "schema" in keys
        self._demanded = spec.demanded
        self._prefilter = spec.prefilter
        self.filtered = 0  # row images the pre-filter dropped (never built)
        self.partial = False  # before-images come from state (accept_partial_images)
        self._before_columns: frozenset[str] | None = None  # all a before-image is read for
        self._key_at: list[int] = []  # where those columns are
        self.truncates = 0  # truncates handed on as a -D of TRUNCATED
        self._filtering = True  # the pre-filter applies (filter_images)
        self._parked: tuple | None = None  # the plans of the other way (filter_images)
        self._plain = self._typed = self._plan({})
        self._loose: Plan | None = None  # built when the data asks for it (_loosen)
        self._loose_left = 0
        self._plans: dict[bytes, Plan] = {}
        # the split of {"schema": .., "payload": ..}: always with schema-include; without
        # it, while the topic's messages come in that envelope by themselves
        self._outer: msgspec.json.Decoder | None = outer_decoder() if self._include else None
        self._envelope = envelope_decoder()  # exactly the two keys: the envelope by itself
        self._seen = [0, 0]  # this batch's messages read wrapped / plain by _one (no option)
        self.logical_messages = 0  # op "m" (logical decoding messages): skipped, counted
        self._counted: dict[tuple[str, int], int] = {}  # the last offset counted there

    def accept_partial_images(
        self, key: Sequence[str] = (), prefilter: PreFilter | None = None
    ) -> None:
        """The source takes before-images from its state: an update without one gives
        its +U alone, a truncate a -D of ``TRUNCATED`` (the normalizer makes them exact).
        The normalizer needs every change, so nothing is dropped: with ``prefilter`` an
        after-image failing it is built as a ``Rejected`` row (``formats/prefilter.py``).
        ``key``: the primary key columns, all the normalizer reads of a before-image (its
        other columns are then left None)."""
        self.partial, self._prefilter = True, prefilter
        self._before_columns = frozenset(key) or None
        self._key_at = [i for i, (name, _) in enumerate(self._columns) if name in key]
        self._plain = self._typed = self._plan({})
        self._loose, self._plans = None, {}
        self._filtering, self._parked = True, None

    def filter_images(self, on: bool) -> None:
        """Whether the next batches apply the pre-filter of ``accept_partial_images``
        (the normalizer turns it off for a batch that may hold TOAST placeholders: a
        placeholder in a column a test reads cannot be judged from the message). The
        plans of either way are kept, so switching back and forth builds nothing."""
        if self._prefilter is None or on is self._filtering:
            return
        parked = (self._plain, self._typed, self._loose, self._plans)
        self._filtering = on
        if self._parked is None:
            self._plain = self._typed = self._plan({})
            self._loose, self._plans = None, {}
        else:
            self._plain, self._typed, self._loose, self._plans = self._parked
        self._parked = parked

    def decode(self, raw: RawBatch) -> Batch:
        kinds: list[int] = []
        rows: list[tuple] = []
        if self._outer is None:
            self._decode_plain(raw, kinds, rows)
        else:
            self._decode_wrapped(raw, kinds, rows)
        if not self._include:
            self._follow_envelope()
        return Batch(kinds, rows)

    def _follow_envelope(self) -> None:
        """Without ``schema-include``: read the next batches through the envelope's loop
        once most messages of a batch came in ``{"schema": .., "payload": ..}`` (Kafka
        Connect's JsonConverter default), and through the plain loop again once most
        did not. Only the speed depends on it: ``_one`` reads either kind."""
        wrapped, plain = self._seen
        if self._outer is None and wrapped > plain:
            self._outer = self._envelope
        elif self._outer is not None and plain > wrapped:
            self._outer = None
        self._seen = [0, 0]

    def _decode_plain(self, raw: RawBatch, kinds: list[int], rows: list[tuple]) -> None:
        """The common case in one compiled loop: no schema envelope.

        Anything else (invalid JSON, a value needing one of Flink's coercions, a
        missing image, another op) goes through ``_one``, which reads the message
        again on the checked path and raises or applies the bad-input policy.
        """
        one, slow = self._one, [0]

        def checked(i: int, value: Any) -> None:
            slow[0] += 1
            one(raw, i, value, kinds, rows)

        self.filtered += self._plain.run(raw.values, kinds, rows, checked)
        self._seen[1] += len(raw.values) - slow[0]
        if self._plain is not self._typed:
            self._loose_left -= 1
            if self._loose_left <= 0:
                self._plain = self._typed  # try the typed decode again
        elif slow[0] >= _LOOSEN_AT and slow[0] * 8 >= len(raw.values) and not self._meta:
            self._loosen()

    def _loosen(self) -> None:
        """Messages keep failing the typed decode (values needing Flink's coercions):
        read the next batches through the converters alone, then try the typed decode
        again. The results are the same; only the speed differs. (Not with metadata
        columns: the loose plan reads the row images only.)"""
        if self._loose is None:
            skip = self.policy == "skip"
            self._loose = Plan(
                self._columns,
                {},
                [],
                skip,
                self._demanded,
                loose=True,
                default_decimals=self._decimals,
                partial=self.partial,
                before_columns=self._before_columns,
            )
        self._plain, self._loose_left = self._loose, _LOOSE_BATCHES

    def _decode_wrapped(self, raw: RawBatch, kinds: list[int], rows: list[tuple]) -> None:
        """``schema-include``: consecutive messages with the same schema go through that
        schema's compiled loop together; a message that cannot be unwrapped, and
        whatever the loop refuses, goes through ``_one`` in order."""
        outer, values, one = self._outer.decode, raw.values, self._one  # type: ignore[union-attr]
        index: list[int] = []
        payloads: list[msgspec.Raw] = []
        plan: Plan = self._plain
        last: Any = _NO_SCHEMA
        text: str | None = None  # the schema as the 'schema' metadata key reads it

        def flush() -> None:
            if index:
                slow = lambda j, _: one(raw, index[j], values[index[j]], kinds, rows)  # noqa: E731
                self.filtered += plan.run(payloads, kinds, rows, slow, text)
                self._seen[0] += len(index)
                index.clear()
                payloads.clear()

        for i, value in enumerate(values):
            if not value:
                continue  # a tombstone
            try:
                env = outer(value)
                if env.payload is None or env.payload == _NULL:
                    raise Bad("no payload")  # _one names the problem
                if env.schema != last:
                    flush()
                    key = b"null" if env.schema is None else bytes(env.schema)
                    plan, last = self._plan_for(key), env.schema
                    text = key.decode("utf-8", "replace") if key != b"null" else None
            except (msgspec.DecodeError, Bad):
                flush()
                last = _NO_SCHEMA
                one(raw, i, value, kinds, rows)
                continue
            index.append(i)
            payloads.append(env.payload)
        flush()

    def _one(self, raw: RawBatch, i: int, value: Any, kinds: list[int], rows: list[tuple]) -> None:
        try:
            self._decode_one(value, kinds, rows)
        except LogicalMessage:
            self._count_message(raw, i)
        except Bad as bad:
            self._reject(raw, i, value, bad)
        except RecursionError:
            self._reject(raw, i, value, Bad("the JSON is nested too deeply to read"))

    def _count_message(self, raw: RawBatch, i: int) -> None:
        """Count a logical decoding message once, also when its batch is decoded again
        (a source matching rows to records decodes records one at a time)."""
        offset = raw.offsets[i] if i < len(raw.offsets) else -1
        where = (raw.topic, raw.partition)
        if offset < 0 or offset > self._counted.get(where, -1):
            self._counted[where] = offset
            self.logical_messages += 1

    def _decode_one(self, value: Any, kinds: list[int], rows: list[tuple]) -> None:
        plan = self._plain
        schema = None
        if self._include:
            plan, value, schema = self._unwrap(value)
        elif (wrapped := self._enveloped(value)) is not None:
            plan, value, schema = self._unwrapped(wrapped)
        try:
            env = plan.fast.decode(value)
            before = None if env.before is None else plan.read_before(env.before)
            after = None if env.after is None else plan.read(env.after)
        except msgspec.ValidationError:
            env, before, after = self._checked(plan, value)
        except msgspec.DecodeError as exc:
            raise Bad(f"invalid JSON: {exc}") from None
        except CONVERSION_ERRORS:
            env, before, after = self._checked(plan, value)
        op = env.op
        if op == "m":  # a logical decoding message (pg_logical_emit_message): no row change
            raise LogicalMessage
        meta = self._metadata(env, schema) if self._meta else ()
        if op == "c" or op == "r":
            if after is None:
                raise Bad(
                    f'the "after" field of a {"create" if op == "c" else "read"} event is null'
                )
            kinds.append(INSERT)
            rows.append(after + meta)
        elif op == "u":
            if after is None:
                raise Bad('the "after" field of an UPDATE message is null')
            if before is not None and not self._same_key(before, after):
                kinds.append(UPDATE_BEFORE)
                rows.append(before + meta)
            elif before is None and not self.partial:
                raise Bad(REPLICA_IDENTITY.format("UPDATE"), _REPLICA_HINT)
            kinds.append(UPDATE_AFTER)
            rows.append(after + meta)
        elif op == "d":
            if before is None:
                if self.partial:
                    raise Bad(_NO_KEY_DELETE, _NO_KEY_HINT)
                raise Bad(REPLICA_IDENTITY.format("DELETE"), _REPLICA_HINT)
            kinds.append(DELETE)
            rows.append(before + meta)
        elif op == "t" and self.partial:
            kinds.append(DELETE)
            rows.append(TRUNCATED)
            self.truncates += 1
        else:
            raise self._bad_op(op, value)

    def _same_key(self, before: tuple, after: tuple) -> bool:
        """Whether an update's before-image, read for its key alone, holds the
        after-image's key: its -U is then left out (the normalizer reads the two as one
        update of that key)."""
        at = self._key_at
        return bool(at) and all(before[i] == after[i] for i in at)

    def _metadata(self, env: Any, schema: str | None) -> tuple:
        try:
            return tuple([read(env, schema) for read in self._meta])
        except CONVERSION_ERRORS as exc:
            raise Bad(f"a metadata field cannot be read: {exc}") from None

    def _checked(self, plan: Plan, value: Any) -> tuple[Any, tuple | None, tuple | None]:
        env, before, after, nulled = plan.checked(value)
        self.nulled += nulled
        return env, before, after

    def _enveloped(self, value: Any) -> Any:
        """The split envelope when ``value`` is exactly ``{"schema": .., "payload": ..}``
        (a Debezium change event never is), else None; counted for ``_follow_envelope``."""
        try:
            wrapped = self._envelope.decode(value)
        except msgspec.DecodeError:  # also a ValidationError: another key, or one missing
            self._seen[1] += 1
            return None
        self._seen[0] += 1
        return wrapped

    def _unwrap(self, value: Any) -> tuple[Plan, Any, str | None]:
        try:
            outer = self._outer.decode(value)  # type: ignore[union-attr]
        except msgspec.DecodeError as exc:
            raise Bad(f"invalid JSON: {exc}") from None
        if outer.payload is None or bytes(outer.payload) == b"null":
            raise Bad(
                'the message has no "payload" field, though '
                f"'{NAME}.schema-include' = 'true' says every message is wrapped in "
                '{"schema": .., "payload": ..}',
                f"Set '{NAME}.schema-include' = 'false' (or leave it out): deltaflow then "
                "reads messages with and without the envelope",
            )
        return self._unwrapped(outer)

    def _unwrapped(self, outer: Any) -> tuple[Plan, Any, str | None]:
        """The plan of the envelope's schema, its payload, and the schema text."""
        if outer.payload is None or bytes(outer.payload) == b"null":
            raise Bad('the "payload" of the schema envelope is null')
        key = bytes(outer.schema) if outer.schema is not None else b"null"
        plan = self._plan_for(key)
        schema = key.decode("utf-8", "replace") if self._wants_schema and key != b"null" else None
        return plan, outer.payload, schema

    def _plan_for(self, key: bytes) -> Plan:
        plan = self._plans.get(key)
        if plan is None:
            try:
                fields = image_fields(msgspec.json.decode(key))
            except msgspec.DecodeError as exc:
                raise Bad(f'invalid JSON in the "schema" field: {exc}') from None
            logical = logical_fields(fields)
            used = {
                name: logical[name]
                for name, dtype in self._columns
                if name in logical and logical_step(*logical[name], dtype) is not None
            }
            decimals = decimal_encodings(fields, self._columns, self._decimals)
            plain = not used and all(e == self._decimals for e in decimals.values())
            plan = self._plain if plain else self._plan(used, decimals)
            if len(self._plans) >= _PLAN_CACHE:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def _plan(self, logical: dict, decimals: dict[str, str] | None = None) -> Plan:
        """The plan of one schema: its logical types, and the encoding of each DECIMAL
        column (the table's ``decimal-encoding`` where the schema does not say)."""
        skip = self.policy == "skip"
        return Plan(
            self._columns,
            logical,
            self._meta_keys,
            skip,
            self._demanded,
            self._meta,
            prefilter=self._prefilter if self._filtering else None,
            decimals=decimals,
            default_decimals=self._decimals,
            partial=self.partial,
            before_columns=self._before_columns,
        )

    def _bad_op(self, op: Any, value: Any) -> Bad:
        if op is None:
            hint = None
            if not self._include and b'"payload"' in bytes(value):
                hint = f"The message looks wrapped in a schema envelope: set '{NAME}.schema-include' = 'true'"
            return Bad('the message has no "op" field', hint)
        if op == "t":
            return Bad(
                'a truncate ("op" "t"): the message names no rows, and the before-images '
                "are taken from the message",
                _TRUNCATE_HINT,
            )
        return Bad(f'unknown "op" value {msgspec.json.encode(op).decode()}; expected c, r, u or d')

    def _reject(self, raw: RawBatch, i: int, value: bytes, bad: Bad) -> None:
        offset = raw.offsets[i] if i < len(raw.offsets) else -1
        if self.policy == "skip":
            self.skipped += 1
        elif self.policy == "dead-letter":
            self.dead_letters.append((raw.topic, raw.partition, offset, value, bad.reason))
        else:
            raise FormatError(
                f"cannot read the Debezium JSON message: {bad.reason}",
                topic=raw.topic,
                partition=raw.partition,
                offset=offset,
                payload=value,
                hint=bad.hint or _SKIP_HINT,
            )


def make_decoder(name: str, spec: FormatSpec) -> DebeziumJsonDecoder:
    return DebeziumJsonDecoder(spec)


def make_encoder(name: str, spec: FormatSpec):  # noqa: ANN201 - see debezium_encode
    from deltaflow.formats.debezium_encode import DebeziumJsonEncoder

    return DebeziumJsonEncoder(spec)
