"""A read position against the range its partition holds.

A checkpointed position can be out of range at a restart: the topic was deleted and
recreated (fewer records: the position lies past the end), or retention deleted records
the job had not read (it lies below the log start). ``'scan.offset-out-of-range'``
says what to do: ``fail`` (the default: stop, naming the partition, the position and
the range), ``earliest`` or ``latest`` (go on from the log start or end, saying how many
offsets that skips). librdkafka's own ``auto.offset.reset`` is ``error`` on every source
consumer, so it never jumps by itself: Kafka answers such a fetch OFFSET_OUT_OF_RANGE,
librdkafka reports it, and the source applies the policy; tansu answers an empty fetch
instead, whose high watermark the source compares with the position.
"""

from __future__ import annotations

import sys

from deltaflow.connectors.options import TableOptions

POLICY_KEY = "scan.offset-out-of-range"
POLICIES = ("fail", "earliest", "latest")


def policy(opts: TableOptions) -> str:
    return opts.choice(POLICY_KEY, POLICIES, "fail")


def note(opts: TableOptions, message: str) -> None:
    """One line on stderr about a table's read (rare events only)."""
    print(f"deltaflow: table '{opts.table}': {message}", file=sys.stderr, flush=True)


def held(low: int, high: int) -> str:
    if high > low:
        return f"offsets {low} to {high - 1}"
    return f"no records (log start and end offset {high})"


def out_of_range(opts: TableOptions, choice: str, tp, offset: int, low: int, high: int) -> int:
    """Where the read of ``tp`` goes on when its checkpointed ``offset`` lies outside
    [``low``, ``high``] (``high``: the log end offset); raises for ``fail``."""
    where = f"the checkpointed offset {offset} of {tp[0]}/{tp[1]}"
    if choice == "fail":
        raise opts.error(
            f"{where} is out of the range the broker holds ({held(low, high)}): the topic "
            "was deleted and recreated, or retention deleted records the job had not read; "
            f"set '{POLICY_KEY}' = 'earliest' (read what the partition holds) or 'latest' "
            "(go on from its end) to go on, or replay into a fresh --state-dir with --from"
        )
    start = low if choice == "earliest" else high
    skipped = start - offset if offset < low else start - low
    note(opts, f"{where} is out of the range the broker holds ({held(low, high)}); "
               f"'{POLICY_KEY}' = '{choice}': going on from offset {start} "
               f"({skipped} offset(s) skipped)")  # fmt: skip
    return start


def past_end(opts: TableOptions, tp, offset: int, high: int) -> Exception:
    """An explicit start offset (``--from offsets:``, ``scan.startup.specific-offsets``)
    past the end of its partition."""
    return opts.error(
        f"start offset {offset} of {tp[0]}/{tp[1]} lies past its end offset {high}; choose "
        f"an offset up to {high}, or start from 'latest'"
    )
