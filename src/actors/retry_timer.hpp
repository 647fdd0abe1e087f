#pragma once

#include "actors/interfaces.hpp"
#include "domain/time.hpp"
#include "observability/metrics.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

namespace herald::actors {

/// When a held task is due: its next attempt, else its send_at, else now.
domain::timestamp due_time(const domain::delivery& task, domain::timestamp now);

/// How much the retry timer holds and how it hands tasks out.
struct retry_timer_config {
  /// Held tasks at most; beyond it the latest-due ones are let go (the database keeps them
  /// and the sweep brings them back), so a backlog of retries cannot grow memory unbounded.
  std::size_t max_held = 100000;
  /// Due tasks handed to the dispatcher at once at most; it reads them from the database by
  /// id, so a million tasks due together are read and sent a batch at a time.
  std::size_t hand_out_batch = 500;
  /// How long the dispatcher may take to read and dispatch one batch.
  std::chrono::milliseconds hand_out_timeout{30000};

  /// An empty string when valid, else the reason.
  std::string validate() const;
};

/// One ordered set of (due time, task id) and one timer armed for the earliest of them. Each
/// re-arm bumps a generation so a superseded timer firing later does nothing. Cancellable,
/// unlike a delayed_send per task, and cheaper at 100k entries (caf-0.17.md). A task is held
/// as its due time and id only — its title, body and recipients wait in the database, which
/// the dispatcher reads by id when the task is due — so a held task costs ~200 bytes, not a
/// whole delivery. Held tasks are a cache: RETRY_WAIT rows keep next_attempt_at, and the
/// sweep reads every task due before the next sweep, so nothing depends on the timer's memory.
struct retry_timer_state {
  static constexpr const char* name = "retry_timer";

  /// A held task: when it is due and its id.
  struct entry {
    domain::timestamp due;
    std::string task_id;
  };
  struct earlier { ///< by due time, then id
    bool operator()(const entry& a, const entry& b) const {
      return a.due != b.due ? a.due < b.due : a.task_id < b.task_id;
    }
  };

  dispatcher_actor dispatcher;
  std::shared_ptr<herald::metrics> metrics;
  std::shared_ptr<const domain::clock> clock;
  retry_timer_config config;
  std::set<entry, earlier> queue;
  /// Due time by task id; the keys view the ids inside `queue` (its nodes never move).
  std::unordered_map<std::string_view, domain::timestamp> due_of;
  std::optional<domain::timestamp> armed_for;
  std::uint64_t generation = 0;
  bool handing_out = false;      ///< a batch is with the dispatcher; the next waits for its answer
  domain::timestamp resume_at{}; ///< no batch before: the channels are sending the last one
  static constexpr std::chrono::seconds full_log_every{10};
  std::size_t let_go_unlogged = 0; ///< let go since the last retry_timer.full line
  domain::timestamp next_full_log{};
};

retry_timer_actor::behavior_type
retry_timer(retry_timer_actor::stateful_pointer<retry_timer_state> self,
            dispatcher_actor dispatcher, std::shared_ptr<herald::metrics> metrics,
            std::shared_ptr<const domain::clock> clock, retry_timer_config config);

} // namespace herald::actors
