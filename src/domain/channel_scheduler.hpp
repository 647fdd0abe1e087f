#pragma once

#include "domain/circuit_breaker.hpp"
#include "domain/message.hpp"
#include "domain/rate_limit.hpp"
#include "domain/time.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace herald::domain {

/// How a channel paces its provider calls (the channel's config).
struct channel_pacing {
  double rate_per_sec = 1000; ///< calls per second at most (token buckets)
  double burst = 100;
  std::size_t window = 64; ///< tasks taken and not yet settled, at most
  std::size_t queue_limit = 10000;
  std::uint32_t circuit_failure_threshold = 20;
  std::chrono::milliseconds circuit_cool_down{30000};
  std::chrono::milliseconds throttle_pause{1000}; ///< after a throttle without Retry-After
  /// How long one call may take: a call starts only while its lease leaves at least this.
  std::chrono::milliseconds call_budget{0};
};

/// A task committed SENDING under a take, waiting for a call token.
struct ready_call {
  delivery task;
  std::string take_token;
  timestamp lease_until;
};

/// What a provider's answer says of its health.
enum class provider_health {
  answered,  ///< it answered (success, or a permanent refusal of the recipient)
  failed,    ///< an error or a timeout: feeds the circuit breaker
  throttled, ///< "not now": a pause, the breaker left alone
};

/// When a channel's tasks go, as pure logic over time passed in: three priority lanes, a take
/// bucket pacing tasks out of the lanes, a window on tasks taken and not settled, a circuit
/// breaker (one probe at a time while half-open), the provider's throttle pauses (one call at a
/// time until one goes through) and a call bucket pacing the calls themselves. Two buckets at
/// the same rate: the first keeps the flow into commits steady; the second spaces the calls,
/// which a batch's commit lets go together, so the provider sees at most rate × seconds +
/// burst. The channel actor wires it to the store and the provider.
class channel_scheduler {
public:
  channel_scheduler(const channel_pacing& pacing, timestamp now);

  /// Whether a queued task may give its place to a more urgent one (false keeps it: e.g. a
  /// resend the provider was asked about).
  using droppable = std::function<bool(const delivery&)>;

  struct enqueued {
    bool queued = false;
    std::optional<std::string> dropped; ///< the task that gave its place (left to the sweep)
  };
  /// Queues `task` in its lane. A full queue keeps the most urgent tasks: `task` takes the
  /// place of the newest droppable task of the least urgent lane behind its own.
  enqueued enqueue(delivery task, const droppable& may_drop);
  /// Queues a task this channel held already (back from a failover or a status question).
  void requeue(delivery task);
  std::size_t queued() const { return queued_; }

  /// What to do with queued tasks now.
  struct plan {
    std::vector<delivery> expired;      ///< expire_at passed (PENDING and RETRY_WAIT only)
    std::vector<delivery> not_due;      ///< send_at still ahead: back to the timer
    std::vector<delivery> failing_over; ///< never tried, due, while the circuit is open
    std::vector<delivery> taken;        ///< to be committed SENDING, then called
    std::optional<std::chrono::microseconds> wake_after; ///< when to look again
  };
  /// Takes what may go at `now` with `busy` tasks taken and not settled. `may_fail_over`:
  /// whether a fresh task may leave for the fallback while the circuit is open.
  plan take(timestamp now, std::size_t busy,
            const std::function<bool(const delivery&)>& may_fail_over);

  /// How many fresh tasks it would take at `now` with `busy` taken: the places a claim may fill
  /// with tasks inserted taken already (domain::claim_places). None while tasks queue (they go
  /// first), nor while the circuit is not closed, a pause holds or a throttle is probed.
  std::size_t open_places(timestamp now, std::size_t busy);
  /// `count` tasks were taken in their claim, in places open_places offered: they spend take
  /// tokens as tasks taken from the lanes do.
  void taken_at_claim(std::size_t count, timestamp now);

  /// A task committed SENDING: it waits for a call token.
  void ready(ready_call call);
  std::size_t ready_count() const { return ready_.size(); }

  struct released {
    ready_call call;
    bool lease_left = true; ///< false: too little lease for a call, to be given back
  };
  struct release_plan {
    std::vector<released> calls; ///< in commit order
    std::optional<std::chrono::microseconds> wake_after;
  };
  /// Releases ready tasks in order as call tokens and pauses allow. `asks_first`: the task's
  /// call is a status question, which takes no token and waits for no pause.
  release_plan release(timestamp now, const std::function<bool(const delivery&)>& asks_first);

  /// A provider's answer to the call of `task_id`.
  void observe(const std::string& task_id, provider_health health, timestamp now,
               std::optional<std::chrono::milliseconds> retry_after = std::nullopt);
  /// The half-open probe `task_id` went no call's way (not sent, or only asked about).
  void abandon_probe(const std::string& task_id);
  circuit_breaker::state circuit() const { return breaker_.current(); }

  /// The part of rate and burst this node takes (a cluster's share, clamped to (0, 1]); true
  /// when it changed.
  bool set_rate_share(double share, timestamp now);
  double rate_share() const { return rate_share_; }

private:
  // Whether a task may be taken now; else when to look again.
  std::optional<std::chrono::microseconds> wait_before_take(timestamp now);
  std::optional<std::chrono::microseconds> pause_left(timestamp now) const;
  void fail_over_fresh(timestamp now, const std::function<bool(const delivery&)>& may_fail_over,
                       plan& out);

  channel_pacing pacing_;
  std::array<std::deque<delivery>, 3> lanes_; ///< by priority
  std::size_t queued_ = 0;
  std::deque<ready_call> ready_;
  token_bucket take_bucket_;
  token_bucket call_bucket_;
  circuit_breaker breaker_;
  std::string probe_task_id_;     ///< the half-open probe, while it is on its way
  timestamp paused_until_{};      ///< throttled by the provider until then
  bool throttle_probing_ = false; ///< throttled, and no call has gone through since
  double rate_share_ = 1.0;
};

} // namespace herald::domain
