"""The PostgreSQL workload Debezium captures: a schema, rows that exist before Debezium
starts (its snapshot) and the changes streamed after it, each statement in its own
transaction unless grouped in a BEGIN ... COMMIT block.

- ``customers`` and ``orders``: PostgreSQL's default REPLICA IDENTITY (the key only in
  the WAL's old tuple); ``products`` and ``payments``: REPLICA IDENTITY FULL.
- ``customers.note`` and ``products.description``: text of 3,000 random characters with
  ``STORAGE EXTERNAL``, so it is stored out of line (TOAST), and later UPDATEs leave it
  alone (Debezium then has no value for it under DEFAULT: its placeholder).
- NUMERIC amounts and prices, some negative and some whose two's-complement bytes in
  base64 also read as a number (-2704.67 is ``+999``, -31259.64 is ``0E00``,
  -15813.22 is ``5972``, -2339.338 is ``3E32``).
- primary-key updates, deletes and re-inserts of the same key, multi-row UPDATEs,
  ``ALTER TABLE orders ADD COLUMN discount`` mid-stream, a TRUNCATE of ``payments``, a
  logical decoding message, and last a row in ``marker`` that tells the capture the
  stream is complete.
"""

from __future__ import annotations

import random

TABLES = ("customers", "products", "orders", "payments")
MARKER_TOPIC = ".public.marker"
# The workload runs in two databases: ``shop`` as described above (mixed identities) and
# ``shop_full``, where customers and orders are REPLICA IDENTITY FULL too.
DATABASES = {"default": "shop", "full": "shop_full"}
PREFIXES = {"default": "dbz", "full": "dbzfull"}


def topic(identity: str, mode: str, table: str) -> str:
    """Debezium's topic of ``table`` in the database of ``identity`` for the engine of
    decimal mode ``mode`` (each engine has its own topic prefix)."""
    return f"{PREFIXES[identity]}_{mode}.public.{table}"


def schema(identity: str) -> list[str]:
    full = [
        "ALTER TABLE customers REPLICA IDENTITY FULL",
        "ALTER TABLE orders REPLICA IDENTITY FULL",
    ]
    return SCHEMA + (full if identity == "full" else [])


def _text(seed: int) -> str:
    """3,000 characters that compress poorly (so they stay large) and repeat nowhere."""
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:-"
    return "".join(rng.choice(alphabet) for _ in range(3000))


SCHEMA = [
    """CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL,
       city varchar(40) NOT NULL, vip boolean NOT NULL DEFAULT false, joined date NOT NULL,
       note text NOT NULL)""",
    "ALTER TABLE customers ALTER COLUMN note SET STORAGE EXTERNAL",
    """CREATE TABLE products (sku varchar(20) PRIMARY KEY, title text NOT NULL,
       price numeric(12,3) NOT NULL, active boolean NOT NULL, description text)""",
    "ALTER TABLE products ALTER COLUMN description SET STORAGE EXTERNAL",
    "ALTER TABLE products REPLICA IDENTITY FULL",
    """CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int NOT NULL,
       sku varchar(20) NOT NULL, amount numeric(10,2) NOT NULL, qty int NOT NULL,
       status varchar(20) NOT NULL, placed timestamp NOT NULL, paid_at timestamptz)""",
    """CREATE TABLE payments (id int PRIMARY KEY, order_id bigint NOT NULL,
       amount numeric(10,2) NOT NULL, method text NOT NULL)""",
    "ALTER TABLE payments REPLICA IDENTITY FULL",
    "CREATE TABLE marker (id int PRIMARY KEY, note text)",
]

_CITIES = ["Paris", "Lyon", "Oslo", "Lima", "Kyoto", "Quito"]
_STATUSES = ["new", "paid", "shipped", "returned"]
_AMOUNTS = ["12.50", "-2704.67", "99.99", "-31259.64", "0.01", "250.00", "-15813.22", "7.35",
            "1234.56", "-0.50", "42.00", "310.10", "-21384.39", "5.05", "88.80"]  # fmt: skip


