// Ask before resending: a task recovery finds SENDING may have reached the provider before the
// crash. Where the provider has a status API the channel asks it first, under the take's lease,
// and resends only when the provider says it never got the call; a question without an answer
// is asked again after a backoff, and once the questions are used up the task is UNCONFIRMED.

#include "channel_fixture.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald;
using domain::task_state;
using persistence::faulty_task_store;
using providers::provider_status;
using test::channel_fixture;
using test::recording_provider;

namespace {

struct ambiguous_fixture : channel_fixture {
  ambiguous_fixture() { provider->answers_status = true; }

  /// One sms task left SENDING by a crashed process, as recovery reads it.
  domain::delivery crashed_mid_call(const std::string& biz_id = "order-1") {
    auto message = plan(biz_id, {"sms"});
    message.message.recipients["email"] = "u-1@example.com"; // a fallback address
    auto id = seed({message}).at(0);
    move_task(id, task_state::pending, task_state::sending);
    auto d = delivery_of(id);
    BOOST_REQUIRE(d.state == task_state::sending);
    return d;
  }

  /// The earlier process's call, as the provider remembers it.
  void provider_got(const domain::delivery& d) {
    providers::provider_request earlier;
    earlier.task_id = d.task_id;
    earlier.provider_request_id = d.provider_request_id;
    provider->send(earlier, [](providers::provider_result) {});
    provider->calls.clear(); // only this process's calls count below; the provider remembers
  }

  std::string metric_line(const std::string& name) {
    const auto text = metrics->render();
    const auto at = text.find(name + " ");
    return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at);
  }

  /// Settings asking three times, 1 s then 2 s apart, without jitter.
  static actors::channel_settings asking_three_times() {
    auto s = settings();
    s.questions = domain::retry_policy{
        {std::chrono::milliseconds{1000}, std::chrono::milliseconds{2000}}, 0.0, 3};
    return s;
  }

