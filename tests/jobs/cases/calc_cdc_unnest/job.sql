-- CROSS JOIN UNNEST over Debezium rows: an array's elements (a NULL array gives none), a map's entries; updates retract what the old row's elements gave
CREATE TABLE documents (
  id INT, title STRING, tags ARRAY<STRING>, scores ARRAY<INT>, attrs MAP<STRING, STRING>,
  addr ROW<city STRING, geo ROW<lat DOUBLE, lon DOUBLE>>,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (id INT, tag STRING, k STRING, v STRING) WITH (@sink);
INSERT INTO sink SELECT id, tag, k, v FROM documents CROSS JOIN UNNEST(tags) AS t(tag) CROSS JOIN UNNEST(attrs) AS m(k, v) WHERE tag <> 'old';
