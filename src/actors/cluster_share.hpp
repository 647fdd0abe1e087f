#pragma once

#include "persistence/task_store.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>

namespace herald::actors {

/// What a node's cluster member shares with the actors that work on its own initiative, without
/// messages: the part of each channel's rate and burst this node may use (written by the
/// member, read by channels before each call), the partitions it owns (read by the events
/// actor and the reconciler before each read, so a restarted one knows them at once), and how
/// many provider calls the channels have in flight (the other way round, for heartbeats). One
/// per node; a single node keeps the whole rate and every partition.
class cluster_share {
public:
  /// In (0, 1]: this node's part of every channel's rate and burst.
  double rate_share() const { return rate_share_.load(std::memory_order_relaxed); }
  void set_rate_share(double share) {
    rate_share_.store(std::clamp(share, 1e-6, 1.0), std::memory_order_relaxed);
  }

  /// Calls in flight now. Channels add and remove theirs apart, so the sum may dip below zero
  /// for a moment: it reads as none then.
  std::uint64_t in_flight() const {
    return static_cast<std::uint64_t>(
        std::max<std::int64_t>(0, in_flight_.load(std::memory_order_relaxed)));
  }
  void add_in_flight(std::int64_t delta) { in_flight_.fetch_add(delta, std::memory_order_relaxed); }

  /// The partitions this node owns now; nullopt: every one (a node without a cluster).
  persistence::partition_filter owned_partitions() const {
    std::lock_guard lock{owned_mutex_};
    return owned_;
  }
  void set_owned_partitions(persistence::partition_filter owned) {
    std::lock_guard lock{owned_mutex_};
    owned_ = std::move(owned);
  }

private:
  std::atomic<double> rate_share_{1.0};
  mutable std::mutex owned_mutex_;
  persistence::partition_filter owned_;
  std::atomic<std::int64_t> in_flight_{0};
};

} // namespace herald::actors
