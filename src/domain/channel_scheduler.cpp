#include "domain/channel_scheduler.hpp"

#include "domain/task_state.hpp"

#include <algorithm>

namespace herald::domain {

namespace {

std::size_t lane_of(priority p) {
  return static_cast<std::size_t>(p);
}

// Calls reach a provider with some jitter (a connection being opened, a busy host) and the
// provider counts arrivals: the call bucket keeps this much of the rate in hand (at most half
// the burst), so that calls bunched on the way by up to this much still arrive within
// rate + burst in every second. Measured on loopback: up to 2 calls over at 200/s without it.
constexpr std::chrono::milliseconds transit_allowance{50};

double call_burst(double rate_per_sec, double burst) {
  const auto in_hand =
      std::chrono::duration<double>(transit_allowance).count() * std::max(rate_per_sec, 0.0);
  return burst - std::min(in_hand, burst / 2);
}

// The least part of the rate a node takes (see set_rate_share).
constexpr double min_rate_share = 1e-6;

// How long a half-open breaker's next probe waits while one is on its way.
constexpr std::chrono::milliseconds probe_recheck{100};

void wake_within(std::optional<std::chrono::microseconds>& wake, std::chrono::microseconds after) {
  if (!wake || after < *wake)
    wake = after;
}

} // namespace

channel_scheduler::channel_scheduler(const channel_pacing& pacing, timestamp now)
    : pacing_(pacing), take_bucket_(pacing.rate_per_sec, pacing.burst, now),
      call_bucket_(pacing.rate_per_sec, call_burst(pacing.rate_per_sec, pacing.burst), now),
      breaker_(pacing.circuit_failure_threshold, pacing.circuit_cool_down) {}

channel_scheduler::enqueued channel_scheduler::enqueue(delivery task, const droppable& may_drop) {
  enqueued result;
  if (queued_ >= pacing_.queue_limit) {
    for (std::size_t lane = lanes_.size(); lane-- > lane_of(task.priority) + 1;) {
      auto& tasks = lanes_[lane];
      if (tasks.empty() || !may_drop(tasks.back()))
        continue;
      result.dropped = tasks.back().task_id;
      tasks.pop_back();
      queued_ -= 1;
      break;
    }
    if (!result.dropped)
      return result;
  }
  requeue(std::move(task));
  result.queued = true;
  return result;
}

void channel_scheduler::requeue(delivery task) {
  queued_ += 1;
  lanes_[lane_of(task.priority)].push_back(std::move(task));
}

std::optional<std::chrono::microseconds> channel_scheduler::pause_left(timestamp now) const {
  if (paused_until_ <= now)
    return std::nullopt;
  return std::chrono::duration_cast<std::chrono::microseconds>(paused_until_ - now);
}

std::optional<std::chrono::microseconds> channel_scheduler::wait_before_take(timestamp now) {
  if (auto pause = pause_left(now))
    return pause;
  if (breaker_.is_open(now))
    return std::chrono::duration_cast<std::chrono::microseconds>(pacing_.circuit_cool_down / 4);
  if (auto wait = take_bucket_.wait_time(now); wait.count() > 0)
    return wait;
  return std::nullopt;
}

void channel_scheduler::fail_over_fresh(timestamp now,
                                        const std::function<bool(const delivery&)>& may_fail_over,
                                        plan& out) {
  for (auto& lane : lanes_) {
    std::deque<delivery> keep;
    for (auto& task : lane) {
      // A task not yet due (scheduled, deferred, an escalation step) is not failed over early:
      // it goes back to the timer and is judged when it comes back due. A task tried before
      // stays: its outcome may be unknown, and failing it over could send twice.
      const bool due = !task.send_at || *task.send_at <= now;
      if (!due || task.attempts != 0 || task.state != task_state::pending || !may_fail_over(task)) {
        keep.push_back(std::move(task));
        continue;
      }
      queued_ -= 1;
      out.failing_over.push_back(std::move(task));
    }
    lane = std::move(keep);
  }
}

channel_scheduler::plan
channel_scheduler::take(timestamp now, std::size_t busy,
                        const std::function<bool(const delivery&)>& may_fail_over) {
  plan out;
  if (may_fail_over && breaker_.is_open(now))
    fail_over_fresh(now, may_fail_over, out);
  for (auto& lane : lanes_) {
    while (!lane.empty() && busy + out.taken.size() < pacing_.window) {
      auto& task = lane.front();
      // Only PENDING and RETRY_WAIT may expire (design.md §3): a recovered SENDING task may
      // have been delivered already, so it is resent with its request id instead.
      if (task.expire_at && *task.expire_at <= now &&
          can_transition(task.state, task_state::expired)) {
        out.expired.push_back(std::move(task));
      } else if (task.send_at && *task.send_at > now) {
        out.not_due.push_back(std::move(task));
      } else {
        if (auto wait = wait_before_take(now)) {
          wake_within(out.wake_after, *wait);
          break;
        }
        if (throttle_probing_ && busy + out.taken.size() > 0)
          break; // after a throttle, one call at a time until one goes through
        const bool probing = breaker_.current() != circuit_breaker::state::closed;
        if (!breaker_.allow(now)) { // a half-open probe is already on its way
          wake_within(out.wake_after, probe_recheck);
          break;
        }
        if (probing)
          probe_task_id_ = task.task_id;
        take_bucket_.try_take(now);
        out.taken.push_back(std::move(task));
      }
      lane.pop_front();
      queued_ -= 1;
    }
  }
  return out;
}

std::size_t channel_scheduler::open_places(timestamp now, std::size_t busy) {
  if (queued_ != 0 || busy >= pacing_.window || throttle_probing_ ||
      breaker_.current() != circuit_breaker::state::closed || wait_before_take(now))
    return 0;
  const auto tokens = static_cast<std::size_t>(take_bucket_.available(now));
  return std::min(tokens, pacing_.window - busy);
}

void channel_scheduler::taken_at_claim(std::size_t count, timestamp now) {
  // A place was offered for a token there was: one missing now went to a task queued since,
  // and the bucket is not driven below empty for it.
  for (std::size_t i = 0; i < count; ++i)
    if (!take_bucket_.try_take(now))
      break;
}

void channel_scheduler::ready(ready_call call) {
  ready_.push_back(std::move(call));
}

channel_scheduler::release_plan
channel_scheduler::release(timestamp now, const std::function<bool(const delivery&)>& asks_first) {
  release_plan out;
  while (!ready_.empty()) {
    auto& next = ready_.front();
    const bool lease_left = next.lease_until - now > pacing_.call_budget;
    const bool sends = lease_left && !asks_first(next.task);
    if (sends) {
      if (auto pause = pause_left(now)) { // throttled since it was committed
        out.wake_after = *pause;
        break;
      }
      if (!call_bucket_.try_take(now)) {
        out.wake_after = call_bucket_.wait_time(now);
        break;
      }
    }
    out.calls.push_back({std::move(next), lease_left});
    ready_.pop_front();
  }
  return out;
}

void channel_scheduler::observe(const std::string& task_id, provider_health health, timestamp now,
                                std::optional<std::chrono::milliseconds> retry_after) {
  if (task_id == probe_task_id_) {
    probe_task_id_.clear();
    // A throttle says nothing of whether the provider is back: the breaker is not fed, so the
    // probe is given up and another goes once the pause ends (else it stayed half-open with a
    // probe in flight for good, and the channel took nothing more).
    if (health == provider_health::throttled)
      breaker_.abandon_probe();
  }
  if (health != provider_health::throttled)
    throttle_probing_ = false;
  switch (health) {
  case provider_health::answered:
    breaker_.on_success();
    break;
  case provider_health::throttled:
    // A provider saying "not now" is up: the pause holds calls back, the breaker is not fed
    // (it would fail fresh tasks over for a quota). The longest pause asked for wins, and
    // until a call goes through again one call at a time tests whether it is over.
    paused_until_ = std::max(paused_until_, now + retry_after.value_or(pacing_.throttle_pause));
    throttle_probing_ = true;
    break;
  case provider_health::failed:
    breaker_.on_failure(now);
    break;
  }
}

void channel_scheduler::abandon_probe(const std::string& task_id) {
  if (task_id != probe_task_id_)
    return;
  breaker_.abandon_probe();
  probe_task_id_.clear();
}

bool channel_scheduler::set_rate_share(double share, timestamp now) {
  // A bucket with no rate has no limit: a node's share never goes that low (a node owning no
  // partition has nothing of its own to send, and keeps a trickle for what it still holds).
  share = std::clamp(share, min_rate_share, 1.0);
  if (share == rate_share_)
    return false;
  rate_share_ = share;
  const double rate = pacing_.rate_per_sec * share;
  const double burst = pacing_.burst * share;
  take_bucket_.set_limits(rate, burst, now);
  call_bucket_.set_limits(rate, call_burst(rate, burst), now);
  return true;
}

} // namespace herald::domain
