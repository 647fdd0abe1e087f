#include "channel_fixture.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald;
using domain::task_state;
using test::channel_fixture;
using test::recording_provider;

BOOST_FIXTURE_TEST_SUITE(channel_actor_tests, channel_fixture)

BOOST_AUTO_TEST_CASE(sending_is_committed_before_the_provider_is_called) {
  auto id = seed_sms(1).at(0);
  std::vector<std::string> state_during_call;
  provider->on_send = [&](const providers::provider_request& request) {
    state_during_call.push_back(state(request.task_id));
  };
  auto channel = spawn_channel();
  auto expected_request_id = delivery_of(id).provider_request_id;
  dispatch(channel, unfinished());
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  BOOST_TEST(state_during_call == std::vector<std::string>{"SENDING"},
             boost::test_tools::per_element());
  BOOST_TEST(provider->calls[0].provider_request_id == expected_request_id);
  BOOST_TEST(provider->calls[0].attempt == 1u);
  auto row = task(id);
  BOOST_TEST(to_string(row.state) == "SENT");
  BOOST_TEST(row.attempts == 1u);
  BOOST_REQUIRE_EQUAL(row.attempt_log.size(), 1u);
  BOOST_TEST(row.attempt_log[0].outcome == "success");
  BOOST_TEST(row.attempt_log[0].attempt_no == 1u);
  BOOST_TEST(row.attempt_log[0].provider_request_id == expected_request_id);
}

BOOST_AUTO_TEST_CASE(a_permanent_error_fails_the_task) {
  auto id = seed_sms(1).at(0);
  provider->script({recording_provider::permanent()});
  auto channel = spawn_channel();
  dispatch(channel, unfinished());
  BOOST_TEST(provider->calls.size() == 1u);
  auto row = task(id);
  BOOST_TEST(to_string(row.state) == "FAILED");
  BOOST_TEST(row.attempts == 1u);
  BOOST_TEST(row.last_error == "no such recipient");
  BOOST_REQUIRE_EQUAL(row.attempt_log.size(), 1u);
  BOOST_TEST(row.attempt_log[0].outcome == "permanent");
}

BOOST_AUTO_TEST_CASE(a_retryable_error_waits_then_resends_with_the_same_request_id) {
  auto id = seed_sms(1).at(0);
  provider->script({recording_provider::retryable()});
  auto channel = spawn_channel();
  auto failed_at = clock->now();
  dispatch(channel, unfinished());
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  auto waiting = task(id);
  BOOST_TEST(to_string(waiting.state) == "RETRY_WAIT");
  BOOST_TEST(waiting.attempts == 1u);
  BOOST_REQUIRE(waiting.next_attempt_at.has_value());
  BOOST_TEST(domain::to_unix_micros(*waiting.next_attempt_at) ==
             domain::to_unix_micros(failed_at + std::chrono::seconds{1}));

  advance_both(std::chrono::milliseconds{999});
  BOOST_TEST(provider->calls.size() == 1u); // not due yet
  advance_both(std::chrono::milliseconds{1});
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 2u);
  BOOST_TEST(provider->calls[1].provider_request_id == provider->calls[0].provider_request_id);
  BOOST_TEST(provider->calls[1].attempt == 2u);
  auto row = task(id);
  BOOST_TEST(to_string(row.state) == "SENT");
  BOOST_TEST(row.attempts == 2u);
  BOOST_REQUIRE_EQUAL(row.attempt_log.size(), 2u);
  BOOST_TEST(row.attempt_log[0].outcome == "retryable");
  BOOST_TEST(row.attempt_log[1].outcome == "success");
}

BOOST_AUTO_TEST_CASE(exhausted_attempts_make_the_task_dead) {
  auto id = seed_sms(1).at(0);
  provider->script({recording_provider::retryable(), recording_provider::retryable()});
  auto s = settings();
  s.retry.max_attempts = 2;
  auto channel = spawn_channel(s);
  dispatch(channel, unfinished());
  advance_both(std::chrono::seconds{1});
  BOOST_TEST(provider->calls.size() == 2u);
  auto row = task(id);
  BOOST_TEST(to_string(row.state) == "DEAD");
  BOOST_TEST(row.attempts == 2u);
  BOOST_TEST(row.attempt_log.size() == 2u);
  advance_both(std::chrono::minutes{10});
  BOOST_TEST(provider->calls.size() == 2u); // nothing is scheduled for a dead task
}

