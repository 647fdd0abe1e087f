-- herald schema, version 10 (SQLite): stored templates (docs/policy.md, "Templates").

-- Every saved version of a tenant's template (PUT /v1/templates/{code}): versions count 1, 2,
-- 3 … per (tenant, code) and are never reused or changed. definition_json is the definition
-- as herald wrote it (read whole, never queried into). DELETE marks every version deleted
-- (deleted_at); a later PUT starts the next version number, so an old version is never served
-- again under a new number.
CREATE TABLE templates (
  tenant TEXT NOT NULL,
  code TEXT NOT NULL,
  version INTEGER NOT NULL,
  definition_json TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  deleted_at BIGINT NULL,
  PRIMARY KEY (tenant, code, version)
);

-- The stored template version a message was rendered with; NULL for a config template or
-- literal content.
ALTER TABLE messages ADD COLUMN template_version BIGINT NULL;

-- A task's own text when a stored template's per-channel override made it differ from its
-- message's title and body; NULL (the common case): the message's.
ALTER TABLE tasks ADD COLUMN content_title TEXT NULL;
ALTER TABLE tasks ADD COLUMN content_body TEXT NULL;
