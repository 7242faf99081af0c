"""Reading the Prometheus text exposition the metrics endpoint serves, with the checks of
its format that every scrape must pass (a real Prometheus server is not part of the
suite, so the rules it applies are written out here)."""

from __future__ import annotations

import re
import urllib.request

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.eE+]+|NaN|[+-]Inf)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
# the label names a user knows; internal ones (a state table's name, a node id alone) are not
PUBLIC_LABELS = {"table", "topic", "partition", "operator", "operator_id", "policy"}


def scrape(port: int) -> str:
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()


def parse(text: str) -> dict[str, dict]:
    """family name -> {"help", "type", "samples": [(sample name, labels, value)]}, checking
    that every sample follows its family's HELP and TYPE lines, and naming conventions."""
    families: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            assert name not in families, f"family {name} twice"
            assert help_text, f"{name}: empty HELP"
            current = families[name] = {"help": help_text, "type": None, "samples": []}
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            assert current is families.get(name), f"TYPE of {name} not after its HELP"
            current["type"] = kind
        else:
            match = _SAMPLE.match(line)
            assert match, f"not a sample line: {line!r}"
            name, labels, value = match.groups()
            assert current is not None and current["type"], f"{name} before any HELP/TYPE"
            family = next(iter(k for k, v in families.items() if v is current))
            suffixes = ("_sum", "_count") if current["type"] == "summary" else ("",)
            assert name in {family + s for s in suffixes}, f"{name} under family {family}"
            pairs = dict(_LABEL.findall(labels or ""))
            assert set(pairs) <= PUBLIC_LABELS, f"{name}: internal label in {pairs}"
            current["samples"].append((name, pairs, float(value)))
    for name, family in families.items():
        assert name.startswith("deltaflow_"), name
        assert (family["type"] == "counter") == name.endswith("_total"), name
    return families


def sample(families: dict, name: str, **labels) -> float | None:
    """The value of the sample ``name`` with exactly these labels (None: not there)."""
    family = families.get(name) or families[name.rsplit("_", 1)[0]]
    want = {k: str(v) for k, v in labels.items()}
    found = [v for n, got, v in family["samples"] if n == name and got == want]
    return found[0] if found else None
