#pragma once

#include <atomic>
#include <cstdint>

namespace herald::actors {

/// What a node's cluster member and its channel actors share without messages: how many live
/// nodes split each channel's rate (written by the member, read by channels before each call),
/// and how many provider calls the channels have in flight (the other way round, for
/// heartbeats). One per node; a single node leaves members at 1.
class cluster_share {
public:
  std::uint32_t members() const { return members_.load(std::memory_order_relaxed); }
  void set_members(std::uint32_t count) {
    members_.store(count == 0 ? 1 : count, std::memory_order_relaxed);
  }

  std::int64_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  void add_in_flight(std::int64_t delta) { in_flight_.fetch_add(delta, std::memory_order_relaxed); }

private:
  std::atomic<std::uint32_t> members_{1};
  std::atomic<std::int64_t> in_flight_{0};
};

} // namespace herald::actors
