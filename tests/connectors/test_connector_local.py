"""datagen, print, blackhole, and the factory's option errors."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import pytest
from connector_helpers import read_all, spec

from deltaflow.connectors.base import (
    create_sink,
    create_source,
    sink_accepted_mode,
    source_changelog_mode,
)
from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.errors import ConnectorError

ALL = frozenset(RowKind)


def test_unknown_connector_lists_the_valid_ones():
    with pytest.raises(ConnectorError) as info:
        create_source(spec("t", "a INT", {"connector": "kafak"}))
    text = str(info.value)
    assert "table 't'" in text and "'kafak'" in text and "kafka" in text and "datagen" in text


def test_missing_connector_option():
    with pytest.raises(ConnectorError, match="option 'connector' is required"):
        create_sink(spec("t", "a INT", {}))


def test_print_cannot_be_a_source():
    with pytest.raises(ConnectorError, match="cannot be used as a source"):
        create_source(spec("t", "a INT", {"connector": "print"}))


def test_unknown_option_is_named_with_valid_choices():
    with pytest.raises(ConnectorError) as info:
        create_sink(spec("out", "a INT", {"connector": "print", "print-identifer": "x"}))
    text = str(info.value)
    assert "'print-identifer'" in text and "print-identifier" in text and "table 'out'" in text


def test_print_writes_flink_text_with_identifier():
    out = io.StringIO()
    sink = create_sink(spec("p", "id INT, name STRING, amount DECIMAL(10, 2)",
                            {"connector": "print", "print-identifier": "dbg"}), out=out)  # fmt: skip
    assert sink.accepted_mode == ALL
    sink.write(Batch([0, 1, 2, 3], [(1, "Alice", Decimal("1.50")), (2, None, Decimal("2.00")),
                                    (2, "Bob", Decimal("2.00")), (3, "C", None)]))  # fmt: skip
    sink.flush(1)
    assert out.getvalue().splitlines() == [
        "dbg> +I[1, Alice, 1.50]",
        "dbg> -U[2, null, 2.00]",
        "dbg> +U[2, Bob, 2.00]",
        "dbg> -D[3, C, null]",
    ]


def test_print_without_identifier_has_no_prefix():
    out = io.StringIO()
    sink = create_sink(spec("p", "ts TIMESTAMP(3), ok BOOLEAN", {"connector": "print"}), out=out)
    sink.write(Batch([0], [(dt.datetime(2020, 5, 13, 9, 26, 27, 100000), True)]))
    assert out.getvalue() == "+I[2020-05-13T09:26:27.100, true]\n"


def test_blackhole_accepts_every_kind():
    table = spec("b", "a INT", {"connector": "blackhole"})
    assert sink_accepted_mode(table) == ALL
    sink = create_sink(table)
    sink.write(Batch([0, 3], [(1,), (1,)]))
    sink.flush(1)
    sink.close()


def _datagen(**options):
    opts = {"connector": "datagen", "rows-per-second": "0"}
    opts.update({k.replace("_", "."): v for k, v in options.items()})
    return spec("g", "id BIGINT, name STRING, score DOUBLE", opts)


def test_datagen_sequence_is_bounded_and_ordered():
    table = _datagen(
        **{"fields.id.kind": "sequence", "fields.id.start": "5", "fields.id.end": "2004"}
    )
    assert source_changelog_mode(table) == frozenset({RowKind.INSERT})
    source = create_source(table)
    source.open()
    batch = read_all(source, max_records=300)
    assert [r[0] for r in batch.rows] == list(range(5, 2005))
    assert set(batch.kinds) == {RowKind.INSERT}
    assert source.progress() == (2000, 2000)


def test_datagen_random_respects_ranges_lengths_and_nulls():
    table = _datagen(**{"number-of-rows": "3000", "fields.id.min": "-3", "fields.id.max": "3",
                        "fields.name.length": "7", "fields.score.min": "1", "fields.score.max": "2",
                        "fields.score.null-rate": "0.5", "seed": "11"})  # fmt: skip
    source = create_source(table)
    source.open()
    rows = read_all(source).rows
    assert len(rows) == 3000
    assert {r[0] for r in rows} == set(range(-3, 4))
    assert all(len(r[1]) == 7 for r in rows)
    scores = [r[2] for r in rows]
    nulls = scores.count(None)
    assert 1200 < nulls < 1800
    assert all(1 <= s <= 2 for s in scores if s is not None)


def test_datagen_seed_is_deterministic_and_resumable():
    options = {"number-of-rows": "2500", "seed": "42"}
    first = create_source(_datagen(**options))
    first.open()
    full = read_all(first, max_records=700).rows
    again = create_source(_datagen(**options))
    again.open()
    part = again.poll(1500, 0.1).rows
    resumed = create_source(_datagen(**options))
    resumed.open(again.position())
    rest = read_all(resumed, max_records=333).rows
    assert part + rest == full


def test_datagen_rate_limits_rows_per_second():
    table = spec(
        "g", "id INT", {"connector": "datagen", "rows-per-second": "200", "number-of-rows": "100"}
    )
    source = create_source(table)
    source.open()
    import time

    began = time.monotonic()
    read_all(source, limit_polls=1000, max_records=1000)
    assert time.monotonic() - began >= 0.4


def test_datagen_sequence_needs_start_and_end():
    with pytest.raises(ConnectorError, match="fields.id.end"):
        create_source(_datagen(**{"fields.id.kind": "sequence", "fields.id.start": "1"}))


def test_datagen_field_option_for_unknown_column():
    with pytest.raises(ConnectorError, match="fields.nope.kind"):
        create_source(_datagen(**{"fields.nope.kind": "random"}))


def test_print_standard_error_goes_to_stderr(capsys):
    sink = create_sink(spec("p", "a INT", {"connector": "print", "standard-error": "true"}))
    sink.write(Batch([RowKind.DELETE], [(7,)]))
    sink.flush(1)
    captured = capsys.readouterr()
    assert captured.err == "-D[7]\n" and captured.out == ""


def test_datagen_var_len_draws_lengths_up_to_length():
    table = _datagen(
        **{"number-of-rows": "500", "fields.name.length": "5", "fields.name.var-len": "true"}
    )
    source = create_source(table)
    source.open()
    lengths = {len(r[1]) for r in read_all(source).rows}
    assert lengths == {1, 2, 3, 4, 5}
