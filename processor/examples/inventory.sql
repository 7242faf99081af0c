-- The deltaflow demo job: the Debezium inventory example, joined and aggregated.
-- Valid Flink SQL: the same file runs on Apache Flink 2.3 with the Kafka connector.
-- ON CONFLICT DO DEDUPLICATE: the sink key (customer_id) is not the upsert key of the
-- GROUP BY (id, first_name, last_name), so Flink 2.3 asks how to resolve conflicts.
SET 'table.local-time-zone' = 'UTC';

CREATE TABLE customers (
  id INT,
  first_name STRING,
  last_name STRING,
  email STRING,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'kafka',
  'topic' = 'dbserver1.inventory.customers',
  'properties.bootstrap.servers' = 'localhost:9092',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json'
);

CREATE TABLE products (
  id INT,
  name STRING,
  description STRING,
  weight DECIMAL(10, 2),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'kafka',
  'topic' = 'dbserver1.inventory.products',
  'properties.bootstrap.servers' = 'localhost:9092',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json'
);

CREATE TABLE orders (
  id INT,
  order_date INT,
  purchaser INT,
  quantity INT,
  product_id INT,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'kafka',
  'topic' = 'dbserver1.inventory.orders',
  'properties.bootstrap.servers' = 'localhost:9092',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json'
);

CREATE TABLE customer_totals (
  customer_id INT,
  first_name STRING,
  last_name STRING,
  orders BIGINT,
  items INT,
  total_weight DECIMAL(38, 2),
  PRIMARY KEY (customer_id) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'customer_totals',
  'properties.bootstrap.servers' = 'localhost:9092',
  'key.format' = 'json',
  'value.format' = 'json'
);

INSERT INTO customer_totals
SELECT c.id, c.first_name, c.last_name, COUNT(*), SUM(o.quantity), SUM(o.quantity * p.weight)
FROM orders AS o
JOIN customers AS c ON o.purchaser = c.id
JOIN products AS p ON o.product_id = p.id
GROUP BY c.id, c.first_name, c.last_name
ON CONFLICT DO DEDUPLICATE;
