-- herald schema, version 1 (PostgreSQL). Timestamps are unix microseconds (BIGINT).
-- Ids use the "C" collation so id order (paging) is byte order, as in SQLite.
-- schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)
-- is created by the migrator (persistence/schema.cpp) before this file runs.

CREATE TABLE messages (
  id TEXT COLLATE "C" PRIMARY KEY,
  tenant TEXT NOT NULL,
  biz_type TEXT NOT NULL,
  biz_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  template_name TEXT NOT NULL DEFAULT '',
  params_json TEXT NOT NULL DEFAULT '{}',
  title TEXT NOT NULL DEFAULT '',
  body TEXT NOT NULL DEFAULT '',
  category TEXT NOT NULL,
  priority TEXT NOT NULL,
  send_at BIGINT NULL,
  expire_at BIGINT NULL,
  trace_id TEXT NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL,
  UNIQUE (tenant, biz_type, biz_id, user_id)
);

CREATE TABLE tasks (
  id TEXT COLLATE "C" PRIMARY KEY,
  message_id TEXT COLLATE "C" NOT NULL REFERENCES messages (id),
  tenant TEXT NOT NULL,
  biz_type TEXT NOT NULL,
  biz_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  channel TEXT NOT NULL,
  recipient TEXT NOT NULL,
  provider_request_id TEXT NOT NULL,
  status TEXT NOT NULL,
  priority TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NULL,
  last_error TEXT NULL,
  lease_owner TEXT NULL,
  lease_until BIGINT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (tenant, biz_type, biz_id, user_id, channel)
);

CREATE INDEX tasks_status_next_attempt ON tasks (status, next_attempt_at);
CREATE INDEX tasks_message ON tasks (message_id);

CREATE TABLE attempts (
  task_id TEXT COLLATE "C" NOT NULL REFERENCES tasks (id),
  attempt_no INTEGER NOT NULL,
  provider_request_id TEXT NOT NULL,
  outcome TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '',
  started_at BIGINT NOT NULL,
  finished_at BIGINT NOT NULL,
  PRIMARY KEY (task_id, attempt_no)
);