  /// SENDING -> SENDING changes the writer was asked for: each is a take of the lease.
  std::vector<persistence::state_change> takes() const {
    std::vector<persistence::state_change> out;
    for (const auto& change : writer_store->changes)
      if (change.from == task_state::sending && change.to == task_state::sending)
        out.push_back(change);
    return out;
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(ambiguous_send_tests, ambiguous_fixture)

BOOST_AUTO_TEST_CASE(a_provider_that_has_the_message_is_not_called_again) {
  auto d = crashed_mid_call();
  provider_got(d); // memory: found "accepted"
  auto channel = spawn_channel();
  dispatch(channel, {d});
  BOOST_TEST(provider->calls.empty());
  BOOST_REQUIRE_EQUAL(provider->queries.size(), 1u);
  BOOST_TEST(provider->queries[0].provider_request_id == d.provider_request_id);
  BOOST_TEST(provider->queries[0].task_id == d.task_id);
  const auto row = task(d.task_id);
  BOOST_TEST(state(d.task_id) == "SENT");
  BOOST_TEST(row.attempts == 1u); // the crashed process's call counts
  BOOST_REQUIRE_EQUAL(row.attempt_log.size(), 1u);
  BOOST_TEST(row.attempt_log[0].outcome == "success");
  BOOST_TEST(row.attempt_log[0].detail == "found by status query: accepted");
  // Asked under a take of the lease, and recorded under that take's token.
  const auto taken = takes();
  BOOST_REQUIRE_EQUAL(taken.size(), 1u);
  bool recorded = false;
  for (const auto& change : writer_store->changes)
    if (change.to == task_state::sent) {
      recorded = true;
      BOOST_TEST((change.from == task_state::sending));
      BOOST_TEST((change.lease_token == taken[0].lease_token));
    }
  BOOST_TEST(recorded);
  BOOST_TEST(metric_line("herald_ambiguous_resolved_total{channel=\"sms\",outcome=\"found\"}") ==
             "herald_ambiguous_resolved_total{channel=\"sms\",outcome=\"found\"} 1");
  BOOST_TEST(metric_line("herald_ambiguous_resends_total{channel=\"sms\"}") == "");
  BOOST_TEST(writer_store->receipts.empty()); // "accepted" is no receipt
}

BOOST_AUTO_TEST_CASE(a_final_status_found_is_recorded_as_a_query_receipt) {
  auto d = crashed_mid_call();
  provider->script_status({recording_provider::found(provider_status::delivered, "pm-77")});
  auto channel = spawn_channel();
  dispatch(channel, {d});
  BOOST_TEST(provider->calls.empty());
  BOOST_TEST(state(d.task_id) == "DELIVERED");
  bool kept_message_id = false; // the task keeps the id the provider named
  for (const auto& change : writer_store->changes)
    kept_message_id |= change.to == task_state::sent && change.provider_message_id == "pm-77";
  BOOST_TEST(kept_message_id);
  BOOST_REQUIRE_EQUAL(writer_store->receipts.size(), 1u);
  const auto& receipt = writer_store->receipts[0];
  BOOST_TEST(receipt.provider_request_id == d.provider_request_id);
  BOOST_TEST((receipt.receipt.status == domain::receipt_status::delivered));
  BOOST_TEST((receipt.receipt.source == domain::receipt_source::query));
}

BOOST_AUTO_TEST_CASE(an_undelivered_status_found_fails_over_like_a_receipt) {
  actors::store_writer_config config;
  config.fallbacks.fallback_of = {{"sms", "email"}};
  auto failing_over_writer = spawn_writer(config);
  auto s = settings();
  s.fallback = "email";
  auto d = crashed_mid_call();
  provider->script_status({recording_provider::found(provider_status::undelivered)});
  actors::channel_spec spec{s, std::shared_ptr<providers::provider_adapter>{provider}};
  auto channel = spawn_dispatch_node({spec}, failing_over_writer, reader).dispatcher;
  dispatch(channel, {d});
  BOOST_TEST(provider->calls.empty());
  BOOST_TEST(state(d.task_id) == "UNDELIVERED");
  BOOST_TEST(tasks_in(task_state::pending) == 1u); // the email task, claimed with the receipt
  BOOST_TEST(metric_line("herald_failovers_total{from=\"sms\",to=\"email\"}") ==
             "herald_failovers_total{from=\"sms\",to=\"email\"} 1");
  BOOST_TEST(metric_line("herald_tasks_created_total{channel=\"email\"}") ==
             "herald_tasks_created_total{channel=\"email\"} 1");
}

BOOST_AUTO_TEST_CASE(a_provider_that_never_got_the_call_gets_it_under_a_fresh_take) {
  auto d = crashed_mid_call(); // the provider remembers nothing: not_found
  auto channel = spawn_channel();
  dispatch(channel, {d});
  BOOST_REQUIRE_EQUAL(provider->queries.size(), 1u);
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  BOOST_TEST(provider->calls[0].provider_request_id == d.provider_request_id);
  BOOST_TEST(state(d.task_id) == "SENT");
  const auto taken = takes();
  BOOST_REQUIRE_EQUAL(taken.size(), 2u); // one to ask, a fresh one (new lease) for the call
  BOOST_TEST((taken[0].lease_token != taken[1].lease_token));
  BOOST_TEST(
      metric_line("herald_ambiguous_resolved_total{channel=\"sms\",outcome=\"not_found\"}") ==
      "herald_ambiguous_resolved_total{channel=\"sms\",outcome=\"not_found\"} 1");
  BOOST_TEST(metric_line("herald_ambiguous_resends_total{channel=\"sms\"}") ==
             "herald_ambiguous_resends_total{channel=\"sms\"} 1");
}

// No answer is not "not sent": the provider may have the message. The task stays SENDING under
// the take and is asked again after the channel's question backoff, never called meanwhile.
BOOST_AUTO_TEST_CASE(a_provider_that_cannot_say_is_asked_again_after_the_backoff_not_called) {
  auto d = crashed_mid_call();
  provider_got(d);
  provider->script_status({recording_provider::unknown(), recording_provider::unknown()});
  auto channel = spawn_channel(asking_three_times());
  dispatch(channel, {d});
  BOOST_TEST(provider->queries.size() == 1u);
  BOOST_TEST(provider->calls.empty());
  BOOST_TEST(state(d.task_id) == "SENDING");
  BOOST_TEST(task(d.task_id).status_questions == 1u);
  advance_both(std::chrono::milliseconds{999});
  BOOST_TEST(provider->queries.size() == 1u); // not before the first step of the schedule
  advance_both(std::chrono::milliseconds{1});
  BOOST_TEST(provider->queries.size() == 2u);
  BOOST_TEST(task(d.task_id).status_questions == 2u);
  advance_both(std::chrono::milliseconds{2000});
  BOOST_REQUIRE_EQUAL(provider->queries.size(), 3u); // the third question: it has the message
  BOOST_TEST(provider->calls.empty());
  BOOST_TEST(state(d.task_id) == "SENT");
  BOOST_TEST(task(d.task_id).status_questions == 0u); // the receipt's questions count afresh
  BOOST_TEST(metric_line("herald_status_questions_unanswered_total{channel=\"sms\",then=\"asked_"
                         "again\"}") ==
             "herald_status_questions_unanswered_total{channel=\"sms\",then=\"asked_again\"} 2");
  BOOST_TEST(metric_line("herald_ambiguous_resends_total{channel=\"sms\"}") == "");
}

BOOST_AUTO_TEST_CASE(questions_used_up_end_unconfirmed_listed_and_never_resent) {
  auto d = crashed_mid_call();
  auto channel = spawn_channel(asking_three_times());
  provider->script_status({recording_provider::unknown(), recording_provider::unknown(),
                           recording_provider::unknown()});
  dispatch(channel, {d});
  advance_both(std::chrono::milliseconds{1000});
  advance_both(std::chrono::milliseconds{2000});
  BOOST_TEST(provider->queries.size() == 3u);
  BOOST_TEST(provider->calls.empty());
  const auto row = task(d.task_id);
  BOOST_TEST(state(d.task_id) == "UNCONFIRMED");
  BOOST_TEST(row.status_questions == 3u);
  BOOST_TEST(row.last_error.find("3 status questions without an answer, the last allowed; the "
                                 "provider may have the message, so it is not sent again") == 0u);
  const auto letters = db->list_dead_letters("", {"sms"}, "", 10);
  BOOST_REQUIRE_EQUAL(letters.size(), 1u);
  BOOST_TEST(letters[0].task.task_id == d.task_id);
  advance_both(std::chrono::milliseconds{60000}); // nothing more: not asked, not sent
  BOOST_TEST(provider->queries.size() == 3u);
  BOOST_TEST(provider->calls.empty());
  BOOST_TEST(
      metric_line(
          "herald_status_questions_unanswered_total{channel=\"sms\",then=\"unconfirmed\"}") ==
      "herald_status_questions_unanswered_total{channel=\"sms\",then=\"unconfirmed\"} 1");
  BOOST_TEST(metric_line("herald_dead_letters_total{channel=\"sms\"}") ==
             "herald_dead_letters_total{channel=\"sms\"} 1");
}

BOOST_AUTO_TEST_CASE(expire_at_before_the_next_question_ends_the_asking) {
  auto message = plan("order-1", {"sms"}, domain::priority::normal,
                      clock->now() + std::chrono::milliseconds{500});
  const auto id = seed({message}).at(0);
  move_task(id, task_state::pending, task_state::sending);
  provider->script_status({recording_provider::unknown()});
  auto channel = spawn_channel(asking_three_times());
  dispatch(channel, {delivery_of(id)});
  BOOST_TEST(provider->queries.size() == 1u);
  BOOST_TEST(provider->calls.empty());
  BOOST_TEST(state(id) == "UNCONFIRMED");
  BOOST_TEST(task(id).last_error.find("expire_at passes before the next one") != std::string::npos);
}

// The count lives in the database: a process that takes the task over after a crash goes on
// counting where the crashed one stopped.
BOOST_AUTO_TEST_CASE(the_count_of_questions_survives_a_restart) {
  auto d = crashed_mid_call();
  provider->script_status({recording_provider::unknown(), recording_provider::unknown()});
  auto s = asking_three_times();
  s.questions.max_attempts = 2;
  auto before_crash = spawn_channel(s);
  dispatch(before_crash, {d});
  BOOST_TEST(task(d.task_id).status_questions == 1u);
  // Its lease (until the next question) runs out; the first process asks no more (its timer
  // never fires: only the domain clock moves) and another takes the task over from recovery.
  clock->advance(std::chrono::seconds{1});
  const auto recovered = delivery_of(d.task_id);
  BOOST_TEST(recovered.status_questions == 1u);
  auto after_restart = spawn_channel(s);
  dispatch(after_restart, {recovered});
  BOOST_TEST(provider->queries.size() == 2u);
  BOOST_TEST(provider->calls.empty());
  BOOST_TEST(state(d.task_id) == "UNCONFIRMED");
  BOOST_TEST(task(d.task_id).status_questions == 2u);
}

// A call that timed out may have reached the provider as much as one cut off by a crash: the
// task stays SENDING (under the take's lease) until its retry is due, then is asked about.
BOOST_AUTO_TEST_CASE(a_call_that_timed_out_is_asked_about_before_its_retry) {
  const auto id = seed_sms(1).at(0);
  provider->script({{call_outcome::timeout, "no answer in 1000 ms", std::nullopt}});
  auto channel = spawn_channel();
  dispatch(channel, {delivery_of(id)});
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  BOOST_TEST(state(id) == "SENDING");
  BOOST_TEST(task(id).attempts == 1u);
  BOOST_TEST(provider->queries.empty()); // not before the retry is due (1 s)
  advance_both(std::chrono::milliseconds{999});
  BOOST_TEST(provider->queries.empty());
  advance_both(std::chrono::milliseconds{1});
  BOOST_REQUIRE_EQUAL(provider->queries.size(), 1u);
  BOOST_TEST(provider->calls.size() == 1u); // it had the message: not called again
  BOOST_TEST(state(id) == "SENT");
  BOOST_TEST(metric_line("herald_ambiguous_resends_total{channel=\"sms\"}") == "");
}

BOOST_AUTO_TEST_CASE(a_call_that_timed_out_unseen_by_the_provider_is_sent_again_once) {
  const auto id = seed_sms(1).at(0);
  const auto request_id = delivery_of(id).provider_request_id;
  provider->script({{call_outcome::timeout, "no answer in 1000 ms", std::nullopt}});
  provider->answer_status_for(request_id, recording_provider::not_found());
  auto channel = spawn_channel();
  dispatch(channel, {delivery_of(id)});
  advance_both(std::chrono::milliseconds{1000});
  BOOST_TEST(provider->queries.size() == 1u);
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 2u);
  BOOST_TEST(provider->calls[1].provider_request_id == request_id);
  BOOST_TEST(state(id) == "SENT");
  BOOST_TEST(task(id).attempts == 2u);
  BOOST_TEST(metric_line("herald_ambiguous_resends_total{channel=\"sms\"}") ==
             "herald_ambiguous_resends_total{channel=\"sms\"} 1");
}

BOOST_AUTO_TEST_CASE(without_a_status_api_a_call_that_timed_out_waits_as_a_retry) {
  provider->answers_status = false;
  const auto id = seed_sms(1).at(0);
  provider->script({{call_outcome::timeout, "no answer in 1000 ms", std::nullopt}});
  auto channel = spawn_channel();
  dispatch(channel, {delivery_of(id)});
  BOOST_TEST(state(id) == "RETRY_WAIT");
  advance_both(std::chrono::milliseconds{1000});
  BOOST_TEST(provider->calls.size() == 2u); // resent with its request id: nothing to ask
  BOOST_TEST(state(id) == "SENT");
}

BOOST_AUTO_TEST_CASE(a_question_holds_a_place_in_the_window_and_the_drain_waits_for_it) {
  auto d = crashed_mid_call();
  provider_got(d);
  auto fresh = seed_sms(1, domain::priority::normal, "fresh-").at(0);
  auto s = settings();
  s.window = 1;
  s.queue_limit = 10;
  provider->hold_status(true);
  auto channel = spawn_channel(s);
  dispatch(channel, {d, delivery_of(fresh)});
  BOOST_TEST(provider->held_status() == 1u);
  BOOST_TEST(provider->calls.empty()); // the window is the question's
  provider->release_status();
  run();
  BOOST_TEST(state(d.task_id) == "SENT");
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  BOOST_TEST(provider->calls[0].task_id == fresh);

  auto again = crashed_mid_call("order-2");
  provider_got(again);
  dispatch(channel, {again});
  BOOST_REQUIRE_EQUAL(provider->held_status(), 1u);
  auto pending = self->request(channel, caf::infinite, actors::drain_atom_v);
  run();
  BOOST_TEST(!self->has_next_message()); // the question is still out
  provider->release_status();
  run();
  BOOST_REQUIRE(self->has_next_message());
  pending.receive([](bool idle) { BOOST_TEST(idle); },
                  [](caf::error& err) { BOOST_ERROR(actors::describe(err)); });
  BOOST_TEST(state(again.task_id) == "SENT");
}

BOOST_AUTO_TEST_CASE(a_failed_write_of_what_the_provider_said_is_kept_and_rewritten) {
  auto d = crashed_mid_call();
  provider->script_status({recording_provider::found(provider_status::read)});
  faulty_store->script(2, faulty_task_store::fault::lose_answer); // 1: the take, 2: SENT
  faulty_store->script(3, faulty_task_store::fault::fail);        // 3: its first rewrite
  auto channel = spawn_channel();
  dispatch(channel, {d});
  BOOST_TEST(provider->calls.empty());
  advance_both(std::chrono::milliseconds{100});
  advance_both(std::chrono::milliseconds{200});
  BOOST_TEST(state(d.task_id) == "READ");
  BOOST_TEST(provider->calls.empty());
  BOOST_TEST(provider->queries.size() == 1u);
  BOOST_TEST(health->problems().empty());
}

BOOST_AUTO_TEST_SUITE_END()
