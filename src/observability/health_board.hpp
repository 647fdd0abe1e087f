#pragma once

#include <map>
#include <mutex>
#include <string>

namespace herald {

/// What keeps this node from being ready, by component ("store_writer", "channel sms", …).
/// Components that cannot answer for themselves — a dead actor, a channel that stopped taking
/// tasks because its results cannot be recorded — are written here by whoever sees it; GET
/// /readyz fails while any problem stands and names them all. Thread-safe; one per process.
class health_board {
public:
  /// Marks `component` as not working, for `reason` (replaces an earlier reason).
  void report(const std::string& component, const std::string& reason);
  /// Marks `component` as working again.
  void clear(const std::string& component);
  /// "component: reason; component: reason" in name order; empty while all is well.
  std::string problems() const;

private:
  mutable std::mutex mutex_;
  std::map<std::string, std::string> problems_;
};

} // namespace herald
