"""bench.handoff's codecs and ring, and ``python -m bench.second_core`` end to end."""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

import pytest

from bench import second_core
from bench.handoff import CODECS, Ring, check
from deltaflow.formats.changelog import RowKind

SHAPE = "iidst"
ROWS = [
    (1, 10, Decimal("1.10"), "PAID", dt.datetime(2026, 11, 1, 8, 0, 0, 123000)),
    (2, None, Decimal("-0.00"), 'ünï "q"', None),
    (2**62, 3, None, None, dt.datetime(1970, 1, 1)),
    (4, 4, Decimal("12345678901234567890.12"), "", dt.datetime(9999, 12, 31, 23, 59, 59)),
]
KINDS = [RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, 3]


@pytest.mark.parametrize("name", sorted(CODECS))
def test_codec_gives_back_the_rows_with_their_types_and_exponents(name):
    codec = CODECS[name](SHAPE)
    kinds, rows = codec.unpack(codec.pack(KINDS, ROWS))
    assert list(kinds) == [0, 1, 2, 3]
    assert [tuple(r) for r in rows] == ROWS
    assert [str(r[2]) for r in rows] == ["1.10", "-0.00", "None", "12345678901234567890.12"]
    assert [type(v) for v in rows[0]] == [int, int, Decimal, str, dt.datetime]
    check(codec, KINDS, ROWS)  # the bench's own check agrees


@pytest.mark.parametrize("name", sorted(CODECS))
def test_codec_keeps_columns_that_are_all_null_and_empty_batches(name):
    codec = CODECS[name](SHAPE)
    rows = [(1, None, None, None, None), (2, None, None, None, None)]
    assert [tuple(r) for r in codec.unpack(codec.pack([0, 0], rows))[1]] == rows
    assert [list(x) for x in codec.unpack(codec.pack([], []))] == [[], []]


def test_ring_hands_batches_to_another_process_in_order():
    ring = Ring(slots=2, size=1 << 16)
    codec = CODECS["msgpack"](SHAPE)
    batches = [(KINDS[:n], ROWS[:n]) for n in (1, 4, 2, 3, 4)]  # more batches than slots
    pid = os.fork()
    if pid == 0:
        try:
            for kinds, rows in batches:
                ring.put(codec.pack(kinds, rows))
            ring.end()
        finally:
            os._exit(0)
    got = []
    while True:
        slot, view = ring.get()
        if view is None:
            break
        kinds, rows = codec.unpack(view)
        ring.release(slot, view)
        got.append((list(kinds), [tuple(r) for r in rows]))
    os.waitpid(pid, 0)
    ring.close(unlink=True)
    assert got == [([int(k) for k in kinds], rows) for kinds, rows in batches]


def test_ring_refuses_a_batch_larger_than_its_slot():
    ring = Ring(slots=1, size=64)
    try:
        with pytest.raises(ValueError, match="exceeds the slot"):
            ring.put(b"x" * 65)
    finally:
        ring.close(unlink=True)


def test_bench_runs_end_to_end_on_the_real_codecs(tmp_path, capsys):
    out = tmp_path / "results.json"
    args = ["--orders", "3000", "--items", "300", "--repeat", "1", "--pipeline-repeat", "1",
            "--codecs", "msgpack", "--pipeline-codecs", "msgpack", "--pipeline-tasks", "decode W3", "--results", str(out)]  # fmt: skip
    assert second_core.main(args) == 0
    results = json.loads(out.read_text())
    costs = {(c["task"], c["codec"]): c for c in results["costs"]}
    # 3,000 changes: about 25% creates (+I), 70% updates (-U, +U), 5% deletes (-D)
    rows = costs[("decode W3", "single")]["rows"]
    assert 3000 * 1.5 < rows < 3000 * 1.9
    assert {p["scenario"] for p in results["pipelines"]} == {"single", "msgpack"}
    assert {p["other_core"] for p in results["pipelines"]} == {"free", "busy"}
    assert all(p["worker_cpu_s"] > 0 for p in results["pipelines"] if p["scenario"] != "single")
    assert "| decode W3 |" in capsys.readouterr().out
