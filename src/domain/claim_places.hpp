#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace herald::domain {

/// Places a channel holds open for tasks taken in the claim that creates them. Such a task is
/// inserted SENDING under this node's lease, so its happy path writes it twice (inserted taken,
/// then SENT with its first call on the row) instead of three times, and it reaches the provider
/// without a commit of its own.
///
/// The channel offers places while it could take a fresh task at once (nothing queued, the
/// circuit closed, no pause; room in its window and its take bucket), and withdraws the offer
/// whenever it looks again; the store writer takes places for a claim before the claim's
/// transaction, and after it tells the channel which tasks it took and how many places it did
/// not use. Shared by those two actors, so it is the one mutable thing here with a lock.
///
/// Each channel actor holds the places in an epoch of its own: a restarted channel starts a new
/// one, and what the writer took in an earlier epoch (told to it with that epoch) is not counted
/// against the new actor's window, which never offered it.
class claim_places {
public:
  /// A channel's places, for tasks leased to `lease_owner` for `lease`.
  claim_places(std::string lease_owner, std::chrono::milliseconds lease)
      : lease_owner_(std::move(lease_owner)), lease_(lease) {}

  /// A channel actor takes the places over: nothing is open, and the epoch it answers is its
  /// own from now on.
  std::uint64_t begin_epoch();
  /// The channel: `places` are open from now on, instead of what it offered before. Answers
  /// how many of the earlier offer (of this epoch) were taken since it was made, now on their
  /// way back.
  std::size_t offer(std::size_t places);

  /// A channel actor that stops: nothing stays open in its epoch (a successor's is left alone).
  void close(std::uint64_t epoch);

  struct taken {
    std::size_t places = 0;
    std::uint64_t epoch = 0; ///< whose offer they came from
  };
  /// The store writer: takes up to `wanted` of the places open.
  taken take(std::size_t wanted);

  const std::string& lease_owner() const { return lease_owner_; }
  std::chrono::milliseconds lease() const { return lease_; }

private:
  const std::string lease_owner_;
  const std::chrono::milliseconds lease_;
  std::mutex mutex_;
  std::uint64_t epoch_ = 0;
  std::size_t offered_ = 0;
  std::size_t open_ = 0;
};

} // namespace herald::domain
