"""What real Debezium emitted for the workload: the cases the job tests exist for are there.

These check the capture itself (PostgreSQL and Debezium with its defaults), so that a
change of the workload or of Debezium cannot quietly take away what the jobs must
handle: null before-images under REPLICA IDENTITY DEFAULT, partial delete images, TOAST
placeholders, truncate and message events, base64 decimals that read as numbers.
"""

from __future__ import annotations

import json

import dbz_workload as wl
import pytest
from dbz_census import PLACEHOLDER, census
from dbz_run import COMBOS

# The first test of a session also waits for PostgreSQL and the Debezium capture (setup).
pytestmark = pytest.mark.timeout(600)


def _counts(dbz_capture, combo: str) -> dict:
    engine = combo.rsplit("-", 1)[0]
    return census(dbz_capture / combo, dbz_capture / f"{engine}-schemas")


def test_every_combination_holds_the_same_changes(dbz_capture) -> None:
    """The converter setting changes the bytes, not the changes: per table, the same
    count of each op and of tombstones in all four captures of a database."""
    for identity in wl.DATABASES:
        seen = {}
        for combo, (ident, _mode) in COMBOS.items():
            if ident != identity:
                continue
            counts = _counts(dbz_capture, combo)
            ops = {t.split(".")[-1]: {k: n for k, n in c.items() if k.startswith(("op", "tomb"))}
                   for t, c in counts.items()}  # fmt: skip
            seen[combo] = ops
        first = next(iter(seen.values()))
        assert all(ops == first for ops in seen.values()), seen
        assert first["payments"]["op t"] == 1
        assert first["message"]["op m"] == 1
        assert first["orders"]["op r"] == len([s for s in wl.SNAPSHOT if "INTO orders" in s])


def test_replica_identity_default_gives_null_before_partial_deletes_and_placeholders(
    dbz_capture,
) -> None:
    default = _counts(dbz_capture, "string-noschemas")
    full = _counts(dbz_capture, "full-string-noschemas")
    orders, customers = default["dbz_string.public.orders"], default["dbz_string.public.customers"]
    assert orders["update, before null"] == orders["op u"] > 0
    assert orders["delete, partial before"] == orders["op d"] > 0
    assert customers["placeholder"] >= 3  # two updates and the create of a key update
    for topic, counts in full.items():
        assert counts["update, before null"] == 0, topic
        assert counts["delete, partial before"] == 0, topic
        assert counts["placeholder"] == 0, topic


def test_precise_decimals_without_schemas_are_base64_some_of_which_read_as_numbers(
    dbz_capture,
) -> None:
    counts = _counts(dbz_capture, "precise-noschemas")["dbz_precise.public.orders"]
    assert counts["base64 decimal that reads as a number"] > 0
    path = dbz_capture / "precise-noschemas" / "dbz_precise.public.payments.jsonl"
    amounts = [json.loads(json.loads(ln)["value"])["after"] for ln in path.read_text().splitlines()]
    assert {"amount": "+999"}.items() <= amounts[0].items()  # -2704.67 as Connect bytes
    assert PLACEHOLDER not in path.read_text()
