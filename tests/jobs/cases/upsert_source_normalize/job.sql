SET 'table.exec.sink.not-null-enforcer' = 'DROP';
CREATE TABLE customers (
  name STRING, region STRING, tier INT, PRIMARY KEY (name) NOT ENFORCED
) WITH (@upsert_source);
CREATE TABLE sink (
  region STRING, people BIGINT, top_tier INT,
  PRIMARY KEY (region) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink SELECT region, COUNT(*), MAX(tier) FROM customers GROUP BY region;
