#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace herald::domain {

/// One business event for one user; unique per tenant.
struct message_key {
  std::string tenant;
  std::string biz_type;
  std::string biz_id;
  std::string user_id;

  friend bool operator==(const message_key& a, const message_key& b) {
    return a.tenant == b.tenant && a.biz_type == b.biz_type && a.biz_id == b.biz_id &&
           a.user_id == b.user_id;
  }
};

/// One message on one channel: the idempotency key of a task, unique for ever.
struct task_key {
  message_key message;
  std::string channel;

  friend bool operator==(const task_key& a, const task_key& b) {
    return a.message == b.message && a.channel == b.channel;
  }
};

/// Unambiguous text form: every field length-prefixed, so ("a:b","c") and ("a","b:c") differ.
std::string encode(const message_key& key);
std::string encode(const task_key& key);

/// The per-installation secret ids are keyed with (HMAC-SHA256), so that nobody who knows a
/// message's business data (tenant, type, biz id, user id) can compute its id and read it.
/// Created once per database (persistence/installation.hpp) and passed in: domain holds none.
struct id_secret {
  std::string bytes;
};

/// Deterministic ids: the same key and secret give the same id on every retry, restart and
/// node of one installation.
std::string message_id_for(const message_key& key, const id_secret& secret);
std::string task_id_for(const task_key& key, const id_secret& secret);

/// The id sent to providers as request id / idempotency key; the same on every attempt.
std::string provider_request_id_for(const task_key& key, const id_secret& secret);

/// The installation's name among cluster nodes ("cls_" and hex): nodes of one database share
/// it, so a node of another installation that reaches a cluster port is told apart and
/// ignored; it gives the secret away no more than a message id does.
std::string cluster_id_for(const id_secret& secret);

/// Stable 64-bit hash of an encoded key (not std::hash: it must agree across builds and nodes).
std::uint64_t stable_hash(const std::string& encoded_key);

/// Which of `shard_count` shards owns the key.
std::size_t shard_of(const message_key& key, std::size_t shard_count);

} // namespace herald::domain
