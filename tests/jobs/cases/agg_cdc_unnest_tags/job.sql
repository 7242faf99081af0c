-- Tag counts over UNNEST of a Debezium array column, with retractions
CREATE TABLE documents (
  id INT, title STRING, tags ARRAY<STRING>, scores ARRAY<INT>, attrs MAP<STRING, STRING>,
  addr ROW<city STRING, geo ROW<lat DOUBLE, lon DOUBLE>>,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (tag STRING, docs BIGINT, PRIMARY KEY (tag) NOT ENFORCED) WITH (@sink);
INSERT INTO sink SELECT tag, COUNT(*) FROM documents, UNNEST(tags) AS t(tag) GROUP BY tag;
