-- events/tickets.jsonl: the two small tickets are updated, then both deleted, so the
-- 'small' group must leave the upsert table. deltaflow types the CASE as CHAR and casts
-- it to the sink's STRING, which hides the group key, so its sink materializes the upserts
-- (Flink types it VARCHAR and needs no materializer); the materializer must get -U rows.
CREATE TABLE tickets (
  id INT, status STRING, amount DECIMAL(10, 2), PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  size STRING, tickets_n BIGINT, PRIMARY KEY (size) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT CASE WHEN amount >= 5 THEN 'big' ELSE 'small' END, COUNT(*)
FROM tickets GROUP BY CASE WHEN amount >= 5 THEN 'big' ELSE 'small' END;
