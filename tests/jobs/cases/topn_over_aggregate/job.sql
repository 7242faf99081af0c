CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  rn BIGINT, product STRING, units INT,
  PRIMARY KEY (rn) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT rn, product, units FROM (
  SELECT product, units, ROW_NUMBER() OVER (ORDER BY units DESC, product) AS rn
  FROM (SELECT product, SUM(qty) AS units FROM orders GROUP BY product)
) WHERE rn <= 2;
