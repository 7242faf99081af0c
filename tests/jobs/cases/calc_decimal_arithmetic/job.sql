CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, total DECIMAL(21, 2), per_unit DECIMAL(38, 16), third DECIMAL(38, 14), coarse DECIMAL(6, 1), bumped DECIMAL(12, 3), neg DECIMAL(10, 2), lo DECIMAL(9, 0), hi DECIMAL(9, 0), scaled DECIMAL(13, 3)
) WITH (@sink);
INSERT INTO sink
SELECT id, amount * qty, amount / qty, amount / 3, CAST(amount AS DECIMAL(6, 1)), amount + 0.005,
  -amount, FLOOR(amount), CEIL(amount), amount * 1.5
FROM orders;
