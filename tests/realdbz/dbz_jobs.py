"""The jobs run over real Debezium topics, each with PostgreSQL's query for the same table.

A job is the Flink SQL ``SELECT`` of its ``INSERT INTO sink``, the sink's columns (name
and kind, see ``dbz_compare``), its primary key (an upsert-kafka sink) or none (a
retract sink: kafka with debezium-json), and the PostgreSQL query whose rows, on the
database's final state, the sink's final table must equal. Each PostgreSQL query says
Flink's semantics where they differ from PostgreSQL's (AVG of a DECIMAL(p, s) has scale
max(s, 6) rounded half up; AVG of an INT is the truncated integer quotient).

A variant says how the sources are declared for one capture (``combo``): with
``'debezium-json.schema-include' = 'true'`` over a schema-carrying topic, without it
over the same topic (the envelope recognised by itself), or without it over a
payload-only topic (for ``precise``, with the option saying decimals are base64 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# How a payload-only topic of decimal.handling.mode=precise declares its decimals
# (issue 13 item 3: "a table option says how Debezium encoded NUMERIC").
BASE64_DECIMALS = "'debezium-json.decimal-encoding' = 'base64'"

SOURCES = {
    "customers": """id INT, name STRING, city STRING, vip BOOLEAN, joined DATE, note STRING,
        PRIMARY KEY (id) NOT ENFORCED""",
    "products": """sku STRING, title STRING, price DECIMAL(12, 3), active BOOLEAN,
        description STRING, PRIMARY KEY (sku) NOT ENFORCED""",
    "orders": """id BIGINT, customer_id INT, sku STRING, amount DECIMAL(10, 2), qty INT,
        status STRING, placed TIMESTAMP(6), paid_at TIMESTAMP_LTZ(6), discount DECIMAL(5, 2),
        PRIMARY KEY (id) NOT ENFORCED""",
    "payments": """id INT, order_id BIGINT, amount DECIMAL(10, 2), method STRING,
        PRIMARY KEY (id) NOT ENFORCED""",
}

DELTA_JOIN = "SET 'table.optimizer.delta-join.strategy' = 'FORCE';"
DELTA_AGG = "SET 'table.optimizer.delta-agg.strategy' = 'FORCE';"


@dataclass(frozen=True)
class Variant:
    name: str
    combo: str  # the capture folder ([full-]<decimal mode>-<schemas|noschemas>)
    options: str  # extra format options of every source
    dbname: str  # the PostgreSQL database the capture is of


_INCLUDE = "'debezium-json.schema-include' = 'true'"
_DECLARATIONS = [  # (name, converter, options) per decimal mode
    ("schemas-include", "schemas", _INCLUDE),
    ("schemas-plain", "schemas", ""),
    ("noschemas", "noschemas", None),  # None: the decimals option of the mode
]


def _variants() -> list[Variant]:
    out = []
    for identity, dbname in (("default", "shop"), ("full", "shop_full")):
        for mode in ("precise", "string"):
            engine = mode if identity == "default" else f"full-{mode}"
            for name, conv, options in _DECLARATIONS:
                if options is None:
                    options = BASE64_DECIMALS if mode == "precise" else ""
                out.append(
                    Variant(f"{identity}-{mode}-{name}", f"{engine}-{conv}", options, dbname)
                )
    return out


VARIANTS = _variants()


@dataclass(frozen=True)
class JobCase:
    name: str
    select: str
    columns: list[tuple[str, str]]  # sink columns: name, kind
    key: list[str]  # upsert sink primary key; [] for a retract sink
    postgres: str
    settings: str = ""
    tables: list[str] = field(default_factory=list)


_ORDER_COLS = [("id", "int"), ("customer_id", "int"), ("sku", "str"), ("amount", "dec"),
               ("qty", "int"), ("status", "str"), ("placed", "ts"), ("paid_at", "ltz"),
               ("discount", "dec")]  # fmt: skip
_ORDER_SELECT = "id, customer_id, sku, amount, qty, status, placed, paid_at, discount"
_AGG = [("customer_id", "int"), ("cnt", "int"), ("total", "dec"), ("avg_amount", "dec"),
        ("low", "dec"), ("high", "dec"), ("statuses", "int"), ("avg_qty", "int")]  # fmt: skip
_AGG_FLINK = """customer_id, COUNT(*), SUM(amount), AVG(amount), MIN(amount), MAX(amount),
    COUNT(DISTINCT status), AVG(qty) FROM orders GROUP BY customer_id"""
_AGG_PG = """SELECT customer_id, count(*), sum(amount), round(avg(amount), 6), min(amount),
    max(amount), count(DISTINCT status), (sum(qty) / count(qty))::int
    FROM orders GROUP BY customer_id"""
_JOIN_AGG = [("city", "str"), ("cnt", "int"), ("total", "dec"), ("most", "int")]
_JOIN_AGG_SQL = """c.city, COUNT(*), SUM(o.amount), MAX(o.qty) FROM orders o
    JOIN customers c ON o.customer_id = c.id GROUP BY c.city"""
_JOIN2 = [("id", "int"), ("name", "str"), ("city", "str"), ("amount", "dec"), ("vip", "bool")]
_JOIN2_SQL = (
    "o.id, c.name, c.city, o.amount, c.vip FROM orders o JOIN customers c ON o.customer_id = c.id"
)
_JOIN3 = [("id", "int"), ("name", "str"), ("title", "str"), ("price", "dec"), ("qty", "int")]
_JOIN3_SQL = """o.id, c.name, p.title, p.price, o.qty FROM orders o
    JOIN customers c ON o.customer_id = c.id JOIN products p ON o.sku = p.sku"""
_LEFT = [("cid", "int"), ("name", "str"), ("oid", "int"), ("amount", "dec")]
_LEFT_SQL = (
    "c.id, c.name, o.id, o.amount FROM customers c LEFT JOIN orders o ON o.customer_id = c.id"
)
_PRODUCTS = [("active", "bool"), ("cnt", "int"), ("total", "dec"), ("low", "dec"), ("high", "dec")]
_PRODUCTS_SQL = "active, COUNT(*), SUM(price), MIN(price), MAX(price) FROM products GROUP BY active"
_PAYMENTS = [("method", "str"), ("cnt", "int"), ("total", "dec")]
_PAYMENTS_SQL = "method, COUNT(*), SUM(amount) FROM payments GROUP BY method"
_TOPN = [("customer_id", "int"), ("id", "int"), ("amount", "dec")]
_TOPN_INNER = """SELECT customer_id, id, amount, ROW_NUMBER() OVER (PARTITION BY customer_id
    ORDER BY amount DESC, id) AS rn FROM orders"""
_CUSTOMERS = [("id", "int"), ("name", "str"), ("city", "str"), ("vip", "bool"),
              ("joined", "date"), ("note", "str")]  # fmt: skip


def _case(name, select, columns, key, postgres=None, settings="") -> JobCase:
    tables = [t for t in SOURCES if f" {t}" in f" {select}"]
    return JobCase(name, select, columns, key, postgres or f"SELECT {select}", settings, tables)


BASE = [
    _case(
        "customers_upsert",
        "id, name, city, vip, joined, note FROM customers WHERE id <> 6",
        _CUSTOMERS,
        ["id"],
    ),
    _case("orders_upsert", f"{_ORDER_SELECT} FROM orders WHERE amount < 1000", _ORDER_COLS, ["id"]),
    _case("orders_retract", f"{_ORDER_SELECT} FROM orders WHERE qty > 1", _ORDER_COLS, []),
    _case(
        "payments_upsert",
        "id, order_id, amount, method FROM payments",
        [("id", "int"), ("order_id", "int"), ("amount", "dec"), ("method", "str")],
        ["id"],
    ),
    _case("agg_orders", _AGG_FLINK, _AGG, ["customer_id"], _AGG_PG),
    _case("agg_products", _PRODUCTS_SQL, _PRODUCTS, ["active"]),
    _case("agg_payments", _PAYMENTS_SQL, _PAYMENTS, ["method"]),
    _case("join2", _JOIN2_SQL, _JOIN2, ["id"]),
    _case("join3", _JOIN3_SQL, _JOIN3, ["id"]),
    _case("left_join", _LEFT_SQL, _LEFT, []),
    _case("join_agg", _JOIN_AGG_SQL, _JOIN_AGG, ["city"]),
    _case(
        "topn",
        f"customer_id, id, amount FROM ({_TOPN_INNER}) WHERE rn <= 2",
        _TOPN,
        ["customer_id", "id"],
        f"SELECT customer_id, id, amount FROM ({_TOPN_INNER}) t WHERE rn <= 2",
    ),
]


def _delta(case: JobCase, setting: str, suffix: str) -> JobCase:
    return JobCase(f"{case.name}_{suffix}", case.select, case.columns, case.key, case.postgres,
                   setting, case.tables)  # fmt: skip


_BY_NAME = {c.name: c for c in BASE}
DELTA = [
    *(_delta(_BY_NAME[n], DELTA_JOIN, "delta_join")
      for n in ("join2", "join3", "left_join", "join_agg")),
    *(_delta(_BY_NAME[n], DELTA_AGG, "delta_agg")
      for n in ("agg_orders", "agg_products", "agg_payments")),
]  # fmt: skip
# join_agg has no delta-aggregate form: a delta aggregate reads a source table (through
# projections and filters), and deltaflow's planner refuses FORCE over a join.
JOBS = BASE + DELTA


def job_sql(case: JobCase, variant: Variant, bootstrap: str, topics: dict[str, str],
            sink_topic: str) -> str:  # fmt: skip
    """The job's SQL: its sources over ``topics`` (table -> topic), read to their end."""
    common = f"'properties.bootstrap.servers' = '{bootstrap}'"
    extra = f", {variant.options}" if variant.options else ""
    parts = [case.settings] if case.settings else []
    for table in case.tables:
        parts.append(
            f"CREATE TABLE {table} ({SOURCES[table]}) WITH ('connector' = 'kafka', "
            f"'topic' = '{topics[table]}', {common}, 'scan.startup.mode' = 'earliest-offset', "
            f"'scan.bounded.mode' = 'latest-offset', 'format' = 'debezium-json'{extra});"
        )
    columns = ", ".join(f"{name} {_FLINK_TYPES[kind]}" for name, kind in case.columns)
    sink = f"'topic' = '{sink_topic}', {common}"
    if case.key:
        columns += f", PRIMARY KEY ({', '.join(case.key)}) NOT ENFORCED"
        with_ = (
            f"'connector' = 'upsert-kafka', {sink}, 'key.format' = 'json', 'value.format' = 'json'"
        )
    else:
        with_ = f"'connector' = 'kafka', {sink}, 'format' = 'debezium-json'"
    parts.append(f"CREATE TABLE sink ({columns}) WITH ({with_});")
    parts.append(f"INSERT INTO sink SELECT {case.select};")
    return "\n".join(parts)


_FLINK_TYPES = {"int": "BIGINT", "str": "STRING", "dec": "DECIMAL(38, 6)", "bool": "BOOLEAN",
                "date": "DATE", "ts": "TIMESTAMP(6)", "ltz": "TIMESTAMP_LTZ(6)"}  # fmt: skip