def _customer(i: int, city: str | None = None) -> str:
    city = city or _CITIES[i % len(_CITIES)]
    return (f"INSERT INTO customers VALUES ({i}, 'customer {i}', '{city}', {i % 3 == 0}, "
            f"DATE '2024-01-01' + {i * 37}, '{_text(i)}')")  # fmt: skip


def _product(i: int, price: str) -> str:
    return (f"INSERT INTO products VALUES ('P-{i}', 'product {i}', {price}, {i % 4 != 0}, "
            f"'{_text(1000 + i)}')")  # fmt: skip


def _order(i: int, customer: int, sku: int, status: str | None = None, discount: str = "") -> str:
    amount = _AMOUNTS[i % len(_AMOUNTS)]
    status = status or _STATUSES[i % len(_STATUSES)]
    paid = f"TIMESTAMPTZ '2025-03-{1 + i % 27:02d} 10:{i % 60:02d}:05.123456+02'"
    paid = "NULL" if i % 5 == 0 else paid
    return (f"INSERT INTO orders VALUES ({i}, {customer}, 'P-{sku}', {amount}, {1 + i % 4}, "
            f"'{status}', TIMESTAMP '2025-02-{1 + i % 27:02d} 08:30:{i % 60:02d}.5', {paid}"
            f"{discount and ', ' + discount})")  # fmt: skip


_PRICES = ["19.990", "-1581.322", "5.000", "-2339.338", "120.125", "0.999"]

SNAPSHOT = [
    *(_customer(i) for i in range(1, 7)),
    *(_product(i, p) for i, p in enumerate(_PRICES, start=1)),
    *(_order(i, 1 + i % 6, 1 + i % 6) for i in range(1, 19)),
    *(f"INSERT INTO payments VALUES ({i}, {i}, {_AMOUNTS[i]}, 'card')" for i in range(1, 6)),
]

STREAM = [
    _customer(7, "Oslo"),
    _customer(8, "Paris"),
    *(_order(i, 1 + i % 8, 1 + i % 6) for i in range(19, 27)),
    "UPDATE customers SET city = 'Lima' WHERE id = 2",
    "UPDATE products SET price = price + 1.5 WHERE active",
    "UPDATE orders SET status = 'shipped' WHERE customer_id IN (1, 2) AND status <> 'shipped'",
    "UPDATE customers SET id = 30 WHERE id = 3",
    "UPDATE products SET sku = 'P-9' WHERE sku = 'P-2'",
    "UPDATE orders SET sku = 'P-9' WHERE sku = 'P-2'",
    "DELETE FROM orders WHERE id IN (4, 5)",
    _order(4, 2, 3, "new"),
    "DELETE FROM customers WHERE id = 5",
    _customer(5, "Kyoto"),
    "UPDATE orders SET id = 104 WHERE id = 14",
    "ALTER TABLE orders ADD COLUMN discount numeric(5,2)",
    "UPDATE orders SET discount = 1.50 WHERE id IN (1, 2, 3)",
    _order(27, 7, 1, discount="-2.25"),
    "TRUNCATE payments",
    "INSERT INTO payments VALUES (10, 1, 12.50, 'cash'), (11, 27, -2704.67, 'card')",
    "SELECT pg_logical_emit_message(true, 'deltaflow', 'a logical decoding message')",
    """BEGIN; UPDATE orders SET qty = qty + 10, amount = -31259.64 WHERE id = 6;
       DELETE FROM orders WHERE id = 7; UPDATE customers SET vip = NOT vip WHERE id = 1;
       UPDATE products SET active = false, price = -2339.338 WHERE sku = 'P-4'; COMMIT""",
    "UPDATE customers SET note = 'a short note now' WHERE id = 4",
    "DELETE FROM products WHERE sku = 'P-5'",
    "UPDATE orders SET paid_at = NULL, status = 'returned' WHERE id = 8",
    "DELETE FROM orders WHERE id = 9",
    _order(9, 30, 6, "paid"),
    "INSERT INTO marker VALUES (1, 'end of the workload')",
]
