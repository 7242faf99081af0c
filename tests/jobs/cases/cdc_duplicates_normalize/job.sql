-- events/accounts.jsonl is the customers history as an at-least-once Debezium connector
-- delivers it after a restart: events 2-5 replayed, the delete of carol twice.
SET 'table.exec.source.cdc-events-duplicate' = 'true';
CREATE TABLE accounts (
  name STRING, region STRING, tier INT, PRIMARY KEY (name) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  name STRING, region STRING, tier INT
) WITH (@sink);
INSERT INTO sink SELECT name, region, tier FROM accounts;
