#pragma once

#include "domain/keys.hpp"
#include "persistence/task_store.hpp"

#include <cstddef>
#include <string>

namespace soci {
class session;
}

namespace herald::persistence {

/// `bytes` bytes from OpenSSL's CSPRNG, as lower-case hex. Throws store_error if it fails.
std::string secure_random_hex(std::size_t bytes);

/// The installation's id secret (domain::id_secret), created on first call: 32 random bytes
/// inserted with ON CONFLICT DO NOTHING and read back, so of several nodes creating it at once
/// every one ends with the same secret. The schema must be migrated. Throws store_error.
domain::id_secret installation_secret(soci::session& sql);

/// As above over a connection of its own.
domain::id_secret installation_secret(const database_url& url);

} // namespace herald::persistence
