"""The job settings ``deltaflow run`` reads from ``SET 'key' = 'value'`` statements.

- ``execution.checkpointing.interval`` (Flink's): how often the job checkpoints;
- ``deltaflow.broker.timeout``: how long the job waits out unreachable Kafka brokers
  before it stops with an error (its last checkpoint intact);
- ``deltaflow.unknown-key-delete``: what a delete or update of a primary key a
  changelog source never inserted does (``ignore``, ``count``, ``policy``); read by
  ``deltaflow.processor.runtime.key_presence``;
- ``deltaflow.progress.interval``: how often a job whose stderr is not a terminal logs
  a progress line (events/s, lag, checkpoint age); ``0`` turns it off. By default
  every 30 s for a daemon (a source without an end), never for a bounded job.

Durations are written as in Flink: ``1 s``, ``500 ms``, ``10 min``; a bare number
is milliseconds.
"""

from __future__ import annotations

from deltaflow.formats.errors import DeltaflowError

DEFAULT_CHECKPOINT_MS = 1000
DEFAULT_BROKER_TIMEOUT_MS = 180_000
DEFAULT_PROGRESS_MS = 30_000
UNKNOWN_KEY_DELETE_MODES = ("ignore", "count", "policy")
# Flink's boolean options deltaflow reads; Flink takes 'true' or 'false' in any case.
BOOLEAN_SETTINGS = (
    "table.exec.mini-batch.enabled",
    "table.exec.source.cdc-events-duplicate",
    "table.exec.sink.require-on-conflict",
    "table.optimizer.delta-join.ignore-non-unique-key-filter",
    "table.optimizer.reuse-sub-plan-enabled",
)


def unknown_key_delete_mode(settings: dict[str, str]) -> str:
    """The job's 'deltaflow.unknown-key-delete' mode (planner and runtime read it)."""
    key = "deltaflow.unknown-key-delete"
    value = (settings.get(key) or "ignore").strip().lower()
    if value not in UNKNOWN_KEY_DELETE_MODES:
        raise DeltaflowError(
            f"option '{key}': {value!r} is not one of {', '.join(UNKNOWN_KEY_DELETE_MODES)}; "
            "'policy' applies each source table's bad-input policy"
        )
    return value


def _duration(key: str, value: str) -> None:
    parse_duration_ms(value, key)


def _unknown_key_delete(key: str, value: str) -> None:
    if value.strip().lower() not in UNKNOWN_KEY_DELETE_MODES:
        allowed = ", ".join(f"'{m}'" for m in UNKNOWN_KEY_DELETE_MODES)
        raise DeltaflowError(f"SET '{key}' = '{value}': the value must be one of {allowed}")


# Every deltaflow.* setting and the check of its value: another deltaflow.* key is a typo.
DELTAFLOW_SETTINGS = {
    "deltaflow.broker.timeout": _duration,
    "deltaflow.progress.interval": _duration,
    "deltaflow.unknown-key-delete": _unknown_key_delete,
}


def check_setting(key: str, value: str) -> None:
    """A DeltaflowError for an unknown ``deltaflow.*`` key or a value its option does not
    take (as Flink refuses a boolean option set to anything but 'true' or 'false')."""
    if key.startswith("deltaflow."):
        check = DELTAFLOW_SETTINGS.get(key)
        if check is None:
            known = ", ".join(f"'{k}'" for k in sorted(DELTAFLOW_SETTINGS))
            raise DeltaflowError(f"unknown setting '{key}'; the deltaflow settings are {known}")
        check(key, value)
    elif key in BOOLEAN_SETTINGS and value.strip().lower() not in ("true", "false"):
        raise DeltaflowError(f"SET '{key}' = '{value}': the value must be 'true' or 'false'")


def checkpoint_interval_s(settings: dict[str, str]) -> float:
    text = settings.get("execution.checkpointing.interval")
    if not text:
        return DEFAULT_CHECKPOINT_MS / 1000
    return parse_duration_ms(text, "execution.checkpointing.interval") / 1000


def broker_timeout_s(settings: dict[str, str]) -> float:
    """``deltaflow.broker.timeout``: how long the job waits out unreachable brokers."""
    text = settings.get("deltaflow.broker.timeout")
    if not text:
        return DEFAULT_BROKER_TIMEOUT_MS / 1000
    return max(1, parse_duration_ms(text, "deltaflow.broker.timeout")) / 1000


def progress_interval_s(settings: dict[str, str], daemon: bool) -> float | None:
    """``deltaflow.progress.interval`` in seconds; None: no periodic progress line."""
    text = settings.get("deltaflow.progress.interval")
    if not text:
        return DEFAULT_PROGRESS_MS / 1000 if daemon else None
    return parse_duration_ms(text, "deltaflow.progress.interval") / 1000 or None


_UNITS_MS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "min": 60_000, "m": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}  # fmt: skip


def parse_duration_ms(text: str, option: str) -> int:
    """Flink durations: ``1 s``, ``500ms``, ``10 min``, a bare number is milliseconds."""
    raw = text.strip().lower()
    digits = raw.rstrip("abcdefghijklmnopqrstuvwxyz ").strip()
    unit = raw[len(digits) :].strip() or "ms"
    if not digits.isdigit() or unit not in _UNITS_MS:
        raise DeltaflowError(
            f"option {option!r}: cannot read duration {text!r}; write e.g. '1 s', '500 ms' or '10 min'"
        )
    return int(digits) * _UNITS_MS[unit]
