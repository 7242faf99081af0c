"""The text writer of plain JSON records writes the bytes the msgspec struct writer does."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from deltaflow.formats.codec_support import compile_batch_writer
from deltaflow.formats.json_format import JsonEncoder
from deltaflow.formats.json_text import MEMO_LIMIT, compile_text_writer, text_writable
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import DataType, parse_type

TYPES = ["TINYINT", "SMALLINT", "INT", "BIGINT", "BOOLEAN", "STRING", "VARCHAR(5)", "CHAR(3)"]
TYPES += [f"DECIMAL({p}, {s})" for p, s in ((38, 2), (10, 0), (5, 5), (38, 10), (20, 7))]
ESCAPED = re.compile('["\\\\\x00-\x1f]')  # names msgspec refuses to rename to
BOUNDS = {"TINYINT": 7, "SMALLINT": 15, "INT": 31, "BIGINT": 63}
TEXT = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ['"', "\\", "\n\t\b\f\r", "\x00\x1f\x7f", "\u2028\u2029", "é😀", "%s %d %%", "null"]
)


def values_of(dtype: DataType):
    root = dtype.root
    if root in BOUNDS:
        bits = BOUNDS[root]
        return st.integers(-(2**bits), 2**bits - 1)
    if root == "BOOLEAN":
        return st.booleans()
    if root == "DECIMAL":
        digits = st.integers(-(10**dtype.precision) + 1, 10**dtype.precision - 1)
        return digits.map(lambda n: Decimal(n).scaleb(-dtype.scale))
    return TEXT


@st.composite
def schemas_and_rows(draw):
    names = draw(
        st.lists(TEXT.filter(lambda n: not ESCAPED.search(n)), min_size=1, max_size=5, unique=True)
    )
    types = [parse_type(draw(st.sampled_from(TYPES))) for _ in names]
    rows = draw(
        st.lists(st.tuples(*(st.none() | values_of(t) for t in types)), min_size=1, max_size=20)
    )
    kinds = draw(
        st.lists(
            st.sampled_from([INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]),
            min_size=len(rows),
            max_size=len(rows),
        )  # fmt: skip
    )
    positions = draw(st.permutations(range(len(names))))
    return names, types, kinds, rows, positions


def reference(names, types, positions, tombstones):
    """The msgspec struct writer the json format used for every record before."""
    write = msgspec.json.Encoder(decimal_format="number").encode
    ordered = [names[p] for p in positions]
    return compile_batch_writer(ordered, [None] * len(positions), positions, write, tombstones)


@settings(max_examples=300, deadline=None)
@given(schemas_and_rows(), st.booleans())
def test_records_equal_the_struct_writer(case, tombstones) -> None:
    names, types, kinds, rows, positions = case
    ordered_names = [names[p] for p in positions]
    ordered_types = [types[p] for p in positions]
    assert text_writable(ordered_names, ordered_types, plain_decimals=False, omit_nulls=False)
    run = compile_text_writer(ordered_names, ordered_types, positions, tombstones)
    expected = reference(names, types, positions, tombstones)(kinds, rows)
    assert run(kinds, rows) == expected
    for record in filter(None, expected):  # and they are JSON objects of those names
        assert list(json.loads(record)) == ordered_names


@settings(max_examples=100, deadline=None)
@given(schemas_and_rows())
def test_memoised_keys_equal_the_struct_writer_across_batches(case) -> None:
    names, types, kinds, rows, positions = case
    keyed = [p for p in positions if types[p].root in ("INT", "BIGINT", "VARCHAR", "CHAR")]
    if not keyed:
        keyed = [positions[0]]
        types = [parse_type("BIGINT")] * len(types)
        rows = [tuple(range(i, i + len(names))) for i in range(len(rows))]
    run = compile_text_writer([names[p] for p in keyed], [types[p] for p in keyed], keyed,
                              memo=True)  # fmt: skip
    expected = reference(names, types, keyed, False)(kinds, rows)
    assert run(kinds, rows) == expected
    assert run(kinds, rows[::-1]) == expected[::-1]  # the second batch reads the memo


def test_the_key_memo_restarts_past_its_limit() -> None:
    run = compile_text_writer(["id"], [parse_type("BIGINT")], [0], memo=True)
    rows = [(n,) for n in range(MEMO_LIMIT + 2)]
    assert run([INSERT] * len(rows), rows)[-1] == b'{"id":%d}' % (MEMO_LIMIT + 1)
    assert run([INSERT], [(-5,)]) == [b'{"id":-5}']  # a fresh memo still writes keys
    assert run([INSERT], [(7,)]) == [b'{"id":7}']


def test_integer_keys_are_written_directly_and_a_null_by_the_memo_writer() -> None:
    types = [parse_type("BIGINT"), parse_type("INT")]
    run = compile_text_writer(["id", "n"], types, [2, 0], memo=True)
    rows = [(1, "x", 2**40), (-3, "y", 0)]
    expected = [b'{"id":%d,"n":%d}' % (r[2], r[0]) for r in rows]
    assert run([INSERT, DELETE], rows) == expected
    assert run([INSERT], [(None, "z", 5)]) == [b'{"id":5,"n":null}']
    assert run([INSERT, INSERT], rows) == expected  # the direct writer again
    one = compile_text_writer(["id"], types[:1], [1], memo=True)
    assert one([UPDATE_BEFORE, UPDATE_AFTER], [(0, 7), (0, -7)]) == [b'{"id":7}', b'{"id":-7}']


def test_a_null_integer_sends_the_batch_to_the_guarded_writer() -> None:
    run = compile_text_writer(["a", "b"], [parse_type("BIGINT"), parse_type("DECIMAL(10, 2)")],
                              [1, 0], tombstones=True)  # fmt: skip
    rows = [(Decimal("1.50"), 3), (None, None), (Decimal("-0.05"), 4)]
    kinds = [INSERT, UPDATE_AFTER, DELETE]
    assert run(kinds, rows) == [b'{"a":3,"b":1.50}', b'{"a":null,"b":null}', None]
    live = [INSERT, UPDATE_AFTER, UPDATE_AFTER]  # no tombstone in the batch
    assert run(live, rows) == [b'{"a":3,"b":1.50}', b'{"a":null,"b":null}', b'{"a":4,"b":-0.05}']
    assert run(live[:1], rows[:1]) == [b'{"a":3,"b":1.50}']


def test_other_types_and_options_keep_the_struct_writer() -> None:
    assert not text_writable(["x"], [parse_type("DOUBLE")], False, False)
    assert not text_writable(["x"], [parse_type("TIMESTAMP(3)")], False, False)
    assert not text_writable(["x"], [parse_type("DECIMAL(10, 2)")], True, False)  # plain
    assert not text_writable(["x"], [parse_type("INT")], False, True)  # ignore-null-fields
    assert not text_writable(['a"b'], [parse_type("INT")], False, False)  # msgspec refuses
    spec = FormatSpec(
        [("d", parse_type("DECIMAL(10, 2)"))], [], {"encode.decimal-as-plain-number": "true"}
    )
    write = JsonEncoder(spec).batch_writer([0])
    assert write([INSERT], [(Decimal("1E+2"),)]) == [b'{"d":100}']
