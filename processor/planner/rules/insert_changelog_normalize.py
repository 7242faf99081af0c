"""Changelog normalization on a primary key.

Upsert sources (upsert-kafka) and CDC sources that may repeat events
(``table.exec.source.cdc-events-duplicate``) get a ChangelogNormalize on their primary key,
which turns them into a full changelog. Under it, as in Flink, a source that emits -U rows
gets a DropUpdateBefore: the normalizer keeps the last row per key and needs only +U.

A Kafka (or filesystem) table read with debezium-json or debezium-avro-confluent that has
a PRIMARY KEY takes its before-images from state by default (``'<format>.before-image' =
'state'``, ``Scan.normalize``): the source keeps the last row per key and derives every -U
and -D from it (``processor/runtime/normalize.py``), so the result is exact whatever the
database's REPLICA IDENTITY; decided when the scan is bound (``scan.py``: every INSERT
shares the scan, so no rule changes it); EXPLAIN shows it as ``ChangelogNormalize(key=[..],
beforeImage=[state])`` above the scan. ``'message'`` takes them from the messages, as Flink
does. With ``cdc-events-duplicate`` the plan keeps Flink's ChangelogNormalize as well (the
source's normalization already drops repeated events; the second one changes nothing).
"""

from __future__ import annotations

from deltaflow.formats.errors import PlanError
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.catalog import CHANGELOG_FORMATS, Table

# formats whose source can take before-images from state
STATE_FORMATS = ("debezium-json", "debezium-avro-confluent")


def insert_changelog_normalize(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    node = L.with_inputs(node, [insert_changelog_normalize(c, settings) for c in node.inputs])
    if not isinstance(node, L.Scan):
        return node
    if not node.primary_key:
        return node
    duplicates = settings.get("table.exec.source.cdc-events-duplicate", "false").lower() == "true"
    if node.table.connector == "upsert-kafka":
        return L.ChangelogNormalize([node], list(node.fields), key=node.primary_key)
    if duplicates and node.table.format in CHANGELOG_FORMATS:
        drop = L.DropUpdateBefore([node], list(node.fields))
        return L.ChangelogNormalize([drop], list(node.fields), key=node.primary_key)
    return node


def before_image_from_state(table: Table) -> bool:
    """Whether the table's source takes before-images from state (module docstring)."""
    fmt = table.format
    if fmt not in STATE_FORMATS or table.connector not in ("kafka", "filesystem"):
        return False
    prefix = f"{fmt}." if table.options.get("format") else f"value.{fmt}."
    option = prefix + "before-image"
    chosen = table.options.get(option, "").strip().lower()
    if chosen not in ("", "state", "message"):
        raise PlanError(
            f"table {table.name}: option '{option}' = '{table.options[option]}' is not one of "
            "'state' (before-images from the rows kept per primary key) or 'message'"
        )
    if chosen == "message":
        return False
    fits = bool(table.primary_key) and table.options.get("value.fields-include") != "EXCEPT_KEY"
    if chosen == "state" and not fits:
        raise PlanError(
            f"table {table.name}: '{option}' = 'state' keeps the last row per primary key, and "
            "the table has "
            + (
                "its key columns outside the message value ('value.fields-include' = 'EXCEPT_KEY')"
                if table.primary_key
                else "no PRIMARY KEY; declare it with PRIMARY KEY (...) NOT ENFORCED"
            )
        )
    return fits
