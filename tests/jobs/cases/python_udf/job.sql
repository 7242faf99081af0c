CREATE TEMPORARY FUNCTION label AS 'jobs_udfs.label' LANGUAGE PYTHON;
CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, tag STRING
) WITH (@sink);
INSERT INTO sink SELECT id, label(customer, qty) FROM orders;
