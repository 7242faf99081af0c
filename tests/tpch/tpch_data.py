"""TPC-H tables from DuckDB's dbgen as a Debezium change stream, and DuckDB as the judge.

``generate(sf)`` runs ``CALL dbgen(sf = ...)`` (the tpch extension shipped by the PyPI
package ``duckdb-extension-tpch``: no download at run time), then builds per table a list
of Debezium events:

1. a snapshot (``op = r``) of every row except the orders held back for RF1;
2. RF1: the held-back orders (``o_orderkey % 97 = 1``) and their lineitems inserted;
3. updates (``op = u``, with before and after images) of lineitem quantities, discounts
   and ship dates (two rounds, so some rows change twice), order priorities and dates,
   customer balances and segments, part prices and sizes, supply costs and quantities,
   supplier balances;
4. RF2: the orders with ``o_orderkey % 97 = 2`` and their lineitems deleted.

Every change is applied to the DuckDB tables too, which then hold the final snapshot the
queries' final answers are computed from.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import duckdb
import duckdb_extension_tpch

PRIMARY_KEYS = {
    "region": ("r_regionkey",),
    "nation": ("n_nationkey",),
    "supplier": ("s_suppkey",),
    "customer": ("c_custkey",),
    "part": ("p_partkey",),
    "partsupp": ("ps_partkey", "ps_suppkey"),
    "orders": ("o_orderkey",),
    "lineitem": ("l_orderkey", "l_linenumber"),
}
_FLINK_TYPES = {"BIGINT": "BIGINT", "INTEGER": "INT", "DATE": "DATE", "VARCHAR": "STRING"}
_RF1 = {"orders": "o_orderkey % 97 = 1", "lineitem": "l_orderkey % 97 = 1"}
_RF2 = {"orders": "o_orderkey % 97 = 2", "lineitem": "l_orderkey % 97 = 2"}
# (table, rows to change, new values): applied in this order after RF1
_UPDATES = (
    ("lineitem", "l_orderkey % 41 = 3",
     "l_quantity = l_quantity + 1, l_shipdate = l_shipdate + INTERVAL 3 DAY"),
    ("lineitem", "l_orderkey % 41 IN (3, 4)",
     "l_discount = CASE WHEN l_discount >= 0.05 THEN l_discount - 0.01 ELSE l_discount + 0.01 END"),
    ("orders", "o_orderkey % 53 = 5",
     "o_orderpriority = '1-URGENT', o_orderdate = o_orderdate + INTERVAL 20 DAY"),
    ("customer", "c_custkey % 13 = 0", "c_acctbal = c_acctbal + 250, c_mktsegment = 'BUILDING'"),
    ("part", "p_partkey % 17 = 0", "p_retailprice = p_retailprice + 5, p_size = p_size % 50 + 1"),
    ("partsupp", "ps_partkey % 19 = 0",
     "ps_supplycost = ps_supplycost + 3, ps_availqty = ps_availqty + 100"),
    ("supplier", "s_suppkey % 7 = 0", "s_acctbal = s_acctbal - 100"),
)  # fmt: skip


@dataclass
class Dataset:
    con: duckdb.DuckDBPyConnection  # the final snapshot
    columns: dict[str, list[tuple[str, str]]]  # table -> (column, Flink type)
    events: dict[str, list[dict]]  # table -> Debezium events in order

    def ddl(self, table: str, options: str) -> str:
        cols = ", ".join(f"{name} {typ}" for name, typ in self.columns[table])
        pk = ", ".join(PRIMARY_KEYS[table])
        return f"CREATE TABLE {table} ({cols}, PRIMARY KEY ({pk}) NOT ENFORCED) WITH ({options});\n"


def connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    folder = Path(duckdb_extension_tpch.__file__).parent / "extensions"
    con.execute(f"LOAD '{folder / f'v{duckdb.__version__}' / 'tpch.duckdb_extension'}'")
    return con


def generate(sf: float) -> Dataset:
    con = connect()
    con.execute(f"CALL dbgen(sf = {sf})")
    columns = {t: _columns(con, t) for t in PRIMARY_KEYS}
    events: dict[str, list[dict]] = {t: [] for t in PRIMARY_KEYS}
    held = {t: _rows(con, t, cond) for t, cond in _RF1.items()}
    for t, cond in _RF1.items():
        con.execute(f"DELETE FROM {t} WHERE {cond}")
    for t in PRIMARY_KEYS:
        events[t] += [_event("r", None, row) for row in _rows(con, t, "true")]
    for t in ("orders", "lineitem"):
        events[t] += [_event("c", None, row) for row in held[t]]
        _insert(con, t, held[t])
    for t, cond, sets in _UPDATES:
        before = _rows(con, t, cond)
        con.execute(f"UPDATE {t} SET {sets} WHERE {cond}")
        after = {_key(t, r): r for r in _rows(con, t, cond)}
        events[t] += [_event("u", b, after[_key(t, b)]) for b in before]
    for t, cond in _RF2.items():
        events[t] += [_event("d", row, None) for row in _rows(con, t, cond)]
        con.execute(f"DELETE FROM {t} WHERE {cond}")
    return Dataset(con, columns, events)


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    out = []
    for name, typ, *_ in con.execute(f"DESCRIBE {table}").fetchall():
        out.append((name, _FLINK_TYPES.get(typ, typ.replace(",", ", "))))
    return out


def _rows(con: duckdb.DuckDBPyConnection, table: str, cond: str) -> list[dict]:
    cur = con.execute(f"SELECT * FROM {table} WHERE {cond}")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict]) -> None:
    if rows:
        marks = ", ".join("?" for _ in rows[0])
        con.executemany(f"INSERT INTO {table} VALUES ({marks})", [list(r.values()) for r in rows])


def _key(table: str, row: dict) -> tuple:
    return tuple(row[c] for c in PRIMARY_KEYS[table])


def _event(op: str, before: dict | None, after: dict | None) -> dict:
    return {"before": _json_row(before), "after": _json_row(after), "op": op}


def _json_row(row: dict | None) -> dict | None:
    if row is None:
        return None
    return {k: _json_value(v) for k, v in row.items()}


def _json_value(v: object) -> object:
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, dt.date):
        return v.isoformat()
    return v


def encode(event: dict) -> bytes:
    return json.dumps(event, separators=(",", ":")).encode()
