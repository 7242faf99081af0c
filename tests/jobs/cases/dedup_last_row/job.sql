CREATE TABLE clicks (
  click_id INT, user_name STRING, url STRING, ts TIMESTAMP(3),
  PRIMARY KEY (click_id) NOT ENFORCED,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (@source);
CREATE TABLE sink (
  user_name STRING, url STRING, ts TIMESTAMP(3),
  PRIMARY KEY (user_name) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT user_name, url, ts FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY user_name ORDER BY ts DESC) AS rn FROM clicks
) WHERE rn = 1;
