"""What a capture holds, counted per converter/decimal combination and table.

``census(folder)`` reads ``folder/<topic>.jsonl`` (as ``dbz_capture.py`` writes them) and
counts, per table: each ``op`` value, tombstones, updates whose ``before`` is null,
deletes whose before-image is not the row the table last had for that key (under
REPLICA IDENTITY DEFAULT only the key is real), Debezium's placeholder for an unavailable
TOAST value, and decimals sent as base64 bytes (and of those, how many also read as a
number), and the headers Debezium sets on the records of a primary-key change
(``__debezium.newkey`` on the delete and its tombstone, ``__debezium.oldkey`` on the
create). ``python dbz_census.py CAPTURE`` prints it as a Markdown table.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

PLACEHOLDER = "__debezium_unavailable_value"
DECIMAL = "org.apache.kafka.connect.data.Decimal"
NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def read(path: Path) -> list[tuple[str | None, str | None, list]]:
    lines = [json.loads(ln) for ln in path.read_text().splitlines() if ln]
    return [(ln["key"], ln["value"], ln.get("headers", [])) for ln in lines]


def payload(text: str | None) -> dict | None:
    """The Debezium message of a record value, without the Connect envelope if it has one."""
    if text is None:
        return None
    message = json.loads(text)
    if isinstance(message, dict) and set(message) == {"schema", "payload"}:
        return message["payload"]
    return message


def decimal_fields(text: str) -> set[str]:
    """The row fields a schema-carrying value declares as Connect decimals (bytes)."""
    schema = json.loads(text)["schema"]
    rows = [f for f in schema["fields"] if f["field"] in ("before", "after")]
    return {c["field"] for f in rows[:1] for c in f["fields"] if c.get("name") == DECIMAL}


def census_topic(records: list, decimals: set[str]) -> Counter:
    counts: Counter = Counter()
    last: dict[str, dict] = {}
    for key, value, headers in records:
        names = {name for name, _ in headers}
        counts["header __debezium.oldkey"] += "__debezium.oldkey" in names
        counts["header __debezium.newkey"] += "__debezium.newkey" in names
        message = payload(value)
        if message is None:
            counts["tombstone"] += 1
            continue
        op = message["op"]
        counts[f"op {op}"] += 1
        before, after = message.get("before"), message.get("after")
        if op == "u" and before is None:
            counts["update, before null"] += 1
        if op == "d" and _differs(before or {}, last.get(key) or {}):
            counts["delete, partial before"] += 1
        for image in (before, after):
            for name, field in (image or {}).items():
                counts["placeholder"] += field == PLACEHOLDER
                if name in decimals and isinstance(field, str) and not _plain(field):
                    counts["base64 decimal"] += 1
                    counts["base64 decimal that reads as a number"] += bool(NUMBER.match(field))
        if after is not None:
            last[key] = after
        if op == "t":
            last.clear()
    return +counts


def _differs(image: dict, row: dict) -> bool:
    """Whether a before-image is not the row (a column added since the row was last
    written is null in the row)."""
    return any(image.get(name) != row.get(name) for name in image.keys() | row.keys())


def _plain(text: str) -> bool:
    """A decimal written as a number (string mode), not base64: digits, a point, a sign."""
    return bool(re.fullmatch(r"-?\d+(\.\d+)?", text)) and "." in text


def census(folder: Path, schemas_folder: Path) -> dict[str, Counter]:
    """Counts per topic file of ``folder``; decimal fields are read off the same topic in
    ``schemas_folder`` (the schema-carrying capture of the same decimal mode)."""
    out = {}
    for path in sorted(folder.glob("*.jsonl")):
        schemas = read(schemas_folder / path.name)
        first = next((v for _, v, _ in schemas if v is not None and '"before"' in v), None)
        decimals = decimal_fields(first) if first else set()
        out[path.stem] = census_topic(read(path), decimals)
    return out


def markdown(capture: Path) -> str:
    lines = []
    for combo in sorted(p.name for p in capture.iterdir() if p.is_dir() and "schemas" in p.name):
        engine = combo.rsplit("-", 1)[0]
        counts = census(capture / combo, capture / f"{engine}-schemas")
        lines.append(f"\n### {combo}\n")
        kinds = sorted({k for c in counts.values() for k in c})
        lines.append("| topic | " + " | ".join(kinds) + " |")
        lines.append("|---" * (len(kinds) + 1) + "|")
        for topic, c in counts.items():
            lines.append(f"| {topic} | " + " | ".join(str(c.get(k, 0)) for k in kinds) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(Path(sys.argv[1])))
