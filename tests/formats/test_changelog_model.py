import pytest

from deltaflow.formats.changelog import Batch, RowKind, apply_changelog
from deltaflow.formats.types import parse_type


def test_row_kind_short_strings_and_bytes_match_flink():
    assert [k.short for k in RowKind] == ["+I", "-U", "+U", "-D"]
    assert [int(k) for k in RowKind] == [0, 1, 2, 3]
    assert RowKind.parse("-U") is RowKind.UPDATE_BEFORE
    with pytest.raises(ValueError, match="unknown row kind"):
        RowKind.parse("+X")


def test_apply_changelog_is_a_multiset_and_rejects_unknown_retractions():
    b = Batch()
    b.append(RowKind.INSERT, (1, "a"))
    b.append(RowKind.INSERT, (1, "a"))
    b.append(RowKind.UPDATE_BEFORE, (1, "a"))
    b.append(RowKind.UPDATE_AFTER, (1, "b"))
    assert apply_changelog(b.kinds, b.rows) == [(1, "a"), (1, "b")]
    with pytest.raises(ValueError, match="not there"):
        apply_changelog([RowKind.DELETE], [(2, "x")])


@pytest.mark.parametrize(
    "text, printed",
    [
        ("STRING", "STRING"),
        ("VARCHAR(10) NOT NULL", "VARCHAR(10) NOT NULL"),
        ("DECIMAL(10, 2)", "DECIMAL(10, 2)"),
        ("DECIMAL", "DECIMAL(10, 0)"),
        ("INTEGER", "INT"),
        ("TIMESTAMP", "TIMESTAMP(6)"),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP_LTZ(3)"),
        ("ARRAY<BIGINT NOT NULL>", "ARRAY<BIGINT NOT NULL>"),
        ("MAP<STRING, INT>", "MAP<STRING, INT>"),
        ("ROW<a INT, b STRING>", "ROW<`a` INT, `b` STRING>"),
        ("BYTES", "BYTES"),
        ("TIME(3)", "TIME(3)"),
    ],
)
def test_type_strings_round_trip_in_flink_spelling(text, printed):
    assert parse_type(text).sql() == printed


def test_unknown_type_names_the_choices():
    from deltaflow.formats.types import TypeParseError

    with pytest.raises(TypeParseError, match="unknown type 'TEXT'"):
        parse_type("TEXT")


def test_non_numeric_type_parameter_is_a_type_error_not_a_crash():
    from deltaflow.formats.types import TypeParseError

    with pytest.raises(TypeParseError, match="expected a number but found 'ts'"):
        parse_type("TIMESTAMP(ts)")
