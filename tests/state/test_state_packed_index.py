"""PackedIndex (a secondary index as one entry per index key, its primary keys packed),
appended writes and the state format version, on real LMDB."""

from __future__ import annotations

import lmdb
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from deltaflow.formats.errors import StateError
from deltaflow.formats.types import parse_type
from deltaflow.state.backend import StateBackend
from deltaflow.state.keys import encode_key
from deltaflow.state.lmdb_env import FORMAT_KEY, META_DB
from deltaflow.state.packed_index import PackedIndex
from deltaflow.state.values import decode_value

LINE_TYPES = [parse_type(t) for t in ("BIGINT", "INT", "INT", "STRING")]


@pytest.fixture
def backend(tmp_path):
    with StateBackend(tmp_path / "state") as b:
        yield b


def test_pairs_buffered_then_committed(backend) -> None:
    table = backend.packed_index("ix")
    table.update([], [(b"a", b"2"), (b"a", b"1"), (b"b", b"9")])
    assert table.lookup_many([b"a", b"b", b"c"]) == [[b"1", b"2"], [b"9"], []]
    backend.commit()
    assert not backend.table("ix").has_pending()
    table.update([(b"a", b"1")], [(b"a", b"3"), (b"c", b"0")])
    assert table.lookup_many([b"a", b"b", b"c"]) == [[b"2", b"3"], [b"9"], [b"0"]]
    assert len(table) == 4
    backend.commit()
    assert table.lookup_many([b"a", b"c"]) == [[b"2", b"3"], [b"0"]]
    assert table.pairs() == [(b"a", b"2"), (b"a", b"3"), (b"b", b"9"), (b"c", b"0")]


def test_roll_back_restores_exactly_the_pairs(backend) -> None:
    table = backend.packed_index("ix")
    table.update([], [(b"a", b"1"), (b"a", b"2"), (b"b", b"1")])
    backend.commit()
    # removes one of a's pairs, adds one to a, re-adds a present pair, empties b
    table.update([(b"a", b"1"), (b"b", b"1")], [(b"a", b"5"), (b"a", b"2")])
    backend.commit({"epoch": 2}, undo=True)
    assert table.pairs() == [(b"a", b"2"), (b"a", b"5")]
    # the whole entries of a and b, the header (pair count) and the meta entry
    assert backend.roll_back() == 4
    assert table.pairs() == [(b"a", b"1"), (b"a", b"2"), (b"b", b"1")]
    assert len(table) == 3
    assert backend.meta("epoch") is None


def test_integer_key_index_is_fixed_size_and_keeps_order(tmp_path) -> None:
    rows = [(7, 5, 1, "a"), (-3, 5, 1, "b"), (2**40, 5, 1, "c"), (0, 6, 2, "d"), (9, 5, 1, "e")]
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("lines", [0], {"by_item": [1, 2]}, LINE_TYPES)
        assert b.packed_index("lines#by_item").fixed
        table.apply([INSERT] * len(rows), rows)
        b.commit()
        table.apply([UPDATE_BEFORE, UPDATE_AFTER, DELETE], [rows[0], (7, 6, 2, "a2"), rows[4]])
        expected = [[rows[1], rows[2]], [rows[3], (7, 6, 2, "a2")]]  # primary key order
        assert table.lookup("by_item", [(5, 1), (6, 2)]) == expected
        b.commit()
        assert table.lookup("by_item", [(5, 1), (6, 2)]) == expected
    with StateBackend(tmp_path / "s") as b:  # an untyped reader follows the table's layout
        table = b.indexed("lines", [0], {"by_item": [1, 2]})
        assert table.lookup("by_item", [(6, 2)]) == [[rows[3], (7, 6, 2, "a2")]]


def test_string_key_index_stores_the_encoded_key(backend) -> None:
    types = [parse_type(t) for t in ("STRING", "INT")]
    table = backend.indexed("users", [0], {"by_group": [1]}, types)
    assert not backend.packed_index("users#by_group").fixed
    table.apply([INSERT] * 3, [("bo", 1), ("al", 1), ("cy", 2)])
    backend.commit()
    assert table.lookup("by_group", [(1,), (2,), (3,)]) == [[("al", 1), ("bo", 1)], [("cy", 2)], []]


def test_fixed_index_bytes_per_row(backend) -> None:
    # 20,000 rows under 8,200 index keys (about 2.4 rows a key): a DUPFIXED table took
    # about 40 bytes a row (a sub-page per key); packed, a row costs its 9-byte key plus
    # its share of one entry per index key
    table = backend.indexed("lines", [0], {"by_item": [1, 2]}, LINE_TYPES)
    for start in range(0, 20_000, 1000):
        batch = [(n, n % 200, n % 41, "x") for n in range(start, start + 1000)]
        table.apply([INSERT] * len(batch), batch)
        backend.commit()
    sizes = {name: (entries, size) for name, entries, size in backend.stats()}
    entries, size = sizes["lines#by_item"]
    assert entries == 8_200 + 1  # one entry per index key, and the header
    assert len(backend.packed_index("lines#by_item")) == 20_000
    assert size < 25 * 20_000


