#include "persistence/api_key_store.hpp"

#include "persistence/connection.hpp"
#include "persistence/installation.hpp"
#include "persistence/sql.hpp"

#include <soci/soci.h>

namespace herald::persistence {

namespace {

constexpr std::size_t key_id_bytes = 8;
constexpr std::size_t key_secret_bytes = 32;

std::string micros_text(domain::timestamp at) {
  return std::to_string(domain::to_unix_micros(at));
}

/// Runs one statement, turning SOCI's error into a store_error naming what failed.
template <class Body> auto guarded(const char* what, Body&& body) {
  try {
    return body();
  } catch (const soci::soci_error& e) {
    throw store_error(std::string(what) + " failed: " + short_message(e.what()));
  }
}

} // namespace

api_key_store::api_key_store(const database_url& url) : sql_(connect(url)) {}

api_key_store::~api_key_store() = default;

created_api_key api_key_store::create(const std::string& tenant, domain::scope_set scopes,
                                      domain::timestamp now) {
  created_api_key created;
  auto& record = created.record;
  record.id = secure_random_hex(key_id_bytes);
  created.key_text = domain::api_key_text(record.id, secure_random_hex(key_secret_bytes));
  record.tenant = tenant;
  record.scopes = scopes;
  record.hash = domain::api_key_hash(created.key_text);
  record.created_at = now;
  guarded("creating an API key", [&] {
    execute(*sql_,
            "INSERT INTO api_keys (id, tenant, scopes, key_hash, created_at) "
            "VALUES (:id, :tenant, :scopes, :hash, CAST(:now AS BIGINT))",
            {record.id, record.tenant, domain::to_string(scopes), record.hash, micros_text(now)});
    return 0;
  });
  return created;
}

std::vector<domain::api_key> api_key_store::list() {
  return guarded("listing API keys", [&] {
    std::vector<domain::api_key> keys;
    for (const auto& row : fetch_rows(*sql_,
                                      "SELECT id, tenant, scopes, key_hash, created_at, revoked_at "
                                      "FROM api_keys ORDER BY created_at, id",
                                      {}, 6)) {
      domain::api_key key;
      key.id = row[0].value_or("");
      key.tenant = row[1].value_or("");
      // A scope list edited by hand into something unknown grants nothing.
      key.scopes = domain::parse_scopes(row[2].value_or("")).value_or(domain::scope_set{});
      key.hash = row[3].value_or("");
      key.created_at = domain::from_unix_micros(to_int(row[4]));
      if (row[5])
        key.revoked_at = domain::from_unix_micros(to_int(row[5]));
      keys.push_back(std::move(key));
    }
    return keys;
  });
}

bool api_key_store::revoke(const std::string& id, domain::timestamp now) {
  return guarded("revoking an API key", [&] {
    return !fetch_rows(*sql_,
                       "UPDATE api_keys SET revoked_at = CAST(:now AS BIGINT) "
                       "WHERE id = :id AND revoked_at IS NULL RETURNING id",
                       {micros_text(now), id}, 1)
                .empty();
  });
}

} // namespace herald::persistence
