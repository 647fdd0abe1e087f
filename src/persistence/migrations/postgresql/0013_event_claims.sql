-- herald schema, version 13 (PostgreSQL): claims on status events (docs/events.md, docs/cluster.md).

-- The node posting an event, and until when: taken in the statement that reads the event for
-- posting, so of the nodes sharing the database one posts it, also while partitions move
-- between them; cleared when its outcome is written. An event whose claim ran out (its node
-- died mid-post) is claimed again by whoever owns its partition then. claimed_by is the
-- node's lease owner (`<node name>/<incarnation>`); claimed_until is unix micros.
ALTER TABLE events ADD COLUMN claimed_by TEXT NULL;
ALTER TABLE events ADD COLUMN claimed_until BIGINT NULL;