def test_variable_length_keys_pack_and_emptied_keys_go(backend) -> None:
    table = backend.packed_index("ix")
    long_key = b"\x03" + b"z" * 400  # a length over one byte
    table.update([], [(b"k", long_key), (b"k", b"\x03a"), (b"k", b"\x01"), (b"m", b"\x03b")])
    backend.commit()
    assert table.lookup_many([b"k", b"m"]) == [[b"\x01", b"\x03a", long_key], [b"\x03b"]]
    # removing an absent pair and adding a present one change nothing
    table.update([(b"k", b"\x03zz"), (b"m", b"\x03b")], [(b"k", b"\x01")])
    assert len(table) == 3
    backend.commit()
    assert table.lookup_many([b"k", b"m"]) == [[b"\x01", b"\x03a", long_key], []]
    sizes = {name: entries for name, entries, _ in backend.stats()}
    assert sizes["ix"] == 2  # k and the header: the emptied key m is deleted
    assert table.committed_len() == 3


def test_puts_around_stored_keys_and_deletes_in_one_commit(backend) -> None:
    table = backend.table("t")
    for key in (10, 20, 30):
        table.put((key,), key)
    backend.commit()
    for key in (5, 20, 25, 30, 31, 40):  # before, equal to, between and past the stored keys
        table.put((key,), -key)
    table.delete((10,))
    backend.commit({"b": 1, "a": 2})
    assert table.items() == [
        ((5,), -5),
        ((20,), -20),
        ((25,), -25),
        ((30,), -30),
        ((31,), -31),
        ((40,), -40),
    ]
    assert (backend.meta("a"), backend.meta("b")) == (2, 1)


def test_older_state_format_is_refused(tmp_path) -> None:
    with StateBackend(tmp_path / "s"):
        pass
    env = lmdb.open(str(tmp_path / "s"), max_dbs=8)
    with env.begin(write=True) as txn:
        txn.put(FORMAT_KEY.encode(), orjson.dumps(1), db=env.open_db(META_DB, txn=txn))
    env.close()
    with pytest.raises(StateError, match="incompatible deltaflow.*state format.*new --state-dir"):
        StateBackend(tmp_path / "s")


def test_rows_are_stored_without_leading_key_columns(tmp_path) -> None:
    types = [parse_type(t) for t in ("INT", "INT", "STRING")]
    rows = [(1, 1, "a"), (1, 2, "b"), (2, 1, "c")]
    with StateBackend(tmp_path / "s") as b:
        # items(merchant, item, name): PK (merchant, item); a bucket index on merchant
        table = b.indexed("items", [0, 1], {"bucket": [0], "by_name": [2]}, types)
        table.apply([INSERT] * 3, rows)
        b.commit()
        stored = b.table("items").get((1, 2))  # the row table holds the rows' bytes
        assert decode_value(stored) == ("b",)  # the key holds the key columns
        assert table.get((1, 2)) == rows[1]
        assert table.get_many([(2, 1), (3, 3)]) == [rows[2], None]
        before, _ = table.apply_changes([UPDATE_BEFORE, UPDATE_AFTER], [rows[0], (1, 1, "z")])
        assert before == {(1, 1): rows[0]}
        b.commit()
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("items", [0, 1], {"bucket": [0], "by_name": [2]})
        assert table.lookup("bucket", [(1,), (2,)]) == [[(1, 1, "z"), rows[1]], [rows[2]]]
        assert table.lookup("by_name", [("c",), ("a",), ("z",)]) == [[rows[2]], [], [(1, 1, "z")]]
        assert table.items() == [((1, 1), (1, 1, "z")), ((1, 2), rows[1]), ((2, 1), rows[2])]


def test_rows_keep_a_key_that_does_not_lead(backend) -> None:
    table = backend.indexed("orders", [1], {"by_customer": [0]})
    table.apply([INSERT] * 2, [("ann", 7, 1.5), ("bob", 3, 2.5)])
    backend.commit()
    assert decode_value(backend.table("orders").get((7,))) == ("ann", 7, 1.5)  # all columns
    assert table.lookup("by_customer", [("ann",), ("bob",)]) == [
        [("ann", 7, 1.5)],
        [("bob", 3, 2.5)],
    ]
    assert table.get((3,)) == ("bob", 3, 2.5)


def test_roll_back_of_a_mirror_restores_rows_and_index(tmp_path) -> None:
    rows = [(1, 5, 1, "a"), (2, 5, 1, "b"), (3, 6, 2, "c")]
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("lines", [0], {"by_item": [1, 2]}, LINE_TYPES)
        table.apply([INSERT] * 3, rows)
        b.commit()
        table.apply(
            [UPDATE_BEFORE, UPDATE_AFTER, DELETE, INSERT],
            [rows[0], (1, 6, 2, "a2"), rows[1], (4, 5, 1, "d")],
        )
        b.commit({"epoch": 2}, undo=True)
        assert table.lookup("by_item", [(5, 1), (6, 2)]) == [
            [(4, 5, 1, "d")],
            [(1, 6, 2, "a2"), rows[2]],
        ]
    with StateBackend(tmp_path / "s") as b:  # a restart rolls the epoch back
        b.roll_back()
        table = b.indexed("lines", [0], {"by_item": [1, 2]}, LINE_TYPES)
        assert table.lookup("by_item", [(5, 1), (6, 2)]) == [[rows[0], rows[1]], [rows[2]]]
        assert table.items() == [((1,), rows[0]), ((2,), rows[1]), ((3,), rows[2])]
        assert len(b.packed_index("lines#by_item")) == 3


