#pragma once

#include "actors/interfaces.hpp"
#include "domain/time.hpp"
#include "observability/metrics.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

namespace herald::actors {

/// When a held task is due: its next attempt, else its send_at, else now.
domain::timestamp due_time(const domain::delivery& task, domain::timestamp now);

/// How much the retry timer holds.
struct retry_timer_config {
  /// Held tasks at most; beyond it the latest-due ones are let go (the database keeps them
  /// and the sweep brings them back), so a backlog of retries cannot grow memory unbounded.
  std::size_t max_held = 100000;

  /// An empty string when valid, else the reason.
  std::string validate() const;
};

/// One priority queue of due times and one timer armed for the earliest of them. Each
/// re-arm bumps a generation so a superseded timer firing later does nothing. Cancellable,
/// unlike a delayed_send per task, and cheaper at 100k entries (caf-0.17.md). Held tasks
/// are a cache: RETRY_WAIT rows keep next_attempt_at, so recovery rebuilds the queue.
struct retry_timer_state {
  static constexpr const char* name = "retry_timer";

  dispatcher_actor dispatcher;
  std::shared_ptr<herald::metrics> metrics;
  std::shared_ptr<const domain::clock> clock;
  retry_timer_config config;
  std::set<std::pair<domain::timestamp, std::string>> queue; ///< (due, task id)
  struct entry {
    domain::timestamp due;
    domain::delivery task;
  };
  std::unordered_map<std::string, entry> held; ///< by task id
  std::optional<domain::timestamp> armed_for;
  std::uint64_t generation = 0;
};

retry_timer_actor::behavior_type
retry_timer(retry_timer_actor::stateful_pointer<retry_timer_state> self,
            dispatcher_actor dispatcher, std::shared_ptr<herald::metrics> metrics,
            std::shared_ptr<const domain::clock> clock, retry_timer_config config);

} // namespace herald::actors
