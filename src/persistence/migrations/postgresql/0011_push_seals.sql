-- herald schema, version 11 (PostgreSQL): seals of signed pushes (docs/channels.md, WeChat receipts).

-- One row per signed push of a provider whose signature covers only a timestamp and a nonce
-- (WeChat's plaintext mode), holding the request it was first used for: a push under the same
-- (channel, signed_at, nonce) is admitted only with the same digest, on every node sharing the
-- database and after restarts. The primary key makes the first of two racing nodes win.
-- signed_at and kept_until are unix seconds; a row is dropped once kept_until has passed,
-- when a push with its timestamp is refused as stale anyway.
CREATE TABLE push_seals (
  channel TEXT NOT NULL,
  signed_at BIGINT NOT NULL,
  nonce TEXT NOT NULL,
  digest TEXT NOT NULL,
  kept_until BIGINT NOT NULL,
  PRIMARY KEY (channel, signed_at, nonce)
);
CREATE INDEX push_seals_kept_until ON push_seals (kept_until);