BOOST_AUTO_TEST_CASE(no_more_calls_in_flight_than_the_window) {
  seed_sms(5);
  spawn_holding_channel(2);
  BOOST_TEST(provider->calls.size() == 2u);
  BOOST_TEST(tasks_in(task_state::sending) == 2u); // the others were not even marked
  std::size_t expected_calls = 2;
  while (provider->held() > 0) {
    provider->release(1);
    run();
    expected_calls = std::min<std::size_t>(expected_calls + 1, 5);
    BOOST_TEST(provider->calls.size() == expected_calls);
    BOOST_TEST(provider->held() <= 2u);
  }
  BOOST_TEST(provider->calls.size() == 5u);
  BOOST_TEST(tasks_in(task_state::sent) == 5u);
}

// A task whose result waits for its commit is still SENDING in the database: were the node to
// die then, it would be resent. The window bounds those too, so a crash leaves at most `window`
// tasks of a channel in doubt.
BOOST_AUTO_TEST_CASE(a_result_holds_its_place_in_the_window_until_it_is_committed) {
  auto ids = seed_sms(2);
  spawn_holding_channel(1);
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  const auto first = provider->calls[0].task_id;
  const auto second = first == ids[0] ? ids[1] : ids[0];
  provider->release(1);
  run_all_but(writer);
  BOOST_TEST(waiting_for(writer) == 1u); // the result's commit; the next task is not taken yet
  BOOST_TEST(state(first) == "SENDING");
  BOOST_TEST(state(second) == "PENDING");
  run(); // the result commits, which frees the window for the next task
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 2u);
  BOOST_TEST(provider->calls[1].task_id == second);
  provider->release(1);
  run();
  BOOST_TEST(tasks_in(task_state::sent) == 2u);
}

BOOST_AUTO_TEST_CASE(the_token_bucket_spaces_calls) {
  seed_sms(3);
  auto s = settings();
  s.rate_per_sec = 1;
  s.burst = 1;
  auto channel = spawn_channel(s);
  dispatch(channel, unfinished());
  BOOST_TEST(provider->calls.size() == 1u);
  advance_both(std::chrono::milliseconds{500});
  BOOST_TEST(provider->calls.size() == 1u);
  advance_both(std::chrono::milliseconds{500});
  BOOST_TEST(provider->calls.size() == 2u);
  advance_both(std::chrono::milliseconds{999});
  BOOST_TEST(provider->calls.size() == 2u);
  advance_both(std::chrono::milliseconds{1});
  BOOST_TEST(provider->calls.size() == 3u);
  BOOST_TEST(tasks_in(task_state::sent) == 3u);
}

BOOST_AUTO_TEST_CASE(a_high_priority_task_overtakes_queued_normal_ones) {
  auto normal = seed_sms(3, domain::priority::normal, "normal-");
  auto high = seed_sms(1, domain::priority::high, "high-").at(0);
  provider->hold(true);
  auto s = settings();
  s.window = 1;
  auto channel = spawn_channel(s);
  dispatch(channel, {delivery_of(normal[0])});
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  dispatch(channel, {delivery_of(normal[1]), delivery_of(normal[2]), delivery_of(high)});
  BOOST_TEST(provider->calls.size() == 1u); // the window is full
  provider->release(1);
  run();
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 2u);
  BOOST_TEST(provider->calls[1].task_id == high);
  provider->release(1);
  run();
  provider->release(1);
  run();
  provider->release(1);
  run();
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 4u);
  BOOST_TEST(provider->calls[2].task_id == normal[1]); // normal ones keep their order
  BOOST_TEST(provider->calls[3].task_id == normal[2]);
}

