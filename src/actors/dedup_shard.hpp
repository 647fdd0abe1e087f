#pragma once

#include "actors/interfaces.hpp"
#include "domain/deadline_queue.hpp"
#include "observability/metrics.hpp"

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>

#include <caf/actor_clock.hpp>
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
/// database (the store writer dispatches what a claim created).
struct dedup_shard_state {
  static constexpr const char* name = "dedup_shard";

  struct waiter {
    domain::message_plan plan;
    caf::typed_response_promise<persistence::claim_result> promise;
  };

  /// The claims of one message id: the front one is at the store, the rest wait behind it.
  struct key_claims {
    std::deque<waiter> waiters;
    std::uint64_t at_store = 0; ///< the number of the front's store request
  };

  /// A store request: the message id whose front claim it carries, and its number.
  struct store_request {
    std::string message_id;
    std::uint64_t number = 0;
  };

  store_writer_actor store;
  std::shared_ptr<herald::metrics> metrics; ///< counts the duplicates answered here
  dedup_shard_config config;
  std::unordered_map<std::string, key_claims> waiting; ///< by message id
  std::size_t waiting_claims = 0;                      ///< over all message ids
  /// Of the store requests made: numbered and stamped in order with one timeout, so one timer
  /// armed for the front serves them all.
  domain::deadline_queue<caf::actor_clock::time_point, store_request> deadlines;
  std::uint64_t requests_made = 0;
  bool timer_armed = false;
};

dedup_shard_actor::behavior_type
dedup_shard(dedup_shard_actor::stateful_pointer<dedup_shard_state> self, store_writer_actor store,
            std::shared_ptr<herald::metrics> metrics, dedup_shard_config config);

} // namespace herald::actors
