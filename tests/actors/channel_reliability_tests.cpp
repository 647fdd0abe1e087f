// What a channel does when its store or its fallback lets it down: a known outcome is never
// dropped, a lost answer never turns into a second send, and a failover never into nothing.

#include "channel_fixture.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald;
using domain::task_state;
using persistence::faulty_task_store;
using test::channel_fixture;
using test::recording_provider;

namespace {

struct reliability_fixture : channel_fixture {
  /// The dispatcher sweeps every sweep interval; past the lease a SENDING row is fair game.
  void sweep_after_lease() {
    advance_both(std::chrono::milliseconds{61000});
    caf::anon_send(channel, actors::recover_atom_v, std::string{});
    run();
  }

  std::string metric_line(const std::string& name) {
    const auto text = metrics->render();
    const auto at = text.find(name + " ");
    return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at);
  }

  actors::dispatcher_actor channel;
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(channel_reliability_tests, reliability_fixture)

BOOST_AUTO_TEST_CASE(a_failed_result_write_is_kept_until_recorded_and_never_resent) {
  auto id = seed_sms(1).at(0);
  faulty_store->script(2, faulty_task_store::fault::fail); // 1: SENDING, 2: the outcome
  channel = spawn_channel();
  dispatch(channel, unfinished());
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  BOOST_TEST(state(id) == "SENDING"); // the outcome is held, not yet written

  advance_both(std::chrono::milliseconds{100}); // the first rewrite is due
  BOOST_TEST(state(id) == "SENT");
  BOOST_TEST(task(id).attempt_log.size() == 1u);
  sweep_after_lease();
  BOOST_TEST(provider->calls.size() == 1u);
  BOOST_TEST(metric_line("herald_store_write_retries_total{channel=\"sms\"}") ==
             "herald_store_write_retries_total{channel=\"sms\"} 1");
  BOOST_TEST(metric_line("herald_ambiguous_resends_total{channel=\"sms\"}") == "");
}

BOOST_AUTO_TEST_CASE(an_outcome_whose_answer_was_lost_is_recorded_once) {
  auto id = seed_sms(1).at(0);
  provider->script({recording_provider::retryable()});
  faulty_store->script(2, faulty_task_store::fault::lose_answer);
  channel = spawn_channel();
  dispatch(channel, unfinished());
  BOOST_TEST(state(id) == "RETRY_WAIT");        // committed; the channel heard an error
  advance_both(std::chrono::milliseconds{100}); // sent again: recognised by its take's token
  BOOST_TEST(task(id).attempt_log.size() == 1u);
  advance_both(std::chrono::milliseconds{1000}); // the retry is due and was handed to the timer
  BOOST_TEST(provider->calls.size() == 2u);
  BOOST_TEST(state(id) == "SENT");
}

BOOST_AUTO_TEST_CASE(while_writes_fail_the_channel_takes_no_new_task) {
  auto first = seed_sms(1).at(0);
  auto later = seed_sms(1, domain::priority::normal, "later-").at(0);
  for (std::size_t nth = 2; nth <= 4; ++nth) // the outcome, and its first two rewrites
    faulty_store->script(nth, faulty_task_store::fault::fail);
  channel = spawn_channel();
  dispatch(channel, {delivery_of(first)});
  dispatch(channel, {delivery_of(later)});
  BOOST_TEST(provider->calls.size() == 1u);
  advance_both(std::chrono::milliseconds{100}); // rewrite 1 fails; backoff doubles
  advance_both(std::chrono::milliseconds{200}); // rewrite 2 fails
  BOOST_TEST(provider->calls.size() == 1u);
  BOOST_TEST(state(later) == "PENDING");
  BOOST_TEST(health->problems().find("channel sms") != std::string::npos, health->problems());
  advance_both(std::chrono::milliseconds{400}); // rewrite 3 lands: the channel works again
  BOOST_TEST(health->problems() == "");
  BOOST_TEST(state(first) == "SENT");
  BOOST_TEST(provider->calls.size() == 2u);
  BOOST_TEST(state(later) == "SENT");
}

BOOST_AUTO_TEST_CASE(a_lost_answer_to_the_sending_commit_still_sends_once_and_at_once) {
  auto id = seed_sms(1).at(0);
  faulty_store->script(1, faulty_task_store::fault::lose_answer); // SENDING committed, unheard
  channel = spawn_channel();
  dispatch(channel, unfinished());
  BOOST_TEST(provider->calls.empty());
  BOOST_TEST(state(id) == "SENDING");
  advance_both(std::chrono::milliseconds{100}); // the same take again: it is ours
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  BOOST_TEST(state(id) == "SENT");
  sweep_after_lease();
  BOOST_TEST(provider->calls.size() == 1u);
  BOOST_TEST(metric_line("herald_ambiguous_resends_total{channel=\"sms\"}") == "");
}

BOOST_AUTO_TEST_CASE(a_sending_commit_retried_past_the_lease_takes_a_fresh_lease) {
  auto id = seed_sms(1).at(0);
  auto s = settings();
  s.lease = std::chrono::milliseconds{1000};
  for (std::size_t nth = 1; nth <= 4; ++nth) // SENDING fails, so do its first three rewrites
    faulty_store->script(nth, faulty_task_store::fault::fail);
  provider->hold(true);
  channel = spawn_channel(s);
  dispatch(channel, unfinished());
  for (auto wait : {100, 200, 400, 800}) // 1.5 s in all: the first lease would be over
    advance_both(std::chrono::milliseconds{wait});
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  BOOST_TEST(state(id) == "SENDING");
  // The lease runs from the commit that landed, so no sweep may take the task mid-call.
  BOOST_TEST(unfinished().empty());
  provider->hold(false);
  provider->release();
  run();
  BOOST_TEST(state(id) == "SENT");
}

BOOST_AUTO_TEST_CASE(a_fresh_task_whose_fallback_exists_waits_for_its_own_channel) {
  auto tripping = seed_sms(1, domain::priority::normal, "trip-").at(0);
  auto both = seed({plan("order-both", {"sms", "email"})});
  const auto& sms = both.at(0);
  BOOST_REQUIRE(task(sms).channel == "sms");
  auto s = settings();
  s.fallback = "email";
  s.circuit_failure_threshold = 1;
  s.circuit_cool_down = std::chrono::milliseconds{10000};
  provider->script({recording_provider::retryable()});
  channel = spawn_channel(s);
  dispatch(channel, {delivery_of(tripping)}); // fails: the circuit opens
  dispatch(channel, {delivery_of(sms)});
  BOOST_TEST(state(sms) == "PENDING"); // not SUPPRESSED: email has its own task already
  BOOST_TEST(tasks_in(task_state::suppressed) == 0u);
  BOOST_TEST(provider->calls_for(sms) == 0u);

  advance_both(std::chrono::milliseconds{10000}); // half-open: the waiting task is the probe
  BOOST_TEST(provider->calls_for(sms) == 1u);
  BOOST_TEST(state(sms) == "SENT");
}

BOOST_AUTO_TEST_CASE(a_permanent_failure_whose_fallback_exists_is_a_dead_letter_saying_so) {
  auto both = seed({plan("order-both", {"sms", "email"})});
  const auto& sms = both.at(0);
  auto s = settings();
  s.fallback = "email";
  provider->script({recording_provider::permanent()});
  channel = spawn_channel(s);
  dispatch(channel, {delivery_of(sms)});
  auto row = task(sms);
  BOOST_TEST(to_string(row.state) == "FAILED");
  BOOST_TEST(row.last_error.rfind("fallback_exists", 0) == 0u, row.last_error);
  BOOST_TEST(db->list_dead_letters("", {"sms"}, "", 10).size() == 1u);
}

// Retries exhausted leave the user as empty-handed as a permanent error: DEAD fails over too,
// in the transaction that records it.
BOOST_AUTO_TEST_CASE(a_task_whose_retries_run_out_fails_over_to_its_fallback) {
  auto with_email = plan("order-dead", {"sms"});
  with_email.message.recipients["email"] = "u-1@example.com"; // retries read it back stored
  auto alone = seed({with_email}).at(0);
  auto s = settings(); // three attempts, a second apart
  s.fallback = "email";
  provider->script({recording_provider::retryable(), recording_provider::retryable(),
                    recording_provider::retryable()});
  channel = spawn_channel(s);
  dispatch(channel, {delivery_of(alone)});
  advance_both(std::chrono::milliseconds{1000});
  advance_both(std::chrono::milliseconds{1000});
  BOOST_TEST(provider->calls_for(alone) == 3u);
  BOOST_TEST(state(alone) == "DEAD");
  const auto letters = db->list_dead_letters("", {"sms"}, "", 10);
  BOOST_REQUIRE_EQUAL(letters.size(), 1u);
  BOOST_REQUIRE_EQUAL(letters[0].other_tasks.size(), 1u);
  BOOST_TEST(letters[0].other_tasks[0].channel == "email");
  BOOST_TEST((letters[0].coverage == domain::coverage::pending)); // email is on its way
  BOOST_TEST(metric_line("herald_failovers_total{from=\"sms\",to=\"email\"}") != "");
}

BOOST_AUTO_TEST_CASE(a_fresh_task_fails_over_when_its_fallback_has_no_task) {
  auto tripping = seed_sms(1, domain::priority::normal, "trip-").at(0);
  auto alone = seed({plan("order-alone", {"sms"})}).at(0);
  auto s = settings();
  s.fallback = "email";
  s.circuit_failure_threshold = 1;
  provider->script({recording_provider::retryable()});
  channel = spawn_channel(s);
  dispatch(channel, {delivery_of(tripping)});
  auto d = delivery_of(alone);
  d.recipients["email"] = "u-1@example.com";
  dispatch(channel, {d});
  BOOST_TEST(state(alone) == "SUPPRESSED");
  auto letters = db->list_dead_letters("", {"sms"}, "", 10); // listed, so it can be replayed
  BOOST_REQUIRE_EQUAL(letters.size(), 1u);
  BOOST_TEST(letters[0].task.task_id == alone);
}

BOOST_AUTO_TEST_CASE(a_throttled_call_pauses_the_channel_for_retry_after) {
  auto ids = seed_sms(2);
  provider->script({{call_outcome::throttled, "429", std::chrono::milliseconds{2000}}});
  channel = spawn_channel();
  dispatch(channel, {delivery_of(ids[0])});
  dispatch(channel, {delivery_of(ids[1])});
  BOOST_TEST(provider->calls.size() == 1u);
  advance_both(std::chrono::milliseconds{1999});
  BOOST_TEST(provider->calls_for(ids[1]) == 0u); // paused
  advance_both(std::chrono::milliseconds{1});
  BOOST_TEST(provider->calls_for(ids[1]) == 1u);
  BOOST_TEST(state(ids[1]) == "SENT");
  // Its own wait is the pause (2 s), not the backoff: it went again with the other.
  BOOST_TEST(provider->calls_for(ids[0]) == 2u);
  BOOST_TEST(state(ids[0]) == "SENT");
}

BOOST_AUTO_TEST_CASE(a_throttled_task_waits_past_its_retry_budget_instead_of_dying) {
  auto id = seed_sms(1).at(0);
  const providers::provider_result quota{call_outcome::throttled, "daily quota",
                                         std::chrono::milliseconds{60000}};
  provider->script({quota, quota, quota, quota}); // more than the budget of 3 calls
  channel = spawn_channel();
  dispatch(channel, {delivery_of(id)});
  for (int pause = 0; pause < 4; ++pause) {
    BOOST_TEST(state(id) == "RETRY_WAIT");
    advance_both(std::chrono::milliseconds{60000});
  }
  BOOST_TEST(provider->calls_for(id) == 5u);
  BOOST_TEST(state(id) == "SENT"); // the quota came back: sent, not dead
}

BOOST_AUTO_TEST_CASE(throttled_calls_spend_none_of_the_retry_budget) {
  auto id = seed_sms(1).at(0);
  const providers::provider_result quota{call_outcome::throttled, "daily quota",
                                         std::chrono::milliseconds{60000}};
  provider->script({quota, quota, quota, quota, recording_provider::retryable()});
  channel = spawn_channel(); // a budget of 3 calls
  dispatch(channel, {delivery_of(id)});
  for (int pause = 0; pause < 4; ++pause)
    advance_both(std::chrono::milliseconds{60000});
  // The first real failure after four refusals is the task's first attempt: it backs off
  // (1 s), it is not DEAD.
  BOOST_TEST(provider->calls_for(id) == 5u);
  BOOST_TEST(state(id) == "RETRY_WAIT");
  BOOST_TEST(task(id).attempts == 1u);
  BOOST_TEST(task(id).attempt_log.size() == 1u); // the refusals are no attempts
}

BOOST_AUTO_TEST_CASE(a_throttle_neither_opens_the_circuit_nor_fails_tasks_over) {
  auto ids = seed_sms(3);
  auto s = settings();
  s.fallback = "email";
  s.circuit_failure_threshold = 1;
  const providers::provider_result busy{call_outcome::throttled, "429", std::nullopt};
  provider->script({busy, busy});
  channel = spawn_channel(s);
  dispatch(channel, {delivery_of(ids[0])});
  auto d = delivery_of(ids[1]);
  d.recipients["email"] = "u-1@example.com";
  dispatch(channel, {d});
  advance_both(std::chrono::milliseconds{1000}); // the default throttle pause
  advance_both(std::chrono::milliseconds{1000});
  BOOST_TEST(state(ids[1]) == "SENT"); // not SUPPRESSED onto email
  BOOST_TEST(state(ids[0]) == "SENT");
}

BOOST_AUTO_TEST_CASE(after_a_throttle_one_call_at_a_time_tests_whether_it_is_over) {
  auto ids = seed_sms(5);
  provider->script({{call_outcome::throttled, "429", std::chrono::milliseconds{1000}}});
  channel = spawn_channel();
  dispatch(channel, {delivery_of(ids[0])});
  provider->hold(true);
  dispatch(channel,
           {delivery_of(ids[1]), delivery_of(ids[2]), delivery_of(ids[3]), delivery_of(ids[4])});
  advance_both(std::chrono::milliseconds{1000});
  BOOST_TEST(provider->calls.size() == 2u); // the throttled call, then one probe
  provider->hold(false);
  provider->release();
  run();
  for (const auto& id : ids)
    BOOST_TEST(state(id) == "SENT");
}

BOOST_AUTO_TEST_CASE(half_open_lets_one_probe_through_and_closes_on_success) {
  auto ids = seed_sms(4);
  auto s = settings();
  s.circuit_failure_threshold = 1;
  s.circuit_cool_down = std::chrono::milliseconds{5000};
  provider->script({recording_provider::retryable()});
  channel = spawn_channel(s);
  dispatch(channel, {delivery_of(ids[0])}); // opens the circuit
  provider->hold(true);
  dispatch(channel, {delivery_of(ids[1]), delivery_of(ids[2]), delivery_of(ids[3])});
  BOOST_TEST(provider->calls.size() == 1u);
  advance_both(std::chrono::milliseconds{5000});
  BOOST_TEST(provider->calls.size() == 2u); // one probe, the rest wait for its answer
  advance_both(std::chrono::milliseconds{200});
  BOOST_TEST(provider->calls.size() == 2u);
  provider->hold(false);
  provider->release();
  run();
  // Closed again: the others go, with the task that opened the circuit (its retry is due).
  BOOST_TEST(provider->calls.size() == 5u);
  BOOST_TEST(tasks_in(task_state::sent) == 4u);
}

BOOST_AUTO_TEST_CASE(a_task_with_send_at_in_the_future_waits_for_it) {
  auto request_plan = plan("order-later", {"sms"});
  request_plan.message.send_at = clock->now() + std::chrono::seconds{30};
  auto id = seed({request_plan}).at(0);
  channel = spawn_channel();
  dispatch(channel, {delivery_of(id)});
  advance_both(std::chrono::milliseconds{29000});
  BOOST_TEST(provider->calls.empty());
  BOOST_TEST(state(id) == "PENDING");
  advance_both(std::chrono::milliseconds{1000});
  BOOST_TEST(provider->calls.size() == 1u);
  BOOST_TEST(state(id) == "SENT");
}

BOOST_AUTO_TEST_CASE(a_full_queue_leaves_tasks_in_the_database_for_the_sweep) {
  auto ids = seed_sms(5);
  auto s = settings();
  s.window = 1;
  s.queue_limit = 2;
  provider->hold(true);
  channel = spawn_channel(s);
  actors::deliveries all;
  for (const auto& id : ids)
    all.push_back(delivery_of(id));
  dispatch(channel, all); // two fit the queue, the other three stay in the database
  BOOST_TEST(provider->calls.size() == 1u);
  BOOST_TEST(metric_line("herald_channel_queue_overflows_total{channel=\"sms\"}") ==
             "herald_channel_queue_overflows_total{channel=\"sms\"} 3");
  BOOST_TEST(tasks_in(task_state::pending) == 4u);
  provider->hold(false);
  provider->release();
  run();
  BOOST_TEST(tasks_in(task_state::sent) == 2u);
  // Each sweep brings back what fits the queue, until nothing is left behind.
  caf::anon_send(channel, actors::recover_atom_v, std::string{});
  run();
  BOOST_TEST(tasks_in(task_state::sent) == 4u);
  caf::anon_send(channel, actors::recover_atom_v, std::string{});
  run();
  BOOST_TEST(tasks_in(task_state::sent) == 5u);
}

BOOST_AUTO_TEST_CASE(a_full_queue_makes_room_for_a_more_urgent_task) {
  auto low = seed_sms(3, domain::priority::low, "bulk-");
  auto code = seed_sms(1, domain::priority::high, "code-").at(0);
  auto s = settings();
  s.window = 1;
  s.queue_limit = 2;
  provider->hold(true);
  channel = spawn_channel(s);
  dispatch(channel, {delivery_of(low[0]), delivery_of(low[1])}); // one sent, one queued
  dispatch(channel, {delivery_of(low[2])});                      // the queue is full now
  dispatch(channel, {delivery_of(code)}); // takes the place of the newest low task
  BOOST_TEST(metric_line("herald_channel_queue_overflows_total{channel=\"sms\"}") ==
             "herald_channel_queue_overflows_total{channel=\"sms\"} 1");
  provider->release(); // the first low task's call ends; the code is next
  run();
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 2u);
  BOOST_TEST(state(code) == "SENDING");
  BOOST_TEST(state(low[2]) == "PENDING"); // left for the sweep
  provider->hold(false);
  provider->release();
  run();
  caf::anon_send(channel, actors::recover_atom_v, std::string{});
  run();
  BOOST_TEST(tasks_in(task_state::sent) == 4u);
}

BOOST_AUTO_TEST_SUITE_END()
