#pragma once

#include "actors/interfaces.hpp"
#include "observability/metrics.hpp"

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>

#include <caf/typed_response_promise.hpp>

namespace herald::actors {

/// Limits of one dedup shard.
struct dedup_shard_config {
  /// Claims waiting in this shard (in flight or queued behind one of the same key) at most;
  /// beyond it a claim is answered `overloaded` at once instead of queueing while the
  /// database is slow.
  std::size_t max_waiting = 2000;
  /// How long the shard waits for the store writer; shorter than ingest's claim timeout, so
  /// the shard answers (and empties its queue) before ingest gives up on it.
  std::chrono::milliseconds claim_timeout{12000};

  /// An empty string when valid, else the reason.
  std::string validate() const;
};

/// Owns the claims of the message keys that hash to it (domain::shard_of). Every task key
/// belongs to exactly one message key, so all claims of a task key pass through one shard.
/// Concurrent claims of one key wait for the first one's answer instead of racing to the
/// database; newly created tasks go to the dispatcher once committed.
struct dedup_shard_state {
  static constexpr const char* name = "dedup_shard";

  struct waiter {
    domain::message_plan plan;
    caf::typed_response_promise<persistence::claim_result> promise;
  };

  store_writer_actor store;
  dispatcher_actor dispatcher;
  std::shared_ptr<herald::metrics> metrics;
  dedup_shard_config config;
  std::unordered_map<std::string, std::deque<waiter>> waiting; ///< by message id; front in flight
  std::size_t waiting_claims = 0;                              ///< over all message ids
};

/// Appends to `out` the tasks a committed claim of a plan with `planned` tasks created, ready
/// to dispatch, and counts its created and duplicate tasks: what every claim's answer does
/// (also a batch's).
void collect_created(const persistence::claim_result& result,
                     const std::vector<domain::task_record>& planned, herald::metrics& metrics,
                     deliveries& out);

/// A commit failed a task of channel `from` over to `fallback`, a task it created (a receipt's
/// UNDELIVERED, a status question's answer): counts the failover and the new task, and hands it
/// to `dispatcher` to be sent.
void send_fallback(herald::metrics& metrics, const dispatcher_actor& dispatcher,
                   const std::string& from, domain::delivery fallback);

dedup_shard_actor::behavior_type
dedup_shard(dedup_shard_actor::stateful_pointer<dedup_shard_state> self, store_writer_actor store,
            dispatcher_actor dispatcher, std::shared_ptr<herald::metrics> metrics,
            dedup_shard_config config);

} // namespace herald::actors
