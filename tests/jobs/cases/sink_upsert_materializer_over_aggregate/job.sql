-- The aggregate's upsert key (id, product) is not the sink's key (product): Flink and
-- deltaflow both materialize the sink, whose input must then carry -U rows.
CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  product STRING, id INT, units INT, PRIMARY KEY (product) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT product, id, units FROM (SELECT id, product, SUM(qty) AS units FROM orders GROUP BY id, product);
