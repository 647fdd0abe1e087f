#pragma once

#include "actors/channel_actor.hpp"
#include "actors/interfaces.hpp"

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace herald::actors {

/// A channel as the dispatcher starts it: settings and the adapter it calls.
struct channel_spec {
  channel_settings settings;
  std::shared_ptr<providers::provider_adapter> provider;
};

/// How the dispatcher supervises and sweeps.
struct dispatcher_config {
  std::size_t max_restarts = 5; ///< per channel within restart_window
  std::chrono::seconds restart_window{60};
  std::uint64_t recovery_page = 1000;              ///< tasks per recovery read
  std::chrono::milliseconds sweep_interval{30000}; ///< how often unfinished tasks are re-read
  std::chrono::milliseconds store_timeout{30000};
};

/// Routes tasks to their channel actors — or to the retry timer while they are not yet due —
/// and supervises the channels: a channel actor that dies is restarted (at most max_restarts
/// per window) and unfinished tasks are reloaded from the database, because whatever sat in
/// its mailbox died with it. Every sweep interval it re-reads unfinished tasks, so a task
/// whose message was lost, or whose lease a dead node left behind, is picked up; channels and
/// the timer ignore tasks they already hold.
struct dispatcher_state {
  static constexpr const char* name = "dispatcher";

  std::map<std::string, channel_spec> specs;
  std::map<std::string, channel_actor> channels;
  std::map<std::string, std::deque<std::chrono::steady_clock::time_point>> restarts;
  store_writer_actor store;
  store_reader_actor reader;
  retry_timer_actor timer;
  std::shared_ptr<herald::metrics> metrics;
  std::shared_ptr<const domain::clock> clock;
  dispatcher_config config;
  bool draining = false;
  bool sweeping = false; ///< a recovery pass is running; a sweep tick meanwhile is skipped
};

dispatcher_actor::behavior_type
dispatcher(dispatcher_actor::stateful_pointer<dispatcher_state> self,
           std::vector<channel_spec> specs, store_writer_actor store, store_reader_actor reader,
           std::shared_ptr<herald::metrics> metrics, std::shared_ptr<const domain::clock> clock,
           dispatcher_config config);

} // namespace herald::actors
