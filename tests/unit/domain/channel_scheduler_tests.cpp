// domain::channel_scheduler on a manual clock: lanes, the full queue, the window, both
// buckets, expiry and scheduled tasks, the circuit breaker with its probe, throttle pauses and
// the cluster's rate share. Time is only what the tests pass in.
#include "domain/channel_scheduler.hpp"

#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace herald::domain;
using namespace std::chrono_literals;

namespace {

const timestamp t0 = from_unix_micros(1'800'000'000'000'000);

delivery task(const std::string& id, priority p = priority::normal) {
  delivery d;
  d.task_id = id;
  d.priority = p;
  return d;
}

channel_pacing pacing(double rate, double burst, std::size_t window = 64) {
  channel_pacing p;
  p.rate_per_sec = rate;
  p.burst = burst;
  p.window = window;
  return p;
}

std::vector<std::string> ids(const std::vector<delivery>& tasks) {
  std::vector<std::string> out;
  for (const auto& t : tasks)
    out.push_back(t.task_id);
  return out;
}

const channel_scheduler::droppable any_task = [](const delivery&) { return true; };
const auto never_asks = [](const delivery&) { return false; };

void enqueue_all(channel_scheduler& s, const std::vector<delivery>& tasks) {
  for (const auto& t : tasks)
    BOOST_REQUIRE(s.enqueue(t, any_task).queued);
}

std::vector<std::string> take_ids(channel_scheduler& s, timestamp now, std::size_t busy = 0) {
  return ids(s.take(now, busy, {}).taken);
}

using names = std::vector<std::string>;

/// The wake-up asked for, in µs (-1: none), rounded to 10 µs: buckets compute it in doubles.
long long wake_us(const std::optional<std::chrono::microseconds>& wake) {
  return wake ? (wake->count() + 5) / 10 * 10 : -1;
}

} // namespace

BOOST_AUTO_TEST_SUITE(channel_scheduler_tests)

BOOST_AUTO_TEST_CASE(urgent_lanes_go_first_within_the_window) {
  channel_scheduler s(pacing(1000, 100, 3), t0);
  enqueue_all(s, {task("low-1", priority::low), task("normal-1"), task("high-1", priority::high),
                  task("high-2", priority::high)});
  BOOST_TEST(s.queued() == 4u);
  BOOST_TEST(take_ids(s, t0, 1) == (names{"high-1", "high-2"})); // one place taken already
  BOOST_TEST(take_ids(s, t0, 3).empty());                        // window full
  BOOST_TEST(take_ids(s, t0, 0) == (names{"normal-1", "low-1"}));
  BOOST_TEST(s.queued() == 0u);
}

BOOST_AUTO_TEST_CASE(a_full_queue_keeps_the_most_urgent) {
  auto p = pacing(1000, 100);
  p.queue_limit = 2;
  channel_scheduler s(p, t0);
  enqueue_all(s, {task("low-1", priority::low), task("low-2", priority::low)});
  auto urgent = s.enqueue(task("high-1", priority::high), any_task);
  BOOST_TEST(urgent.queued);
  BOOST_TEST(urgent.dropped.value_or("") == "low-2"); // the newest of the least urgent lane
  auto late = s.enqueue(task("low-3", priority::low), any_task);
  BOOST_TEST(!late.queued); // nothing less urgent to drop
  BOOST_TEST(!late.dropped);
  const auto keep_all = [](const delivery&) { return false; };
  BOOST_TEST(!s.enqueue(task("high-2", priority::high), keep_all).queued);
  BOOST_TEST(s.queued() == 2u);
  BOOST_TEST(take_ids(s, t0) == (names{"high-1", "low-1"}));
}

BOOST_AUTO_TEST_CASE(the_take_bucket_paces_tasks_out_of_the_lanes) {
  channel_scheduler s(pacing(10, 2), t0); // 10 per second, burst 2
  enqueue_all(s, {task("a"), task("b"), task("c"), task("d")});
  auto plan = s.take(t0, 0, {});
  BOOST_TEST(ids(plan.taken) == (names{"a", "b"}));
  BOOST_TEST(wake_us(plan.wake_after) == 100'000); // one token per 100 ms
  BOOST_TEST(take_ids(s, t0 + 50ms).empty());
  BOOST_TEST(take_ids(s, t0 + 100ms) == (names{"c"}));
  BOOST_TEST(take_ids(s, t0 + 200ms) == (names{"d"}));
}

BOOST_AUTO_TEST_CASE(expired_and_scheduled_tasks_leave_the_lanes_without_a_token) {
  channel_scheduler s(pacing(1, 1), t0);
  auto expired = task("expired");
  expired.expire_at = t0 - 1s;
  auto recovered = task("recovered-sending"); // may have been delivered: never expired
  recovered.state = task_state::sending;
  recovered.expire_at = t0 - 1s;
  auto later = task("later");
  later.send_at = t0 + 1h;
  enqueue_all(s, {expired, later, recovered, task("next")});
  auto plan = s.take(t0, 0, {});
  BOOST_TEST(ids(plan.expired) == (names{"expired"}));
  BOOST_TEST(ids(plan.not_due) == (names{"later"}));
  BOOST_TEST(ids(plan.taken) == (names{"recovered-sending"})); // the one token
  BOOST_TEST(s.queued() == 1u);
}

BOOST_AUTO_TEST_CASE(an_open_circuit_fails_fresh_tasks_over_and_probes_once_half_open) {
  auto p = pacing(1000, 100);
  p.circuit_failure_threshold = 2;
  p.circuit_cool_down = 4s;
  channel_scheduler s(p, t0);
  s.observe("x", provider_health::failed, t0);
  s.observe("y", provider_health::failed, t0);
  BOOST_TEST((s.circuit() == circuit_breaker::state::open));
  auto tried = task("tried");
  tried.attempts = 1;
  auto later = task("later");
  later.send_at = t0 + 1h;
  enqueue_all(s, {task("fresh"), later, tried, task("refused")});
  const auto may_fail_over = [](const delivery& t) { return t.task_id != "refused"; };
  auto plan = s.take(t0 + 1s, 0, may_fail_over);
  BOOST_TEST(ids(plan.failing_over) == (names{"fresh"}));
  BOOST_TEST(ids(plan.not_due) == (names{"later"}));
  BOOST_TEST(plan.taken.empty());
  BOOST_TEST(wake_us(plan.wake_after) == 1'000'000); // a quarter of the cool-down

  // Half-open after the cool-down: one probe, the next waits for its answer.
  plan = s.take(t0 + 5s, 0, may_fail_over);
  BOOST_TEST(ids(plan.taken) == (names{"tried"}));
  BOOST_TEST((s.circuit() == circuit_breaker::state::half_open));
  plan = s.take(t0 + 5s, 1, may_fail_over);
  BOOST_TEST(plan.taken.empty());
  BOOST_TEST(wake_us(plan.wake_after) == 100'000);
  s.abandon_probe("tried"); // not sent after all: another may probe
  BOOST_TEST(take_ids(s, t0 + 5s) == (names{"refused"}));
  s.observe("refused", provider_health::answered, t0 + 6s);
  BOOST_TEST((s.circuit() == circuit_breaker::state::closed));
}

BOOST_AUTO_TEST_CASE(a_throttled_probe_gives_way_to_another_after_the_pause) {
  auto p = pacing(1000, 100);
  p.circuit_failure_threshold = 1;
  p.circuit_cool_down = 1s;
  channel_scheduler s(p, t0);
  s.observe("x", provider_health::failed, t0);
  enqueue_all(s, {task("probe"), task("next")});
  BOOST_TEST(take_ids(s, t0 + 2s) == (names{"probe"})); // half-open: one probe
  s.observe("probe", provider_health::throttled, t0 + 2s, 1s);
  BOOST_TEST((s.circuit() == circuit_breaker::state::half_open));
  BOOST_TEST(take_ids(s, t0 + 2500ms).empty());        // the pause
  BOOST_TEST(take_ids(s, t0 + 3s) == (names{"next"})); // the next probe, not stuck for good
}

BOOST_AUTO_TEST_CASE(a_throttle_pauses_calls_then_lets_one_through_at_a_time) {
  channel_scheduler s(pacing(1000, 100), t0);
  s.observe("x", provider_health::throttled, t0, 2s);
  enqueue_all(s, {task("a"), task("b")});
  auto plan = s.take(t0 + 500ms, 0, {});
  BOOST_TEST(plan.taken.empty());
  BOOST_TEST(wake_us(plan.wake_after) == 1'500'000);
  s.observe("y", provider_health::throttled, t0 + 500ms); // default pause, shorter: kept
  BOOST_TEST(wake_us(s.take(t0 + 1s, 0, {}).wake_after) == 1'000'000);
  // Pause over: one call at a time until one goes through.
  BOOST_TEST(take_ids(s, t0 + 2s, 0) == (names{"a"}));
  BOOST_TEST(take_ids(s, t0 + 2s, 1).empty());
  s.observe("a", provider_health::answered, t0 + 2s);
  BOOST_TEST(take_ids(s, t0 + 2s, 1) == (names{"b"}));
}

BOOST_AUTO_TEST_CASE(ready_calls_are_released_by_the_call_bucket_pause_and_lease) {
  auto p = pacing(10, 2); // the call bucket keeps 50 ms of the rate in hand: burst 1.5
  p.call_budget = 1s;
  channel_scheduler s(p, t0);
  const auto lease = t0 + 60s;
  s.ready({task("a"), "tok-a", lease});
  s.ready({task("b"), "tok-b", lease});
  s.ready({task("short"), "tok-s", t0 + 500ms});
  auto released = s.release(t0, never_asks);
  BOOST_REQUIRE(released.calls.size() == 1u);
  BOOST_TEST(released.calls[0].call.take_token == "tok-a");
  BOOST_TEST(wake_us(released.wake_after) == 50'000); // half a token short
  released = s.release(t0 + 100ms, never_asks);
  BOOST_REQUIRE(released.calls.size() == 2u);
  BOOST_TEST(released.calls[0].call.task.task_id == "b");
  BOOST_TEST(released.calls[0].lease_left);
  BOOST_TEST(released.calls[1].call.task.task_id == "short");
  BOOST_TEST(!released.calls[1].lease_left); // given back, no token spent
  BOOST_TEST(s.ready_count() == 0u);

  // Throttled: sends wait for the pause; a status question does not.
  s.observe("b", provider_health::throttled, t0 + 100ms, 1s);
  s.ready({task("ask"), "tok-q", lease});
  s.ready({task("send"), "tok-c", lease});
  const auto asks = [](const delivery& t) { return t.task_id == "ask"; };
  released = s.release(t0 + 200ms, asks);
  BOOST_REQUIRE(released.calls.size() == 1u);
  BOOST_TEST(released.calls[0].call.task.task_id == "ask");
  BOOST_TEST(wake_us(released.wake_after) == 900'000);
  BOOST_TEST(s.release(t0 + 1100ms, asks).calls.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_rate_share_sets_both_buckets) {
  channel_scheduler s(pacing(10, 2), t0);
  BOOST_TEST(!s.set_rate_share(1.0, t0)); // unchanged
  BOOST_TEST(s.set_rate_share(0.5, t0));
  BOOST_TEST(s.rate_share() == 0.5);
  enqueue_all(s, {task("a"), task("b"), task("c")});
  auto plan = s.take(t0, 0, {});
  BOOST_TEST(ids(plan.taken) == (names{"a"}));     // tokens kept up to the new burst, 1
  BOOST_TEST(wake_us(plan.wake_after) == 200'000); // 5 per second now
  // The call bucket too: after a call, the next waits a token at 5/s (at 10/s it would wait
  // 50 ms, half a token, with its 1.5 burst).
  s.ready({task("a"), "tok-a", t0 + 60s});
  s.ready({task("b"), "tok-b", t0 + 60s});
  auto released = s.release(t0, never_asks);
  BOOST_TEST(released.calls.size() == 1u);
  BOOST_TEST(wake_us(released.wake_after) == 200'000);
}

BOOST_AUTO_TEST_CASE(a_share_of_nothing_still_limits) {
  channel_scheduler s(pacing(10, 2), t0);
  BOOST_TEST(s.set_rate_share(0.0, t0));
  BOOST_TEST(s.rate_share() > 0.0); // a bucket without a rate would not limit at all
  enqueue_all(s, {task("a"), task("b")});
  auto plan = s.take(t0, 0, {});
  BOOST_TEST(ids(plan.taken) == (names{"a"})); // the one token a bucket always holds
  BOOST_REQUIRE(plan.wake_after);
  BOOST_TEST((*plan.wake_after > std::chrono::microseconds{1h}));
}

BOOST_AUTO_TEST_CASE(places_open_for_claims_only_while_a_fresh_task_would_go_at_once) {
  channel_scheduler s(pacing(10, 4, 3), t0);
  BOOST_TEST(s.open_places(t0, 0) == 3u); // the window, below the burst
  BOOST_TEST(s.open_places(t0, 2) == 1u);
  BOOST_TEST(s.open_places(t0, 3) == 0u);
  // Taken at claim: they spend take tokens like tasks out of the lanes.
  s.taken_at_claim(3, t0);
  BOOST_TEST(s.open_places(t0, 0) == 1u);
  s.taken_at_claim(5, t0); // more than there were tokens: the bucket stays at empty
  BOOST_TEST(s.open_places(t0, 0) == 0u);
  BOOST_TEST(s.open_places(t0 + 250ms, 0) == 2u); // 2.5 tokens refilled at 10/s
  // A queued task goes first: no place while one waits.
  enqueue_all(s, {task("queued")});
  BOOST_TEST(s.open_places(t0 + 250ms, 0) == 0u);
  BOOST_TEST(take_ids(s, t0 + 250ms) == (names{"queued"}));
  BOOST_TEST(s.open_places(t0 + 250ms, 1) == 1u);
}

BOOST_AUTO_TEST_CASE(no_place_opens_while_the_circuit_is_not_closed_or_a_pause_holds) {
  auto p = pacing(1000, 100);
  p.circuit_failure_threshold = 1;
  p.circuit_cool_down = 4s;
  channel_scheduler s(p, t0);
  s.observe("x", provider_health::failed, t0);
  BOOST_TEST(s.open_places(t0, 0) == 0u);      // open
  BOOST_TEST(s.open_places(t0 + 5s, 0) == 0u); // half-open: the probe comes from the lanes
  enqueue_all(s, {task("probe")});
  BOOST_TEST(take_ids(s, t0 + 5s) == (names{"probe"}));
  s.observe("probe", provider_health::answered, t0 + 5s);
  BOOST_TEST(s.open_places(t0 + 5s, 0) == 64u);
  s.observe("y", provider_health::throttled, t0 + 5s, 2s);
  BOOST_TEST(s.open_places(t0 + 6s, 0) == 0u); // paused
  BOOST_TEST(s.open_places(t0 + 7s, 0) == 0u); // one call at a time until one goes through
  s.observe("z", provider_health::answered, t0 + 7s);
  BOOST_TEST(s.open_places(t0 + 7s, 0) == 64u);
}

BOOST_AUTO_TEST_SUITE_END()
