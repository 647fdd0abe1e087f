#pragma once

#include "domain/api_key.hpp"
#include "persistence/task_store.hpp"

#include <memory>
#include <string>
#include <vector>

namespace soci {
class session;
}

namespace herald::persistence {

/// A key just created: its record and the key text, which is shown once and stored nowhere.
struct created_api_key {
  domain::api_key record;
  std::string key_text;
};

/// The api_keys table (migration 0003) over a connection of its own. Every call is one
/// statement and blocks; throws store_error when the database fails.
class api_key_store {
public:
  /// Connects; the schema must be migrated.
  explicit api_key_store(const database_url& url);
  ~api_key_store();
  api_key_store(const api_key_store&) = delete;
  api_key_store& operator=(const api_key_store&) = delete;

  /// Creates a key for `tenant` with `scopes` from 8 + 32 random bytes; stores its hash only.
  created_api_key create(const std::string& tenant, domain::scope_set scopes,
                         domain::timestamp now);

  /// Every key, revoked ones included, in creation order.
  std::vector<domain::api_key> list();

  /// Marks a key revoked at `now`; false when there is no such key or it was revoked already.
  bool revoke(const std::string& id, domain::timestamp now);

private:
  std::unique_ptr<soci::session> sql_;
};

} // namespace herald::persistence
