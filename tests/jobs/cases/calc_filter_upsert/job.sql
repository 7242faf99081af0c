CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, customer STRING, amount DECIMAL(10, 2),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink SELECT id, customer, amount FROM orders WHERE qty >= 2;