BOOST_AUTO_TEST_CASE(a_task_dispatched_twice_is_sent_once) {
  auto id = seed_sms(1).at(0);
  auto d = delivery_of(id);
  provider->hold(true);
  auto channel = spawn_channel();
  dispatch(channel, {d, d}); // twice in one message
  dispatch(channel, {d});    // again while the call is in flight
  BOOST_TEST(provider->calls_for(id) == 1u);
  provider->release();
  run();
  BOOST_TEST(state(id) == "SENT");
  dispatch(channel, {d}); // a stale copy after it was sent: the SENDING guard refuses it
  BOOST_TEST(provider->calls_for(id) == 1u);
  BOOST_TEST(state(id) == "SENT");
}

BOOST_AUTO_TEST_CASE(a_task_past_expire_at_expires_without_a_call) {
  auto message =
      plan("order-1", {"sms"}, domain::priority::normal, clock->now() + std::chrono::seconds{1});
  auto id = seed({message}).at(0);
  auto d = delivery_of(id);
  clock->advance(std::chrono::seconds{2});
  auto channel = spawn_channel();
  dispatch(channel, {d});
  BOOST_TEST(provider->calls.empty());
  BOOST_TEST(state(id) == "EXPIRED");
}

BOOST_AUTO_TEST_CASE(a_recovered_sending_task_past_expire_at_is_resent_not_expired) {
  // SENDING may not become EXPIRED (design.md §3): its earlier call may have been delivered.
  auto message =
      plan("order-1", {"sms"}, domain::priority::normal, clock->now() + std::chrono::seconds{1});
  auto id = seed({message}).at(0);
  move_task(id, task_state::pending, task_state::sending);
  auto d = delivery_of(id);
  clock->advance(std::chrono::seconds{2});
  auto channel = spawn_channel();
  dispatch(channel, {d});
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  BOOST_TEST(provider->calls[0].provider_request_id == d.provider_request_id);
  BOOST_TEST(state(id) == "SENT");
}

BOOST_AUTO_TEST_CASE(a_recovered_sending_task_takes_the_lease_then_is_resent_and_counted) {
  auto id = seed_sms(1).at(0);
  move_task(id, task_state::pending, task_state::sending); // as a crash mid-call leaves it
  auto d = delivery_of(id);
  BOOST_REQUIRE(d.state == task_state::sending);
  auto channel = spawn_channel();
  dispatch(channel, {d});
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  BOOST_TEST(provider->calls[0].provider_request_id == d.provider_request_id);
  BOOST_TEST(state(id) == "SENT");
  std::size_t lease_renewals = 0;
  for (const auto& change : writer_store->changes)
    if (change.from == task_state::sending && change.to == task_state::sending) {
      ++lease_renewals;
      BOOST_TEST(change.lease_owner.has_value());
      BOOST_TEST(change.lease_until.has_value());
    }
  BOOST_TEST(lease_renewals == 1u); // taken over before the resend, as a second node would
  auto text = metrics->render();
  BOOST_TEST(text.find("herald_ambiguous_resends_total{channel=\"sms\"} 1") != std::string::npos,
             text);
}

BOOST_AUTO_TEST_CASE(drain_answers_only_after_calls_in_flight_are_recorded) {
  auto ids = seed_sms(2);
  auto late = seed_sms(1, domain::priority::normal, "late-").at(0);
  provider->hold(true);
  auto channel = spawn_channel();
  dispatch(channel, {delivery_of(ids[0]), delivery_of(ids[1])});
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 2u);
  auto pending = self->request(channel, caf::infinite, actors::drain_atom_v);
  run();
  BOOST_TEST(!self->has_next_message()); // two calls are still out
  provider->release();
  bool answered = false;
  while (sched.try_run_once()) {
    if (self->has_next_message()) {
      answered = true;
      BOOST_TEST(tasks_in(task_state::sent) == 2u); // recorded before the answer
      break;
    }
  }
  BOOST_REQUIRE(answered);
  pending.receive([](bool idle) { BOOST_TEST(idle); },
                  [](caf::error& err) { BOOST_ERROR(actors::describe(err)); });
  run();
  dispatch(channel, {delivery_of(late)}); // a draining channel starts no new call
  BOOST_TEST(provider->calls.size() == 2u);
  BOOST_TEST(state(late) == "PENDING");
}

BOOST_AUTO_TEST_SUITE_END()
