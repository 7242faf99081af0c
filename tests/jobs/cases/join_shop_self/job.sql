-- compare: final (both join inputs read one topic; the engines interleave them differently)
CREATE TABLE shop_orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  a INT, b INT, product STRING
) WITH (@sink);
INSERT INTO sink
SELECT a.id, b.id, a.product FROM shop_orders a JOIN shop_orders b
ON a.product = b.product AND a.customer = b.customer AND a.id < b.id;
