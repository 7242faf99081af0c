-- Debezium rows with ARRAY, MAP and nested ROW columns (PostgreSQL arrays and jsonb arrive so): [] (1-based, past the end NULL), map['k'], CARDINALITY, r.f.g, written back whole
CREATE TABLE documents (
  id INT, title STRING, tags ARRAY<STRING>, scores ARRAY<INT>, attrs MAP<STRING, STRING>,
  addr ROW<city STRING, geo ROW<lat DOUBLE, lon DOUBLE>>,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (id INT, first_tag STRING, third_tag STRING, n_tags INT, color STRING, city STRING, lat DOUBLE, tags ARRAY<STRING>, attrs MAP<STRING, STRING>, addr ROW<city STRING, geo ROW<lat DOUBLE, lon DOUBLE>>, scores ARRAY<INT>) WITH (@sink);
INSERT INTO sink SELECT id, tags[1], tags[3], CARDINALITY(tags), attrs['color'], addr.city, addr.geo.lat, tags, attrs, addr, scores FROM documents;
