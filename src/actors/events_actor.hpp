#pragma once

#include "actors/cluster_share.hpp"
#include "actors/interfaces.hpp"
#include "actors/node_supervisor.hpp"
#include "domain/backoff.hpp"
#include "domain/time.hpp"
#include "observability/metrics.hpp"
#include "persistence/task_store.hpp"
#include "providers/signed_poster.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace herald::actors {

/// How the events actor posts.
struct events_actor_config {
  domain::retry_policy retry = domain::default_retry_policy(); ///< then the event is DEAD
  std::chrono::milliseconds poll_interval{500}; ///< how often the outbox is read, at least
  std::size_t max_in_flight = 64;               ///< posts waiting for an answer, at most
  std::string owner; ///< who claims the events it posts: the node's lease owner
  /// How long a claimed event is this node's alone: longer than a post and the write of its
  /// outcome may take, or another node could post it too.
  std::chrono::milliseconds claim{30000};

  /// An empty string when valid, else the reason.
  std::string validate() const;
};

/// Where events are posted: a providers::signed_poster in production (set up for the events
/// url and secret); tests wrap one to hand its answers over on the test thread. The callback
/// may run on any thread.
using event_poster = std::function<void(providers::signed_post, providers::post_callback)>;

/// The body of an event's POST (docs/events.md): {"type","timestamp","data":{"event_id",
/// "task_id","message_id","tenant","biz_type","biz_id","user_id","channel","state",
/// "occurred_at"}}, `timestamp` being the webhook-timestamp it is signed with.
std::string event_payload(const persistence::status_event& event, std::int64_t unix_seconds);

/// Posts the outbox's events, each as a signed POST whose webhook-id is the event id: many
/// tasks' events at once (up to max_in_flight), one task's strictly one after another (the
/// store hands out only a task's lowest PENDING event). Only events of the partitions this node
/// owns, each claimed in the database by this node (`owner`) for `claim` in the statement that
/// reads it, and claimed again for `claim` by a poll once half of it has passed while its post is
/// in flight, so of the nodes of a cluster one posts it, also while partitions move and posts
/// run long. A 2xx
/// answer delivers the event;
/// anything else schedules it again by `retry`, until it is DEAD; while posts fail, one event
/// per poll interval probes the receiver (receiver_failing). Outcomes are written in
/// batches before the outbox is read again, so an answered event is never posted again by
/// mistake; one lost with the process (a crash between the answer and its write) is posted
/// again once its claim runs out: delivery is at least once, and receivers dedupe by webhook-id.
/// Spawn it detached: the store calls block.
struct events_state {
  static constexpr const char* name = "events";

  std::shared_ptr<persistence::task_store> store;
  event_poster post;
  std::shared_ptr<herald::metrics> metrics;
  std::shared_ptr<const domain::clock> clock;
  std::shared_ptr<const cluster_share> share; ///< the partitions owned; null: every one
  events_actor_config config;
  /// A posted event still waiting for its answer, and until when this node's claim on it holds.
  struct post_in_flight {
    persistence::status_event event;
    domain::timestamp claimed_until;
  };
  std::unordered_map<std::string, post_in_flight> in_flight; ///< by event id
  std::vector<persistence::event_outcome> unsettled;         ///< answered, not yet written
  bool flush_queued = false;
  /// The last answer was a failure: until a post succeeds, one event at a time is posted per
  /// poll interval (a probe), so a receiver that is down costs a post and a read per interval
  /// instead of a storm of retries against it and the database.
  bool receiver_failing = false;
  std::mt19937_64 jitter_rng{std::random_device{}()};
};

events_actor::behavior_type events(events_actor::stateful_pointer<events_state> self,
                                   std::shared_ptr<persistence::task_store> store,
                                   event_poster post, std::shared_ptr<herald::metrics> metrics,
                                   std::shared_ptr<const domain::clock> clock,
                                   std::shared_ptr<const cluster_share> share,
                                   events_actor_config config);

/// Starts the events actor detached, on its own store connection, for the node supervisor:
/// restartable, and stopped with the timer (its work is all in the database).
supervised_component start_events(caf::actor_system& sys,
                                  std::shared_ptr<persistence::task_store> store, event_poster post,
                                  std::shared_ptr<herald::metrics> metrics,
                                  std::shared_ptr<const domain::clock> clock,
                                  std::shared_ptr<const cluster_share> share,
                                  events_actor_config config);

} // namespace herald::actors
