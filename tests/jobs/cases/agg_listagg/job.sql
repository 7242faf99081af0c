CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, products STRING, ids STRING,
  PRIMARY KEY (customer) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink SELECT customer, LISTAGG(product), LISTAGG(CAST(id AS STRING), '|') FROM orders WHERE customer IS NOT NULL GROUP BY customer;
