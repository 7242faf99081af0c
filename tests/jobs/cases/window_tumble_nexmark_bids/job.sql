-- A tumbling window over Nexmark's computed rowtime, counting bids and summing bid.price
CREATE TABLE nexmark (
  event_type INT,
  person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>,
  auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>,
  bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>,
  `dateTime` AS CASE WHEN event_type = 0 THEN person.`dateTime` WHEN event_type = 1 THEN auction.`dateTime` ELSE bid.`dateTime` END,
  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (@json_source);
CREATE TABLE sink (window_start TIMESTAMP(3), window_end TIMESTAMP(3), bids BIGINT, total BIGINT, top BIGINT) WITH (@sink);
INSERT INTO sink SELECT window_start, window_end, COUNT(*), SUM(bid.price), MAX(bid.price) FROM TABLE(TUMBLE(TABLE nexmark, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) WHERE event_type = 2 GROUP BY window_start, window_end;
