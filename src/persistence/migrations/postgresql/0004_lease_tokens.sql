-- herald schema, version 4 (PostgreSQL).
-- The take a SENDING commit belongs to, unique per take and kept by the changes recording its
-- outcome: a change re-sent after its answer was lost is recognised as already applied.
ALTER TABLE tasks ADD COLUMN lease_token TEXT NULL;
