-- herald schema, version 8 (SQLite): the policy layer (docs/policy.md).

-- What herald knows of a user, per tenant (PUT /v1/users/{user_id}). Lists and maps are JSON
-- text: they are read and written whole, never queried into. dnd = 1 while do-not-disturb
-- holds (until dnd_until when that is set).
CREATE TABLE users (
  tenant TEXT NOT NULL,
  user_id TEXT NOT NULL,
  contacts_json TEXT NOT NULL DEFAULT '{}',
  time_zone TEXT NOT NULL DEFAULT '',
  locale TEXT NOT NULL DEFAULT '',
  opted_out_channels_json TEXT NOT NULL DEFAULT '[]',
  opted_out_categories_json TEXT NOT NULL DEFAULT '[]',
  dnd INTEGER NOT NULL DEFAULT 0,
  dnd_until BIGINT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (tenant, user_id)
);

-- Frequency caps: tasks admitted per user, cap counter ("marketing/sms/day") and window (its
-- start, unix microseconds). Written in the claim transaction that admits the task, after
-- the claim locked the user, so two claims never both take the last place.
CREATE TABLE frequency_counts (
  tenant TEXT NOT NULL,
  user_id TEXT NOT NULL,
  counter TEXT NOT NULL,
  window_start BIGINT NOT NULL,
  used INTEGER NOT NULL,
  PRIMARY KEY (tenant, user_id, counter, window_start)
);

-- Why policy suppressed or deferred a task (domain::policy_reason: "frequency_cap", ...), and
-- the deferred send time when it did: NULL for a task sent as asked.
ALTER TABLE tasks ADD COLUMN policy_reason TEXT NULL;
ALTER TABLE tasks ADD COLUMN send_at BIGINT NULL;
