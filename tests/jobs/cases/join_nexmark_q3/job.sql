-- Nexmark q3 (local item suggestion): its person and auction views over the nested DDL, joined
-- compare: final (both views read one topic: Flink joins record by record, deltaflow a batch of either side at a time, so rows of one batch come out in another order)
CREATE TABLE nexmark (
  event_type INT,
  person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>,
  auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>,
  bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>,
  `dateTime` AS CASE WHEN event_type = 0 THEN person.`dateTime` WHEN event_type = 1 THEN auction.`dateTime` ELSE bid.`dateTime` END,
  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (@json_source);
CREATE VIEW person AS SELECT person.id, person.name, person.city, person.state, `dateTime` FROM nexmark WHERE event_type = 0;
CREATE VIEW auction AS SELECT auction.id, auction.itemName, auction.seller, auction.category, `dateTime` FROM nexmark WHERE event_type = 1;
CREATE TABLE sink (name VARCHAR, city VARCHAR, state VARCHAR, id BIGINT) WITH (@sink);
INSERT INTO sink SELECT P.name, P.city, P.state, A.id FROM auction AS A INNER JOIN person AS P ON A.seller = P.id WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');
