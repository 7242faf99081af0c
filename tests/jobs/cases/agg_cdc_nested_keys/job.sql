-- GROUP BY a nested field and an array element of Debezium rows, with retractions
CREATE TABLE documents (
  id INT, title STRING, tags ARRAY<STRING>, scores ARRAY<INT>, attrs MAP<STRING, STRING>,
  addr ROW<city STRING, geo ROW<lat DOUBLE, lon DOUBLE>>,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (city STRING, first_tag STRING, docs BIGINT, scores INT) WITH (@sink);
INSERT INTO sink SELECT addr.city, tags[1], COUNT(*), SUM(CARDINALITY(scores)) FROM documents GROUP BY addr.city, tags[1];
