"""Upsert sources (upsert-kafka) and CDC sources with duplicates get a ChangelogNormalize on their key."""

from __future__ import annotations

from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.catalog import CHANGELOG_FORMATS


def insert_changelog_normalize(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    node.inputs = [insert_changelog_normalize(c, settings) for c in node.inputs]
    if not isinstance(node, L.Scan) or not node.primary_key:
        return node
    duplicates = settings.get("table.exec.source.cdc-events-duplicate", "false").lower() == "true"
    upsert = node.table.connector == "upsert-kafka"
    if upsert or (duplicates and node.table.format in CHANGELOG_FORMATS):
        return L.ChangelogNormalize([node], list(node.fields), key=node.primary_key)
    return node
