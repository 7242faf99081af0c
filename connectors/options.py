"""Reading a table's WITH options: validation and typed getters with clear errors."""

from __future__ import annotations

import re
from collections.abc import Iterable

from deltaflow.formats.errors import ConnectorError

_DURATION = re.compile(r"(-?\d+)\s*([a-z]*)")
_UNITS_MS = {"": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
             "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
             "min": 60_000, "m": 60_000, "minute": 60_000, "minutes": 60_000,
             "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000}  # fmt: skip


class TableOptions:
    """The WITH options of one table, checked against the options a connector knows.

    ``known`` are exact option names; ``prefixes`` are open families such as
    ``properties.`` or ``fields.``. Any other option is an error naming the table.
    """

    def __init__(
        self,
        table: str,
        connector: str,
        options: dict[str, str],
        known: Iterable[str],
        prefixes: Iterable[str] = (),
    ) -> None:
        self.table = table
        self.connector = connector
        self.options = options
        self.client_conf: dict | None = None  # librdkafka's settings (kafka_client.client_config)
        known = set(known) | {"connector"}
        prefixes = tuple(prefixes)
        for key in options:
            if key not in known and not key.startswith(prefixes):
                valid = sorted(known) + [p + "*" for p in sorted(prefixes)]
                raise self.error(
                    f"unknown option '{key}' for connector '{connector}'; valid options are: "
                    + ", ".join(valid)
                )

    def error(self, message: str) -> ConnectorError:
        return ConnectorError(f"table '{self.table}': {message}")

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.options.get(key, default)

    def required(self, key: str) -> str:
        value = self.options.get(key)
        if value is None or value == "":
            raise self.error(f"option '{key}' is required by connector '{self.connector}'")
        return value

    def choice(self, key: str, choices: Iterable[str], default: str) -> str:
        choices = tuple(choices)
        value = self.options.get(key, default)
        if value not in choices:
            raise self.error(
                f"option '{key}' = '{value}' is not valid; choose one of: " + ", ".join(choices)
            )
        return value

    def integer(
        self, key: str, default: int | None = None, minimum: int | None = None
    ) -> int | None:
        text = self.options.get(key)
        if text is None:
            return default
        try:
            value = int(text.strip())
        except ValueError:
            raise self.error(f"option '{key}' = '{text}' is not an integer") from None
        if minimum is not None and value < minimum:
            raise self.error(f"option '{key}' = '{text}' must be at least {minimum}")
        return value

    def number(self, key: str, default: float | None = None) -> float | None:
        text = self.options.get(key)
        if text is None:
            return default
        try:
            return float(text.strip())
        except ValueError:
            raise self.error(f"option '{key}' = '{text}' is not a number") from None

    def boolean(self, key: str, default: bool = False) -> bool:
        text = self.options.get(key)
        if text is None:
            return default
        lowered = text.strip().lower()
        if lowered not in ("true", "false"):
            raise self.error(f"option '{key}' = '{text}' must be 'true' or 'false'")
        return lowered == "true"

    def duration_ms(self, key: str, default: int) -> int:
        """A Flink duration option: ``10 s``, ``500 ms``, ``5 min``; a bare number is ms."""
        text = self.options.get(key)
        if text is None:
            return default
        match = _DURATION.fullmatch(text.strip().lower())
        if match is None or match.group(2) not in _UNITS_MS:
            raise self.error(
                f"option '{key}' = '{text}' is not a duration; write e.g. '30 s' or '5 min'"
            )
        return int(match.group(1)) * _UNITS_MS[match.group(2)]

    def regex(self, key: str) -> re.Pattern | None:
        """A regular-expression option compiled (None: not set)."""
        text = self.get(key)
        if not text:
            return None
        try:
            return re.compile(text)
        except re.error as err:
            raise self.error(
                f"option '{key}' = '{text}' is not a valid regular expression: {err}"
            ) from None

    def with_prefix(self, prefix: str) -> dict[str, str]:
        """The options starting with ``prefix``, with the prefix stripped."""
        return {k[len(prefix) :]: v for k, v in self.options.items() if k.startswith(prefix)}
