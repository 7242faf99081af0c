"""Upsert sources (upsert-kafka) and CDC sources that may repeat events
(``table.exec.source.cdc-events-duplicate``) get a ChangelogNormalize on their primary key,
which turns them into a full changelog. Under it, as in Flink, a source that emits -U rows
gets a DropUpdateBefore: the normalizer keeps the last row per key and needs only +U."""

from __future__ import annotations

from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.catalog import CHANGELOG_FORMATS


def insert_changelog_normalize(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    node.inputs = [insert_changelog_normalize(c, settings) for c in node.inputs]
    if not isinstance(node, L.Scan) or not node.primary_key:
        return node
    duplicates = settings.get("table.exec.source.cdc-events-duplicate", "false").lower() == "true"
    if node.table.connector == "upsert-kafka":
        return L.ChangelogNormalize([node], list(node.fields), key=node.primary_key)
    if duplicates and node.table.format in CHANGELOG_FORMATS:
        drop = L.DropUpdateBefore([node], list(node.fields))
        return L.ChangelogNormalize([drop], list(node.fields), key=node.primary_key)
    return node
