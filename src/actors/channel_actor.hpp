#pragma once

#include "actors/interfaces.hpp"
#include "domain/backoff.hpp"
#include "domain/rate_limit.hpp"
#include "domain/time.hpp"
#include "observability/metrics.hpp"

#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <caf/typed_response_promise.hpp>

namespace herald::actors {

/// How one channel sends.
struct channel_settings {
  std::string name;
  double rate_per_sec = 1000; ///< token bucket refill; provider calls per second at most
  double burst = 100;         ///< token bucket size
  std::size_t window = 64;    ///< provider calls in flight at most
  domain::retry_policy retry = domain::default_retry_policy();
  std::chrono::milliseconds store_timeout{10000};

  /// An empty string when valid, else the reason.
  std::string validate() const;
};

/// One channel's sender. Tasks wait in three priority lanes; a task leaves its lane when the
/// token bucket and the in-flight window allow, is committed as SENDING (in a batch with its
/// neighbours), and only then handed to the provider. Results are committed in batches too.
struct channel_state {
  static constexpr const char* name = "channel";

  struct call {
    domain::delivery task;
    domain::timestamp started_at;
  };

  channel_settings settings;
  std::shared_ptr<channels::provider_adapter> provider;
  store_writer_actor store;
  std::shared_ptr<herald::metrics> metrics;
  std::shared_ptr<const domain::clock> clock;
  std::optional<domain::token_bucket> bucket;
  std::array<std::deque<domain::delivery>, 3> lanes; ///< by domain::priority
  std::unordered_set<std::string> known;             ///< queued, being marked or in flight
  std::unordered_map<std::string, call> calls;       ///< in flight, by task id
  std::size_t marking = 0;                           ///< waiting for the SENDING commit
  std::size_t writing = 0;                           ///< results waiting for their commit
  bool tick_queued = false;
  bool draining = false;
  std::vector<caf::typed_response_promise<bool>> drain_waiters;
  std::mt19937_64 jitter_rng{std::random_device{}()};
};

channel_actor::behavior_type
channel(channel_actor::stateful_pointer<channel_state> self, channel_settings settings,
        std::shared_ptr<channels::provider_adapter> provider, store_writer_actor store,
        std::shared_ptr<herald::metrics> metrics, std::shared_ptr<const domain::clock> clock);

} // namespace herald::actors
