-- Runs after the example image's inventory.sql (init scripts run in name order).
-- With the default replica identity, Postgres logs only the primary key of the old
-- row, so Debezium's update events carry no "before" and delete events a partial
-- one. Flink's debezium-json (and deltaflow) need the whole before-image to retract
-- the old row; REPLICA IDENTITY FULL makes Postgres log it. Recent example images
-- already do this; repeating it is harmless and keeps older image tags correct.
ALTER TABLE inventory.customers REPLICA IDENTITY FULL;
ALTER TABLE inventory.products REPLICA IDENTITY FULL;
ALTER TABLE inventory.orders REPLICA IDENTITY FULL;
