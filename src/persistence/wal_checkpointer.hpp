#pragma once

#include "persistence/task_store.hpp"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace soci {
class session;
}

namespace herald::persistence {

/// Copies SQLite's write-ahead log back into the database file from a thread and connection of
/// its own, so the store writer's commits never do it. SQLite's automatic checkpoint runs in
/// the commit that crosses 1,000 log pages, on the writing connection: under load a tenth of
/// herald's samples on the store writer's thread, the one SQLite serialises every write on
/// (docs/benchmarks.md). The writer's connection turns it off
/// (store_options::checkpoints_elsewhere); this one runs a PASSIVE checkpoint every `interval`: it
/// copies what no reader still needs and never waits for, or blocks, a writer or a reader.
class wal_checkpointer {
public:
  /// Opens its connection (throws store_error) and starts. `on_error` is called, from the
  /// checkpointer's thread, with a checkpoint's error; the next one is tried as usual.
  wal_checkpointer(const database_url& url, std::chrono::milliseconds interval,
                   std::function<void(const std::string&)> on_error);
  /// Stops after the checkpoint under way, if any.
  ~wal_checkpointer();
  wal_checkpointer(const wal_checkpointer&) = delete;
  wal_checkpointer& operator=(const wal_checkpointer&) = delete;

  /// Checkpoints done so far (for tests).
  std::size_t checkpoints() const;

private:
  void run(std::chrono::milliseconds interval);

  std::unique_ptr<soci::session> sql_;
  std::function<void(const std::string&)> on_error_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::size_t checkpoints_ = 0;
  std::thread thread_;
};

} // namespace herald::persistence
