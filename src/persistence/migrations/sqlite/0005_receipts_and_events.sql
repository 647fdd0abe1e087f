-- herald schema, version 5 (SQLite): receipts, provider message ids and the status-event
-- outbox (docs/receipts.md).

-- The provider's own id for a sent task, from its success answer: receipts may name it
-- instead of herald's provider request id. Unique per channel only by the provider's word, so
-- the index is not unique.
ALTER TABLE tasks ADD COLUMN provider_message_id TEXT NULL;
CREATE INDEX tasks_channel_provider_message_id ON tasks (channel, provider_message_id)
  WHERE provider_message_id IS NOT NULL;
-- Receipts naming herald's provider request id find their task through this index.
CREATE INDEX tasks_provider_request_id ON tasks (provider_request_id);
-- The reconciler reads a channel's SENT tasks oldest first. Partial: the other states, where
-- tasks spend most of their changes, pay no index write for it.
CREATE INDEX tasks_sent_channel_updated ON tasks (channel, updated_at) WHERE status = 'SENT';

-- Every distinct receipt of a task, once: the same receipt again (a provider's retry, a
-- replayed callback, the reconciler asking) finds its row and writes nothing.
CREATE TABLE receipts (
  task_id TEXT NOT NULL REFERENCES tasks (id),
  status TEXT NOT NULL,        -- delivered | read | clicked | undelivered
  occurred_at BIGINT NOT NULL, -- by the provider's clock
  received_at BIGINT NOT NULL, -- by herald's
  source TEXT NOT NULL,        -- callback | query | inbox
  detail TEXT NOT NULL DEFAULT '', -- masked
  PRIMARY KEY (task_id, status)
);

-- The transactional outbox of status events to the calling system: a row is written in the
-- same transaction as the state change it reports, and posted later by the events actor.
-- `id` is deterministic (task id and state), so a change written twice is one event and a
-- receiver can deduplicate; `seq` orders a task's events. What an event says beyond its type
-- and time (ids, business key, channel) never changes, so it is read from the task when posted.
CREATE TABLE events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  task_id TEXT NOT NULL,
  tenant TEXT NOT NULL,
  type TEXT NOT NULL,           -- task.sent, task.delivered, …
  occurred_at BIGINT NOT NULL,
  status TEXT NOT NULL,         -- PENDING | DELIVERED | DEAD
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NULL,
  last_error TEXT NULL,
  finished_at BIGINT NULL
);
-- Only PENDING events are ever looked for; delivered and dead ones pile up behind them, so
-- the indexes hold the pending ones alone (a read stays as fast after a million events).
CREATE INDEX events_pending_seq ON events (seq) WHERE status = 'PENDING';
CREATE INDEX events_pending_task_seq ON events (task_id, seq) WHERE status = 'PENDING';
