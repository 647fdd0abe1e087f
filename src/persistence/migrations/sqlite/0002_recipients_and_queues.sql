-- herald schema, version 2 (SQLite).
-- Every address of the request, by channel, as a JSON object: failover reads it.
ALTER TABLE messages ADD COLUMN recipients_json TEXT NOT NULL DEFAULT '{}';

-- load_unfinished and list_dead_letters page through a few states in id order: one range of
-- this index per state, each stopping at the page size (see sql_task_store.cpp).
CREATE INDEX tasks_status_id ON tasks (status, id);
