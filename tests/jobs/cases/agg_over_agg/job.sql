CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  cnt BIGINT, customers BIGINT,
  PRIMARY KEY (cnt) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT cnt, COUNT(*) FROM (SELECT customer, COUNT(*) AS cnt FROM orders GROUP BY customer) GROUP BY cnt;
