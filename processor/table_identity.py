"""What a job's tables read and write, as the state directory records it
(``processor/identity.py`` binds it to the state; ``planner/fingerprint.py`` hashes it
into the plan's fingerprint). A module of its own so that both can use it without the
planner importing the state binding."""

from __future__ import annotations

from deltaflow.processor.job_tables import scans_of
from deltaflow.processor.plan import JobPlan, LookupJoin, Node

KAFKA = ("kafka", "upsert-kafka")
ADDRESS_OPTIONS = ("connector", "topic", "topic-pattern", "path")
LAYOUT_OPTIONS = ("key.fields", "key.fields-prefix", "value.fields-include")
FORMAT_KEYS = ("format", "key.format", "value.format")
# Options that only decide whether an unreadable record stops the job: not identity.
POLICY_OPTIONS = ("ignore-parse-errors", "fail-on-missing-field")
# Credentials (a schema registry's basic-auth.user-info, bearer-auth.token, ...) rotate and
# change no decoding; they are never stored or printed either.
SECRET_WORDS = ("auth", "password", "secret", "token", "credential", "user-info")

Identity = dict[str, dict[str, str]]

def table_identity(plan: JobPlan, bootstrap: str | None) -> Identity:
    """``{"source table 'x'": {property: value}, ...}`` for every table of the plan."""
    out: Identity = {}
    for scan in scans_of(plan):
        out[f"source table '{scan.table}'"] = _describe(scan, scan.options, bootstrap)
    for node in _lookups(plan):
        out[f"looked-up table '{node.table}'"] = _describe(node, node.options, bootstrap)
    for sink in plan.sinks:
        out[f"sink table '{sink.table}'"] = _describe(sink, sink.options, bootstrap)
    return out


def _describe(node: Node, options: dict[str, str], bootstrap: str | None) -> dict[str, str]:
    props = {k: options[k] for k in (*ADDRESS_OPTIONS, *LAYOUT_OPTIONS) if k in options}
    if options.get("connector") in KAFKA:
        servers = bootstrap or options.get("properties.bootstrap.servers", "")
        props["bootstrap servers"] = ",".join(sorted(s.strip() for s in servers.split(",")))
    props.update({k: v for k, v in options.items() if _is_format_option(k, options)})
    props["columns"] = ", ".join(_columns(node))
    key = getattr(node, "primary_key", ())
    if key:
        props["primary key"] = ", ".join(key)
    return props


def _is_format_option(key: str, options: dict[str, str]) -> bool:
    if key in FORMAT_KEYS or key.startswith("format."):
        return True
    prefixes = [f"{options[k]}." for k in FORMAT_KEYS if options.get(k)]
    prefixes += [f"key.{options['key.format']}."] if options.get("key.format") else []
    prefixes += [f"value.{options['value.format']}."] if options.get("value.format") else []
    hit = next((p for p in prefixes if key.startswith(p)), None)
    if hit is None or key[len(hit) :] in POLICY_OPTIONS:
        return False
    return not any(word in key for word in SECRET_WORDS)


def _columns(node: Node) -> list[str]:
    fields = getattr(node, "physical", None) or getattr(node, "table_fields", None) or ()
    out = [f"{f.name} {f.type.sql()}" for f in fields]
    for column, key, dtype in getattr(node, "metadata", ()):
        out.append(f"{column} {dtype.sql()} METADATA FROM '{key}'")
    return out


def _lookups(plan: JobPlan) -> list[LookupJoin]:
    seen: dict[str, LookupJoin] = {}
    stack: list[Node] = list(plan.sinks)
    while stack:
        node = stack.pop()
        if isinstance(node, LookupJoin):
            seen.setdefault(node.table, node)
        stack.extend(node.inputs)
    return [seen[k] for k in sorted(seen)]
