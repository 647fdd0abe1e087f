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
  std::chrono::milliseconds claim_timeout{10000};
  std::unordered_map<std::string, std::deque<waiter>> waiting; ///< by message id; front in flight
};

dedup_shard_actor::behavior_type
dedup_shard(dedup_shard_actor::stateful_pointer<dedup_shard_state> self, store_writer_actor store,
            dispatcher_actor dispatcher, std::shared_ptr<herald::metrics> metrics,
            std::chrono::milliseconds claim_timeout);

} // namespace herald::actors