PAIR_TYPES = [parse_type(t) for t in ("BIGINT", "INT", "INT", "STRING")]


def test_integer_columns_key_index_packs_encoded_keys_and_keeps_order(tmp_path) -> None:
    """A key of two integer columns (TPC-H lineitem's) is packed as its encoded bytes with
    no length prefix; lookups give rows in primary key order (negative values, values of
    8 bytes), after commits, a restart and for an untyped reader."""
    rows = [(7, 2, 5, "a"), (7, -1, 5, "b"), (-3, 9, 5, "c"), (2**60, 0, 6, "d"), (7, 1, 5, "e")]
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("lines", [0, 1], {"by_part": [2]}, PAIR_TYPES)
        index = b.packed_index("lines#by_part")
        assert (index.fixed, index.int_columns) == (False, 2)
        table.apply([INSERT] * len(rows), rows)
        expected = [sorted([r for r in rows if r[2] == 5]), [rows[3]], []]
        assert table.lookup("by_part", [(5,), (6,), (7,)]) == expected
        b.commit()
        assert table.lookup("by_part", [(5,), (6,), (7,)]) == expected
        table.apply([UPDATE_BEFORE, UPDATE_AFTER, DELETE], [rows[0], (7, 2, 6, "a2"), rows[2]])
        expected = [[rows[1], rows[4]], [(7, 2, 6, "a2"), rows[3]]]
        assert table.lookup("by_part", [(5,), (6,)]) == expected
        b.commit()
        stored = b.read_txn().get(encode_key((5,)), db=b.db(b"lines#by_part", create=False))
        assert stored == encode_key((7, -1)) + encode_key((7, 1))  # no length prefixes
    with StateBackend(tmp_path / "s") as b:  # an untyped reader follows the layout
        table = b.indexed("lines", [0, 1], {"by_part": [2]})
        assert b.packed_index("lines#by_part").int_columns == 2
        assert table.lookup("by_part", [(5,), (6,)]) == expected
        table.apply([INSERT], [(1, 1, 6, "f")])
        assert table.lookup("by_part", [(6,)]) == [[(1, 1, 6, "f"), *expected[1]]]
        assert len(b.packed_index("lines#by_part")) == 5
        b.commit()
        assert b.packed_index("lines#by_part").committed_len() == 5


def test_an_index_of_lengths_keeps_its_layout(tmp_path) -> None:
    """An index written with length-prefixed keys (by an untyped writer, or by a version
    before the integer keys layout) stays so for a typed reader."""
    rows = [(1, 2, 5, "a"), (1, 1, 5, "b"), (2, 1, 6, "c")]
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("lines", [0, 1], {"by_part": [2]})
        assert b.packed_index("lines#by_part").int_columns == 0
        table.apply([INSERT] * 3, rows)
        b.commit()
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("lines", [0, 1], {"by_part": [2]}, PAIR_TYPES)
        index = b.packed_index("lines#by_part")
        assert (index.fixed, index.int_columns) == (False, 0)
        assert table.lookup("by_part", [(5,), (6,)]) == [[rows[1], rows[0]], [rows[2]]]
        table.apply([DELETE, INSERT], [rows[1], (0, 9, 6, "d")])
        b.commit()
        assert table.lookup("by_part", [(5,), (6,)]) == [[rows[0]], [(0, 9, 6, "d"), rows[2]]]
        assert len(b.packed_index("lines#by_part")) == 3


def test_integer_keys_take_fewer_bytes_than_length_prefixed_ones(tmp_path) -> None:
    sizes = []
    for types in (PAIR_TYPES, None):
        with StateBackend(tmp_path / f"s{len(sizes)}") as b:
            table = b.indexed("lines", [0, 1], {"by_part": [2]}, types)
            batch = [(n // 4, n % 4, n % 50, "x") for n in range(20_000)]
            table.apply([INSERT] * len(batch), batch)
            b.commit()
            sizes.append({name: size for name, _, size in b.stats()}["lines#by_part"])
    assert sizes[0] < sizes[1]


int_st = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-300, 300),
    st.integers(-(2**80), 2**80),
)


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(st.tuples(int_st, int_st, int_st), max_size=20, unique=True),
    count=st.integers(0, 2**40),
)
def test_integer_keys_split_back_exactly(keys, count) -> None:
    """Three-column keys packed and split again give the same keys, NULLs and integers
    beyond BIGINT (split by decoding) included; the header gives its count back."""
    codec = PackedIndex.codec_for(3)
    dups = sorted(map(encode_key, keys))
    assert codec.decode(codec.encode(dups)) == dups
    assert codec.count(codec.decode(codec.header(count))) == count
