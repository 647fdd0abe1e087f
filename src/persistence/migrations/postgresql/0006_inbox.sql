-- herald schema, version 6 (PostgreSQL): the in-app inbox (docs/api.md, "Inbox").

-- One item per task of an inapp channel, written by the channel's send: keyed by the task, so
-- a resend (after a crash, a timeout) finds its row and writes nothing. The user is the task's
-- recipient (the message's user_id unless `to` named another); title and body are the
-- message's, as every other channel sends them. read_at and clicked_at are set once, by the
-- first READ or CLICKED receipt (a click is also a read).
CREATE TABLE inbox (
  task_id TEXT COLLATE "C" PRIMARY KEY REFERENCES tasks (id),
  tenant TEXT NOT NULL,
  user_id TEXT NOT NULL,
  channel TEXT NOT NULL,
  title TEXT NOT NULL DEFAULT '',
  body TEXT NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL,
  read_at BIGINT NULL,
  clicked_at BIGINT NULL
);
-- A user's items newest first, resumed after a (created_at, task_id) cursor.
CREATE INDEX inbox_user_created ON inbox (tenant, user_id, created_at DESC, task_id DESC);
-- Unread pages and counts read the unread items alone.
CREATE INDEX inbox_user_unread ON inbox (tenant, user_id, created_at DESC, task_id DESC)
  WHERE read_at IS NULL;
