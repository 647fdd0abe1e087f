#include "persistence/wal_checkpointer.hpp"

#include "persistence/connection.hpp"
#include "persistence/sql.hpp"

#include <soci/soci.h>

namespace herald::persistence {

wal_checkpointer::wal_checkpointer(const database_url& url, std::chrono::milliseconds interval,
                                   std::function<void(const std::string&)> on_error)
    : sql_(connect(url)), on_error_(std::move(on_error)) {
  thread_ = std::thread([this, interval] { run(interval); });
}

wal_checkpointer::~wal_checkpointer() {
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::size_t wal_checkpointer::checkpoints() const {
  std::lock_guard lock{mutex_};
  return checkpoints_;
}

void wal_checkpointer::run(std::chrono::milliseconds interval) {
  std::unique_lock lock{mutex_};
  while (!wake_.wait_for(lock, interval, [this] { return stopping_; })) {
    lock.unlock();
    std::string error;
    try {
      int busy = 0, log_frames = 0, copied_frames = 0;
      *sql_ << "PRAGMA wal_checkpoint(PASSIVE)", soci::into(busy), soci::into(log_frames),
          soci::into(copied_frames);
    } catch (const std::exception& e) {
      error = short_message(e.what());
    }
    if (!error.empty() && on_error_)
      on_error_(error);
    lock.lock();
    if (error.empty())
      ++checkpoints_;
  }
}

} // namespace herald::persistence
