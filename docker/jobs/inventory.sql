-- Shipped quantity and weight per customer over the Debezium inventory example.
--
-- The three sources are the change topics Debezium's Postgres connector writes for
-- the inventory schema (docker/connectors/inventory.json: topic.prefix dbserver1).
-- Each table declares only the columns the query needs; other fields of the change
-- events (orders.order_date, products.description) are ignored by the json decoder.
-- The tables have REPLICA IDENTITY FULL (docker/postgres/), so every update and
-- delete event carries the full before-image that debezium-json needs.
--
-- The file is a plain Apache Flink SQL job: it also runs unchanged in the Flink
-- SQL client with the kafka connector and json format jars on the class path.

CREATE TABLE customers (
  id INT,
  first_name STRING,
  last_name STRING,
  email STRING,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'kafka',
  'topic' = 'dbserver1.inventory.customers',
  'properties.bootstrap.servers' = 'kafka:9092',
  'properties.group.id' = 'deltaflow-inventory',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'debezium-json'
);

CREATE TABLE products (
  id INT,
  name STRING,
  weight DOUBLE,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'kafka',
  'topic' = 'dbserver1.inventory.products',
  'properties.bootstrap.servers' = 'kafka:9092',
  'properties.group.id' = 'deltaflow-inventory',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'debezium-json'
);

CREATE TABLE orders (
  id INT,
  purchaser INT,
  quantity INT,
  product_id INT,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'kafka',
  'topic' = 'dbserver1.inventory.orders',
  'properties.bootstrap.servers' = 'kafka:9092',
  'properties.group.id' = 'deltaflow-inventory',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'debezium-json'
);

-- One row per customer with at least one order, keyed by customer id: an update
-- to an order, a product's weight or a customer's name replaces that customer's row.
CREATE TABLE customer_shipments (
  customer_id INT,
  first_name STRING,
  last_name STRING,
  email STRING,
  order_count BIGINT,
  total_quantity BIGINT,
  total_weight DOUBLE,
  PRIMARY KEY (customer_id) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'inventory.customer_shipments',
  'properties.bootstrap.servers' = 'kafka:9092',
  'key.format' = 'json',
  'value.format' = 'json'
);

-- Orders joined with their customer and product, aggregated per customer. The
-- group key includes customer_id, the sink's primary key, so each customer has
-- exactly one row in the output topic.
INSERT INTO customer_shipments
SELECT
  c.id,
  c.first_name,
  c.last_name,
  c.email,
  COUNT(*),
  SUM(CAST(o.quantity AS BIGINT)),
  SUM(o.quantity * p.weight)
FROM orders AS o
JOIN customers AS c ON o.purchaser = c.id
JOIN products AS p ON o.product_id = p.id
GROUP BY c.id, c.first_name, c.last_name, c.email
ON CONFLICT DO DEDUPLICATE;
