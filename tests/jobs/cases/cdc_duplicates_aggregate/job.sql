-- events/accounts.jsonl: the customers history with replayed and repeated events (see
-- cdc_duplicates_normalize); ChangelogNormalize makes the counts exact.
SET 'table.exec.source.cdc-events-duplicate' = 'true';
CREATE TABLE accounts (
  name STRING, region STRING, tier INT, PRIMARY KEY (name) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  tier INT, people BIGINT, regions BIGINT, PRIMARY KEY (tier) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink SELECT tier, COUNT(*), COUNT(DISTINCT region) FROM accounts GROUP BY tier;
