"""The identity of a job's tables, bound to its state directory.

A checkpoint holds source offsets and operator state that are true of the topics,
clusters and decoding they were read with, and nothing else: the same SQL re-pointed
at another topic would resume at offsets of a different log and count rows twice.
The plan's fingerprint (the EXPLAIN text) names no connector option, so the state
directory also records, for every source, looked-up and sink table, what it reads or
writes:

- ``connector``, ``topic`` / ``topic-pattern`` / ``path``, and the bootstrap servers
  the job really uses (``--bootstrap-servers`` included; as a sorted list);
- the format and EVERY option of it: ``format``, ``key.format``, ``value.format`` and
  each option named after one of them (``<format>.*``, ``key.<format>.*``,
  ``value.<format>.*``, ``format.*``), so a new decoding option is covered without a
  list to update; except the options that only decide what happens to a record that
  cannot be read (``POLICY_OPTIONS``), which an operator changes to get past one, and
  credentials (``SECRET_WORDS``: they rotate, and are never stored or printed);
- ``key.fields``, ``key.fields-prefix``, ``value.fields-include``, the primary key and
  the columns with their types.

A start compares it with the stored one and refuses any difference, naming table,
property, old and new value. A directory without a checkpoint takes the job's
identity as it is (a job that failed before its first checkpoint may be fixed and
started again). A directory written before the identity existed is accepted when
its checkpointed offsets name the topics the sources read now, with one line saying
that brokers and formats could not be checked; a source whose checkpoint names
other topics is refused.
"""

from __future__ import annotations

import re
import sys

from deltaflow.formats.errors import StateError
from deltaflow.processor.job_tables import scans_of
from deltaflow.processor.plan import JobPlan, LookupJoin, Node, TableSourceScan
from deltaflow.state.backend import StateBackend
from deltaflow.state.checkpoint import EPOCH_KEY, IDENTITY_KEY, OFFSETS_KEY

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


def changes(stored: Identity, current: Identity) -> list[str]:
    """What differs, one phrase per table property: ``source table 'x': 'topic' was 'a',
    now 'b'``."""
    out = []
    for table in sorted(set(stored) | set(current)):
        old, new = stored.get(table), current.get(table)
        if old is None:
            out.append(f"{table} is new")
        elif new is None:
            out.append(f"{table} is no longer in the job")
        else:
            for prop in sorted(set(old) | set(new)):
                if old.get(prop) != new.get(prop):
                    out.append(f"{table}: {_prop(prop)} {_change(old.get(prop), new.get(prop))}")
    return out


def _prop(prop: str) -> str:
    return prop if " " in prop or prop == "columns" else f"'{prop}'"


def _change(old: str | None, new: str | None) -> str:
    if old is None:
        return f"was not set, now '{new}'"
    if new is None:
        return f"was '{old}', now not set"
    return f"was '{old}', now '{new}'"


def bind_identity(
    backend: StateBackend, plan: JobPlan, bootstrap: str | None, job_file: str | None = None
) -> None:
    """Records the job's table identity in the state directory, or refuses a directory
    whose checkpoint belongs to other tables (see the module docstring)."""
    current = table_identity(plan, bootstrap)
    stored = backend.meta(IDENTITY_KEY)
    checkpointed = backend.meta(EPOCH_KEY) is not None
    if isinstance(stored, dict) and checkpointed:
        found = changes(stored, current)
        if found:
            raise StateError(refusal(backend, found, job_file))
        return
    if checkpointed:  # written by a deltaflow that recorded no identity
        found = _legacy_topic_changes(backend, plan)
        if found:
            raise StateError(refusal(backend, found, job_file))
        print(
            f"deltaflow: state directory {backend.path} was written by an earlier deltaflow "
            "that did not record its tables' topics, brokers and formats; recorded them now "
            "(the topics match its checkpoint; the brokers and formats could not be checked: "
            "if a source now reads another cluster or format, stop and replay into a fresh "
            "--state-dir with --from earliest)",
            file=sys.stderr,
        )
    if stored != current:
        backend.commit({IDENTITY_KEY: current})


def refusal(backend: StateBackend, found: list[str], job_file: str | None = None) -> str:
    return (
        f"state directory {backend.path} holds the checkpoint of a job whose tables were "
        f"different: {'; '.join(found)}. Its offsets and state are true of those tables "
        "only: to run the changed job, replay it into a fresh directory (deltaflow run "
        f"{job_file or 'JOB.sql'} --state-dir NEW_DIR --from earliest), or undo the change "
        "to resume"
    )


def _legacy_topic_changes(backend: StateBackend, plan: JobPlan) -> list[str]:
    """Sources whose checkpointed offsets name topics they no longer read."""
    saved = backend.meta(OFFSETS_KEY) or {}
    out = []
    for scan in scans_of(plan):
        position = saved.get(str(scan.node_id)) if isinstance(saved, dict) else None
        offsets = position.get("offsets") if isinstance(position, dict) else None
        if scan.options.get("connector") not in KAFKA or not isinstance(offsets, dict):
            continue
        foreign = sorted(t for t in offsets if not _reads(scan, t))
        if foreign:
            out.append(
                f"source table '{scan.table}': the checkpoint holds offsets of topic(s) "
                f"{', '.join(repr(t) for t in foreign)}, which it no longer reads"
            )
    return out


def _reads(scan: TableSourceScan, topic: str) -> bool:
    pattern = scan.options.get("topic-pattern")
    if pattern:
        return re.fullmatch(pattern, topic) is not None
    names = [t.strip() for t in scan.options.get("topic", "").split(";")]
    return topic in names
