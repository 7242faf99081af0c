"""The one error hierarchy of deltaflow.

It lives in ``formats`` because that is the bottom layer: every other package may
import it. Every error a user can cause carries where it happened and what to do.
"""

from __future__ import annotations


class DeltaflowError(Exception):
    """Root of every error deltaflow raises on purpose. The CLI prints ``str(err)``."""


class FormatError(DeltaflowError):
    """A message that cannot be decoded (or a row that cannot be encoded)."""

    def __init__(
        self,
        reason: str,
        *,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
        payload: bytes | str | None = None,
        hint: str | None = None,
    ) -> None:
        self.reason = reason
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.payload = payload
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.topic is not None:
            where = f"topic {self.topic!r}"
            if self.partition is not None:
                where += f" partition {self.partition}"
            if self.offset is not None:
                where += f" offset {self.offset}"
            where += ": "
        text = where + self.reason
        if self.payload is not None:
            text += f" (payload: {excerpt(self.payload)})"
        if self.hint:
            text += f". {self.hint}"
        return text

    def located(self, topic: str, partition: int | None, offset: int | None) -> FormatError:
        """The same error, placed at a topic/partition/offset."""
        return FormatError(
            self.reason,
            topic=topic,
            partition=partition,
            offset=offset,
            payload=self.payload,
            hint=self.hint,
        )


class SqlError(DeltaflowError):
    """Wrong or unsupported SQL; carries line and column (1-based) and a highlight."""

    def __init__(self, message: str, line: int = 0, col: int = 0, highlight: str = "") -> None:
        self.message = message
        self.line = line
        self.col = col
        self.highlight = highlight
        where = f"SQL line {line}, column {col}: " if line else ""
        super().__init__(where + message)


class PlanError(DeltaflowError):
    """A query that parses but cannot run as asked; carries the node and rendered plan."""

    def __init__(self, message: str, node: str = "", plan: str = "") -> None:
        self.message = message
        self.node = node
        self.plan = plan
        text = message
        if plan:
            text += "\n\n" + plan
        super().__init__(text)


class StateError(DeltaflowError):
    """A state directory that cannot be used (incompatible job, full disk, corruption)."""


class ConnectorError(DeltaflowError):
    """A source or sink that cannot be opened or used (bad options, broker down)."""


def excerpt(payload: bytes | str, limit: int = 120) -> str:
    """A short printable excerpt of a payload for error messages."""
    if isinstance(payload, bytes):
        payload = payload.decode("utf-8", errors="replace")
    if len(payload) > limit:
        return repr(payload[:limit]) + f"... ({len(payload)} chars)"
    return repr(payload)
