"""The generated reader of a nested ROW (``json_convert._row_reader``) and the timestamp
fast path give what each field's converter gives on its own: the same value, or the same
refusal, for any JSON value msgspec can hand over."""

from __future__ import annotations

import datetime as dt

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats import json_convert as jc
from deltaflow.formats.types import parse_type

FIELDS = [
    ("b", "BIGINT"), ("i", "INT"), ("t", "TINYINT"), ("s", "STRING"), ("d", "DOUBLE"),
    ("f", "FLOAT"), ("ok", "BOOLEAN"), ("ts", "TIMESTAMP(3)"), ("lt", "TIMESTAMP_LTZ(3)"),
    ("n", "DECIMAL(10, 2)"),
]  # fmt: skip
ROW = parse_type("ROW<" + ", ".join(f"{n} {t}" for n, t in FIELDS) + ">")
STAMPS = st.builds(
    lambda d, sep, frac, z: d.strftime(f"%Y-%m-%d{sep}%H:%M:%S") + frac + z,
    st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)),
    st.sampled_from([" ", "T"]),
    st.sampled_from(["", ".1", ".123", ".123456", ".123456789", ".", ".1234567890", "x"]),
    st.sampled_from(["", "Z"]),
)
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12), STAMPS,
    st.integers(-300, 300).map(str), st.lists(st.integers(), max_size=2),
)  # fmt: skip


def outcome(fn, value):
    try:
        return ("value", fn(value))
    except (ValueError, TypeError, OverflowError) as exc:
        return ("error", type(exc).__name__)


def old_timestamp(dtype, sep: str, ltz: bool):
    """The timestamp reader before the fast path: the Python shape check, then the parse."""
    keep = 10 ** (6 - dtype.precision)

    def read(v):
        body = jc._plain_timestamp(v, sep, ltz)
        if body is None:
            value = jc._timestamp_slow(v, dtype, sep, ltz)
        else:
            value = dt.datetime.fromisoformat(body + "+00:00" if ltz else body)
        if value.microsecond % keep:
            value = value.replace(microsecond=value.microsecond // keep * keep)
        return value

    return read


@pytest.mark.parametrize("iso", [False, True])
@pytest.mark.parametrize("fail_on_missing", [False, True])
@settings(max_examples=300, deadline=None)
@given(record=st.dictionaries(st.sampled_from([n for n, _ in FIELDS] + ["other"]), VALUES))
def test_the_row_reader_gives_each_fields_converter_result(iso, fail_on_missing, record):
    obj = msgspec.json.decode(msgspec.json.encode(record))  # as the format's decoder gives it
    reader = jc.decoder_for(ROW, iso, fail_on_missing)
    convs = [jc.decoder_for(parse_type(t), iso, fail_on_missing) for _, t in FIELDS]
    if fail_on_missing and any(n not in obj for n, _ in FIELDS):
        assert outcome(reader, obj) == ("error", "ValueError")
        return
    want = []
    for (name, _), conv in zip(FIELDS, convs, strict=True):
        got = None if obj.get(name) is None else outcome(conv, obj[name])
        if got is not None and got[0] == "error":
            assert outcome(reader, obj)[0] == "error"
            return
        want.append(None if got is None else got[1])
    assert outcome(reader, obj) == ("value", tuple(want))


def test_a_row_that_is_not_an_object_is_refused():
    reader = jc.decoder_for(ROW, False, False)
    with pytest.raises(TypeError, match="expected a JSON object"):
        reader([1, 2])


@pytest.mark.parametrize("ltz", [False, True])
@pytest.mark.parametrize("iso", [False, True])
@settings(max_examples=300, deadline=None)
@given(value=st.one_of(STAMPS, st.text(max_size=30)))
def test_the_timestamp_fast_path_reads_as_the_shape_check_did(ltz, iso, value):
    dtype = parse_type("TIMESTAMP_LTZ(3)" if ltz else "TIMESTAMP(3)")
    new = jc.decoder_for(dtype, iso, False)
    assert outcome(new, value) == outcome(old_timestamp(dtype, "T" if iso else " ", ltz), value)
