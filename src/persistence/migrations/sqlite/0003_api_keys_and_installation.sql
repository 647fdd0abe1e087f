-- herald schema, version 3 (SQLite): API keys and the installation's id secret.
-- One row at most: the secret that keys message, task and provider request ids. Written by
-- persistence/installation.cpp right after migrating, with INSERT ... ON CONFLICT DO NOTHING,
-- so of two nodes migrating at once one secret wins and both read it back.
CREATE TABLE installation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  id_secret TEXT NOT NULL,
  created_at BIGINT NOT NULL
);

-- API keys, stored as the SHA-256 of the key text: the key itself is shown once, never kept.
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  scopes TEXT NOT NULL,
  key_hash TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  revoked_at BIGINT NULL
);
