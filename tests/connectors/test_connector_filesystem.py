"""The filesystem connector: line source over files and directories, append-only sink."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from connector_helpers import read_all, spec

from deltaflow.connectors.base import create_sink, create_source, sink_accepted_mode
from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.errors import ConnectorError, FormatError
from deltaflow.formats.printing import row_printer

DATA = Path(__file__).parent.parent / "data" / "debezium"
PRODUCTS = "id BIGINT, name STRING, description STRING, weight DECIMAL(10, 2)"


def _products(path: Path, fmt: str = "debezium-json"):
    return spec("products", PRODUCTS, {"connector": "filesystem", "path": str(path), "format": fmt})


def test_debezium_file_matches_flink_changelog():
    source = create_source(_products(DATA / "debezium-data-schema-exclude.txt"))
    source.open()
    batch = read_all(source, max_records=3)
    show = row_printer([t for _, t in _products(DATA).physical])
    got = [show(k, r) for k, r in zip(batch.kinds, batch.rows, strict=True)]
    assert got == (DATA / "debezium-data-schema-exclude.txt.changelog.txt").read_text().splitlines()


def test_directory_reads_files_in_order_skipping_hidden_and_resumes(tmp_path):
    (tmp_path / "a.json").write_text('{"id": 1, "name": "x"}\n\n{"id": 2, "name": "y"}\n')
    (tmp_path / "b.json").write_text('{"id": 3, "name": "z"}')
    (tmp_path / ".hidden").write_text("not json\n")
    (tmp_path / "_SUCCESS").write_text("")
    table = spec(
        "t",
        "id INT, name STRING",
        {"connector": "filesystem", "path": str(tmp_path), "format": "json"},
    )
    first = create_source(table)
    first.open()
    head = first.poll(2, 0.1)
    assert head.rows == [(1, "x")]
    saved = first.position()
    assert saved == {"file": 0, "line": 2}
    first.close()
    second = create_source(table)
    second.open(saved)
    assert read_all(second).rows == [(2, "y"), (3, "z")]


def test_bad_line_error_names_file_and_line(tmp_path):
    path = tmp_path / "in.json"
    path.write_text('{"id": 1}\n{"id": oops}\n')
    source = create_source(
        spec("t", "id INT", {"connector": "filesystem", "path": str(path), "format": "json"})
    )
    source.open()
    with pytest.raises(FormatError) as info:
        read_all(source)
    assert info.value.topic == str(path) and info.value.offset == 2
    assert source.position() == {"file": 0, "line": 0}  # the failed poll returned nothing


def test_sink_is_append_only_and_writes_lines_read_back(tmp_path):
    out = tmp_path / "out"
    table = spec(
        "t", "id INT, name STRING", {"connector": "filesystem", "path": str(out), "format": "json"}
    )
    assert sink_accepted_mode(table) == frozenset({RowKind.INSERT})
    sink = create_sink(table)
    sink.write(Batch([0, 0], [(1, "a"), (2, None)]))
    sink.flush(1)
    sink.close()
    files = list(out.iterdir())
    assert len(files) == 1 and files[0].name.startswith("part-")
    assert [json.loads(x) for x in files[0].read_text().splitlines()] == [
        {"id": 1, "name": "a"}, {"id": 2, "name": None}]  # fmt: skip
    source = create_source(table)
    source.open()
    assert read_all(source).rows == [(1, "a"), (2, None)]


def test_unsupported_format_and_missing_path(tmp_path):
    with pytest.raises(ConnectorError, match="format 'avro'"):
        create_source(_products(tmp_path, fmt="avro"))
    missing = create_source(_products(tmp_path / "nope"))
    with pytest.raises(ConnectorError, match="neither a file nor a directory"):
        missing.open()


def test_copied_file_in_subdirectory_is_found(tmp_path):
    sub = tmp_path / "day=1"
    sub.mkdir()
    shutil.copy(DATA / "debezium-data-schema-exclude.txt", sub / "part-0")
    source = create_source(_products(tmp_path))
    source.open()
    assert len(read_all(source)) == 20


def test_changelog_mode_follows_the_format(tmp_path):
    from deltaflow.connectors.base import source_changelog_mode

    assert source_changelog_mode(_products(tmp_path)) == frozenset(RowKind)
    assert source_changelog_mode(_products(tmp_path, fmt="json")) == frozenset({RowKind.INSERT})
