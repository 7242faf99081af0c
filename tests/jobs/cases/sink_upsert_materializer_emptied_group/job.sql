-- events/tickets.jsonl: the two small tickets are updated, then both deleted, so the
-- 'small!' row must leave the upsert table. CONCAT hides the group key from both
-- planners, so both put a SinkUpsertMaterializer before the sink; without an upsert key
-- it retracts rows by the -U rows its input must then carry.
CREATE TABLE tickets (
  id INT, status STRING, amount DECIMAL(10, 2), PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  size STRING, tickets_n BIGINT, PRIMARY KEY (size) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT CONCAT(size, '!'), n FROM (
  SELECT CASE WHEN amount >= 5 THEN 'big' ELSE 'small' END AS size, COUNT(*) AS n
  FROM tickets GROUP BY CASE WHEN amount >= 5 THEN 'big' ELSE 'small' END
);
