"""Option validation of the kafka connector for deltaflow's own table options."""

from __future__ import annotations

import pytest
from connector_helpers import spec

from deltaflow.connectors.base import source_changelog_mode
from deltaflow.formats.changelog import RowKind
from deltaflow.formats.errors import ConnectorError


def test_bucket_key_is_accepted_for_the_delta_join_planner():
    options = {"connector": "kafka", "topic": "t", "format": "debezium-json",
               "properties.bootstrap.servers": "127.0.0.1:1", "bucket.key": "merchant_id"}  # fmt: skip
    table = spec("items", "merchant_id INT, item_id INT", options)
    assert source_changelog_mode(table) == frozenset(RowKind)


def test_a_misspelt_option_is_still_refused_naming_it():
    options = {"connector": "kafka", "topic": "t", "format": "debezium-json", "bucket.keys": "x"}
    with pytest.raises(ConnectorError, match="bucket.keys"):
        source_changelog_mode(spec("items", "merchant_id INT", options))
