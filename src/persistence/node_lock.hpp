#pragma once

#include "persistence/task_store.hpp"

#include <memory>
#include <string>

namespace herald::persistence {

/// Proof, held for a process's life, that no other live process runs under the same node name
/// against the same database: only its holder may resume the leases earlier processes of that
/// name left behind (task_store::release_leases).
///
/// PostgreSQL: a session-level advisory lock on a connection of its own, so it holds across
/// hosts and ends when the connection does (the process died, or this object went away).
/// SQLite: an flock on a file next to the database (`<database>.node-<name>.lock`), released by
/// the kernel when the process dies, even by SIGKILL.
class node_lock {
public:
  virtual ~node_lock() = default;
  /// Whether this process holds the name; false when another process does, or the lock could
  /// not be taken at all (then `where()` says why).
  virtual bool held() const = 0;
  /// What the lock is, for logs: the file, or the advisory lock's key.
  virtual std::string where() const = 0;
};

/// Tries once, without waiting. Never throws: a lock that cannot be taken is not held.
std::unique_ptr<node_lock> try_lock_node_name(const database_url& url, const std::string& name);

} // namespace herald::persistence
