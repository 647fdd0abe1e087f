#pragma once

#include "actors/channel_actor.hpp"
#include "actors/interfaces.hpp"

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace herald::actors {

/// How the dispatcher recovers and sweeps.
struct dispatcher_config {
  std::uint64_t recovery_page = 1000; ///< tasks per recovery read at most
  /// A recovery page holds at most this many in-flight windows of the channel it is for (of
  /// the smallest window when it is for all channels), so a page never floods a channel.
  std::uint64_t windows_per_page = 4;
  std::chrono::milliseconds sweep_interval{30000}; ///< how often unfinished tasks are re-read
  /// A cluster node: owns no partition (recovers and sweeps nothing) until its cluster member
  /// says which are its own.
  bool clustered = false;
  std::chrono::milliseconds store_timeout{30000};
};

/// Routes deliveries to their channel actors — or to the retry timer while they are not yet
/// due — and recovers unfinished tasks from the database. Which actors it routes to, the node
/// supervisor tells it (attach), also after a restart; it supervises nothing itself.
/// Recovery reads one page at a time and reads the next only when the channels have had time
/// to send the previous one at their configured rate, so a large backlog never lands in the
/// channels' lanes at once. Every sweep interval it re-reads unfinished tasks, so a task
/// whose message was lost, or whose lease a dead node left behind, is picked up; channels and
/// the timer ignore tasks they already hold. Recovery and sweeps alike skip retries not due
/// before the next sweep (that sweep reads them, or the timer holds them), so a large retry
/// backlog is neither loaded at start nor re-read every interval. When held tasks come due
/// the timer hands over their ids; the dispatcher reads them by id, a batch at a time, and
/// answers how long the channels need to send each batch, which paces the next.
struct dispatcher_state {
  static constexpr const char* name = "dispatcher";

  /// One recovery pass: which channel (empty: all), whether it is a sweep, how far it got.
  struct recovery_pass {
    std::string channel;
    bool sweep = false; ///< a sweep (else recovery at start or after a channel's restart)
    std::string after;  ///< last task id read
    std::uint64_t found = 0;
  };

  std::map<std::string, channel_settings> settings; ///< by channel name: window and rate
  std::map<std::string, channel_actor> channels;
  retry_timer_actor timer;
  store_reader_actor reader;
  std::shared_ptr<const domain::clock> clock;
  dispatcher_config config;
  std::optional<recovery_pass> recovering;
  std::deque<recovery_pass> recoveries_waiting; ///< to run next, each at most once
  bool draining = false;
  /// In a cluster, the partitions this node owns (and by partition, whether it owns it);
  /// nullopt: every partition (a single node, or a cluster member before its first view).
  std::optional<partition_list> owned;
  std::vector<bool> owns;
  cluster_member_actor cluster; ///< where new tasks of other nodes' partitions go
};

dispatcher_actor::behavior_type
dispatcher(dispatcher_actor::stateful_pointer<dispatcher_state> self,
           std::vector<channel_settings> channels, store_reader_actor reader,
           std::shared_ptr<const domain::clock> clock, dispatcher_config config);

} // namespace herald::actors
