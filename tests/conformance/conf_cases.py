"""Cases: a template crossed with seeded histories, as the SQL both engines run.

The same DDL and INSERT text go to Flink and to deltaflow; only the print-identifier
(the case id) tells the cases apart in Flink's shared stdout. Histories are written
once per case into a work directory both engines read.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from conf_histories import (
    CUSTOMERS_DDL_COLUMNS,
    ORDERS_DDL_COLUMNS,
    PAYMENTS_DDL_COLUMNS,
    RATES_DDL_COLUMNS,
    Event,
    customers_history,
    event_line,
    orders_history,
    payments_history,
    rates_history,
    tied,
    write_history,
    write_rows,
)
from conf_templates import TEMPLATES, Template

# Flink session settings for every case. Flink's WatermarkAssigner emits a watermark every
# interval of wall-clock time, and also whenever event time has moved on by more than the
# interval; with ten years neither happens, so, as in deltaflow for files under one poll
# batch, watermarks reach a window only at the end of the input.
FLINK_SETTINGS = {
    "parallelism.default": "1",
    "table.local-time-zone": "UTC",
    "pipeline.auto-watermark-interval": "3650 d",
}
WATERMARK = "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND"
SOURCE_PK = {"orders": "id", "customers": "cid", "payments": "pid"}
_COLUMNS = {
    "orders": ORDERS_DDL_COLUMNS,
    "customers": CUSTOMERS_DDL_COLUMNS,
    "payments": PAYMENTS_DDL_COLUMNS,
    "rates": RATES_DDL_COLUMNS,
}


@dataclass
class Case:
    id: str
    template: Template
    seed: int
    histories: dict[str, list[Event]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.id}-{self.template.name}-s{self.seed}"

    def ddl(self) -> list[str]:
        """CREATE TABLE statements; paths are relative to the work directory."""
        out = []
        for table in self.template.tables:
            columns = list(_COLUMNS[table])
            if table == "orders" and self.template.watermark:
                columns.append(WATERMARK)
            if table == "payments" and self.template.watermark:
                columns.append("WATERMARK FOR paid_at AS paid_at - INTERVAL '1' SECOND")
            if self.template.source_pk:
                columns.append(f"PRIMARY KEY ({SOURCE_PK[table]}) NOT ENFORCED")
            if table == "rates":  # always a versioned table: a key and a watermark
                columns += [
                    "PRIMARY KEY (cur) NOT ENFORCED",
                    "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND",
                ]
            path = f"{self.id}/{table}.json"
            out.append(
                f"CREATE TABLE {table} ({', '.join(columns)}) WITH ('connector' = 'filesystem', "
                f"'path' = '{path}', 'format' = '{self.source_format(table)}')"
            )
        out.append(self.sink_ddl())
        return out

    def source_format(self, table: str) -> str:
        if self.template.append_only or (self.template.append and table == "orders"):
            return "json"
        return "debezium-json"

    def sink_ddl(self) -> str:
        t = self.template
        columns = list(t.sink)
        if t.pk:
            columns.append(f"PRIMARY KEY ({', '.join(t.pk)}) NOT ENFORCED")
        if t.sink_connector == "filesystem":
            options = (f"'connector' = 'filesystem', 'path' = '{self.id}/out', "
                       "'format' = 'json'")  # fmt: skip
        else:
            options = f"'connector' = 'print', 'print-identifier' = '{self.id}'"
        return f"CREATE TABLE sink ({', '.join(columns)}) WITH ({options})"

    @property
    def insert(self) -> str:
        return f"INSERT INTO sink {self.template.select}"

    @property
    def runs(self) -> bool:
        return self.template.compare != "plan"

    def write(self, workdir: Path) -> None:
        folder = workdir / self.id
        folder.mkdir(parents=True, exist_ok=True)
        for table, events in self.histories.items():
            if self.template.append_only:
                write_rows(folder / f"{table}.json", events)
            else:
                plain = self.template.append and table == "orders"
                write_history(folder / f"{table}.json", events, table, plain)

    @property
    def settings(self) -> dict[str, str]:
        extra = {"pipeline.auto-watermark-interval": "1 ms"} if self.template.late else {}
        return {**self.template.settings, **extra}

    @property
    def poll_records(self) -> int | None:
        """deltaflow's source batch size: one row per batch for per-row watermarks."""
        return 1 if self.template.late else None

    def job_sql(self) -> str:
        """The whole job as one SQL script (deltaflow's input, and a regression file's)."""
        sets = [f"SET '{k}' = '{v}';" for k, v in self.settings.items()]
        return "\n".join(sets + [s + ";" for s in self.ddl()] + [self.insert + ";"])

    def flink_request(self) -> dict:
        """What the Flink runner needs; ``inputs`` (a digest of the files) keys the cache."""
        lines = [
            event_line(e, t, i)
            for t, es in sorted(self.histories.items())
            for i, e in enumerate(es)
        ] + (["append-only"] if self.template.append_only else [])
        return {
            "id": self.id,
            "inputs": hashlib.sha256("\n".join(lines).encode()).hexdigest(),
            "ddl": self.ddl(),
            "insert": self.insert,
            "settings": self.settings,
            "run": self.runs,
        }


def _sizes(seed: int) -> tuple[int, int]:
    return 8 + (seed * 7) % 33, 5 + (seed * 5) % 14


def all_cases() -> list[Case]:
    cases = []
    for template in TEMPLATES:
        for seed in range(template.seeds):
            n_orders, n_customers = (n * template.scale for n in _sizes(seed))
            histories = {}
            if "orders" in template.tables:
                histories["orders"] = tied(orders_history(seed, n_orders), template.tie_ms)
            if "payments" in template.tables:
                histories["payments"] = payments_history(seed, n_customers * 2)
            if "rates" in template.tables:
                histories["rates"] = rates_history(seed, n_customers)
            if "customers" in template.tables:
                histories["customers"] = customers_history(seed, n_customers)
            if template.append:  # orders' inserts only, as rows of an append-only source
                histories["orders"] = [e for e in histories["orders"] if e.op == "c"]
            cases.append(Case(f"c{len(cases) + 1:04d}", template, seed, histories))
    return [c for c in cases if _selected(c.template.name)]


def _selected(name: str) -> bool:
    """``DELTAFLOW_CONFORMANCE_ONLY``: comma-separated template name prefixes to run (all if unset)."""
    only = os.environ.get("DELTAFLOW_CONFORMANCE_ONLY", "").strip()
    return not only or any(name.startswith(p.strip()) for p in only.split(","))
