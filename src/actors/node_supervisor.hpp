#pragma once

#include "actors/channel_actor.hpp"
#include "actors/interfaces.hpp"
#include "actors/retry_timer.hpp"
#include "domain/time.hpp"
#include "observability/health_board.hpp"
#include "observability/metrics.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/typed_response_promise.hpp>

namespace herald::actors {

/// How hard the node supervisor tries to keep components running, and how long it waits for
/// them to stop.
struct supervision_config {
  std::size_t max_restarts = 5;                          ///< per component within restart_window
  std::chrono::milliseconds restart_window{60000};       ///< measured on the domain clock
  std::chrono::milliseconds shutdown_grace{10000};       ///< per stage, then the stage is killed
  std::chrono::milliseconds shutdown_kill_timeout{5000}; ///< per stage, then it is given up

  /// An empty string when valid, else the reason.
  std::string validate() const;
};

/// When a component stops at shutdown: a stage stops only once the stage before it is gone,
/// so nothing is sent to an actor that is already gone (HTTP entry first, storage last).
enum class shutdown_stage : std::uint8_t { ingest, shards, dispatch, timer, writer, reader };

/// One long-lived actor the node supervisor watches.
struct supervised_component {
  std::string name; ///< as /readyz and the logs name it: "store_writer", "channel sms", …
  shutdown_stage stage;
  caf::actor handle;
  /// Starts a replacement and wires it in; empty when peers hold the handle for good, so
  /// the component cannot be restarted (its death is reported instead).
  std::function<caf::actor(caf::actor_system&)> restart;
};

/// A channel as the node runs it: settings and the adapter it calls.
struct channel_spec {
  channel_settings settings;
  std::shared_ptr<providers::provider_adapter> provider;
};

/// Starts a channel actor and attaches it to the dispatcher. Restartable: a new channel actor
/// is attached in the dead one's place and only that channel's unfinished tasks are reloaded,
/// because whatever sat in its mailbox and lanes died with it.
supervised_component start_channel(caf::actor_system& sys, channel_spec spec, channel_peers peers);

/// Starts the retry timer and attaches it to the dispatcher. Restartable: the timer only
/// caches what the database holds (RETRY_WAIT rows keep next_attempt_at, PENDING rows
/// send_at), so a new one is refilled by recovering every channel.
supervised_component start_retry_timer(caf::actor_system& sys, dispatcher_actor dispatcher,
                                       std::shared_ptr<herald::metrics> metrics,
                                       std::shared_ptr<const domain::clock> clock,
                                       retry_timer_config config);

/// The node's registry of its parts (style.md §12, after VAST's node and terminator). It
/// monitors every component; one that dies is restarted while it stays within max_restarts
/// per restart_window, else — or when it cannot be restarted — it is written on the health
/// board under its name, so /readyz fails naming it. Asked to shut down, it stops the
/// components stage by stage: each stage gets an exit and a grace period, then a kill and a
/// kill timeout, then the next stage starts regardless.
struct node_supervisor_state {
  static constexpr const char* name = "node_supervisor";

  std::vector<supervised_component> components;
  std::vector<bool> running;                                     ///< by index into components
  std::map<std::string, std::deque<domain::timestamp>> restarts; ///< by component name
  std::shared_ptr<health_board> health;
  std::shared_ptr<const domain::clock> clock;
  supervision_config config;
  std::optional<caf::typed_response_promise<bool>> shutdown; ///< set while shutting down
  std::uint8_t stopping_stage = 0;                           ///< the stage being stopped
  std::uint64_t deadline_generation = 0;
};

node_supervisor_actor::behavior_type
node_supervisor(node_supervisor_actor::stateful_pointer<node_supervisor_state> self,
                std::vector<supervised_component> components, std::shared_ptr<health_board> health,
                std::shared_ptr<const domain::clock> clock, supervision_config config);

} // namespace herald::actors
