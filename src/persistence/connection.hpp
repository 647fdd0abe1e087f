#pragma once

#include "persistence/task_store.hpp"

#include <memory>

namespace soci {
class session;
}

namespace herald::persistence {

/// Opens one configured connection: for SQLite the parent folder is created, a new file is
/// created 0600 (its -wal and -shm files follow), and the file is set to WAL, synchronous as
/// `url.sqlite_synchronous` says (FULL unless configured), busy_timeout 5000 ms and foreign keys
/// on. Throws store_error.
std::unique_ptr<soci::session> connect(const database_url& url);

/// Re-applies the per-connection settings after soci::session::reconnect().
void configure(soci::session& sql, const database_url& url);

} // namespace herald::persistence
