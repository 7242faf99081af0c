CREATE TABLE shop_orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, products STRING, first_product STRING, last_amount DECIMAL(10, 2), lo DECIMAL(10, 2), hi DECIMAL(10, 2),
  PRIMARY KEY (customer) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT customer, LISTAGG(product), FIRST_VALUE(product), LAST_VALUE(amount), MIN(amount), MAX(amount)
FROM shop_orders GROUP BY customer;
