#include "tools/invariant_checker.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::tools;

namespace {

/// A clean run: `events` events on sms+app, every task SENT and delivered once at the
/// provider, event 0 resubmitted during the run and after the drain.
run_record clean_run(std::size_t events = 3) {
  run_record run;
  run.events = events;
  run.channels_per_event = 2;
  run.provider_expected = true;
  run.provider_channels = {"sms", "app"};
  provider_observation provider;
  for (std::size_t e = 0; e < events; ++e) {
    auto id = std::to_string(e);
    accepted_answer answer{
        e, false, 202, "m" + id, {{"t" + id + "s", "sms", false}, {"t" + id + "a", "app", false}}};
    run.answers.push_back(answer);
    observed_message message{true,
                             {{"t" + id + "s", "sms", "SENT", "p" + id + "s", 1},
                              {"t" + id + "a", "app", "DELIVERED", "p" + id + "a", 1}}};
    run.messages["m" + id] = message;
    provider.delivered_ids.insert("p" + id + "s");
    provider.delivered_ids.insert("p" + id + "a");
    provider.calls += 2;
    provider.effective_deliveries += 2;
  }
  auto again = run.answers.front();
  again.status = 200;
  for (auto& task : again.tasks)
    task.duplicate = true;
  run.answers.push_back(again);
  again.late = true;
  run.answers.push_back(again);
  run.provider = provider;
  return run;
}

const invariant_result& find(const check_report& report, const std::string& name) {
  for (const auto& invariant : report.invariants)
    if (invariant.name == name)
      return invariant;
  BOOST_FAIL("no invariant named " + name);
  throw std::logic_error("unreachable");
}

std::vector<std::string> failed(const check_report& report) {
  std::vector<std::string> names;
  for (const auto& invariant : report.invariants)
    if (!invariant.pass)
      names.push_back(invariant.name);
  return names;
}

} // namespace

BOOST_AUTO_TEST_SUITE(invariant_checker_tests)

BOOST_AUTO_TEST_CASE(a_clean_run_passes_everything) {
  auto report = check_invariants(clean_run());
  BOOST_TEST(failed(report).empty());
  BOOST_TEST(report.all_pass());
  BOOST_TEST(report.accepted_events == 3u);
  BOOST_TEST(report.accepted_messages == 3u);
  BOOST_TEST(report.accepted_tasks == 6u);
  BOOST_TEST(report.states.at("SENT") == 3u);
  BOOST_TEST(report.states.at("DELIVERED") == 3u);
  BOOST_TEST(report.delivered_tasks == 6u);
  BOOST_TEST(report.invariants.size() == 10u);
}

BOOST_AUTO_TEST_CASE(a_task_that_is_not_terminal_is_lost) {
  auto run = clean_run();
  run.messages["m1"].tasks[0].status = "RETRY_WAIT";
  auto report = check_invariants(run);
  BOOST_TEST(failed(report) == std::vector<std::string>{"nothing_lost"});
  BOOST_TEST(report.lost_tasks == 1u);
  BOOST_TEST(find(report, "nothing_lost").detail.find("t1s(RETRY_WAIT)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_message_herald_cannot_show_is_lost_and_breaks_the_accounting) {
  auto run = clean_run();
  run.messages["m2"] = observed_message{}; // never found
  run.provider->delivered_ids.erase("p2s");
  run.provider->delivered_ids.erase("p2a");
  auto report = check_invariants(run);
  BOOST_TEST(failed(report) == (std::vector<std::string>{"nothing_lost", "accounting"}));
  BOOST_TEST(report.lost_tasks == 2u);
  BOOST_TEST(report.states.at("MISSING") == 2u);
}

BOOST_AUTO_TEST_CASE(a_task_suppressed_for_a_fallback_it_already_had_fails) {
  auto run = clean_run();
  run.messages["m1"].tasks[0].status = "SUPPRESSED"; // app was named too: nothing new was sent
  run.provider->delivered_ids.erase("p1s");
  auto report = check_invariants(run);
  BOOST_TEST(failed(report) == std::vector<std::string>{"failover_sends_something"});
  BOOST_TEST(find(report, "failover_sends_something").detail.find("t1s") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_task_suppressed_for_a_new_fallback_task_passes) {
  auto run = clean_run();
  run.messages["m1"].tasks[0].status = "SUPPRESSED";
  run.messages["m1"].tasks.push_back({"t1e", "email", "SENT", "p1e", 1}); // the failover's
  run.provider->delivered_ids.erase("p1s");
  auto report = check_invariants(run);
  BOOST_TEST(failed(report).empty());
  BOOST_TEST(report.suppressed_for_nothing == 0u);
}

BOOST_AUTO_TEST_CASE(a_duplicate_delivery_at_the_provider_fails) {
  auto run = clean_run();
  run.provider->duplicate_effective_deliveries = 1;
  run.provider->ids_delivered_more_than_once = {"p1s"};
  auto report = check_invariants(run);
  BOOST_TEST(failed(report) == std::vector<std::string>{"provider_at_most_once"});
  BOOST_TEST(find(report, "provider_at_most_once").detail.find("p1s") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(mismatched_ids_across_resubmissions_fail) {
  auto run = clean_run();
  auto other = run.answers.front();
  other.tasks[1].task_id = "t0a-other";
  run.answers.push_back(other);
  auto report = check_invariants(run);
  // The other task id exists nowhere, so it is also lost and breaks the accounting.
  BOOST_TEST(failed(report) ==
             (std::vector<std::string>{"nothing_lost", "stable_ids", "accounting"}));
  BOOST_TEST(report.id_mismatches == 1u);

  run = clean_run();
  other = run.answers.front();
  other.message_id = "m0-other";
  run.answers.push_back(other);
  report = check_invariants(run);
  BOOST_TEST(failed(report) == std::vector<std::string>{"stable_ids"});
  BOOST_TEST(report.id_mismatches == 1u);
}

BOOST_AUTO_TEST_CASE(an_answer_without_one_task_per_channel_fails) {
  auto run = clean_run();
  run.answers[1].tasks.pop_back();
  run.answers[1].tasks.push_back({"t1x", "sms", false}); // sms twice, app missing
  auto names = failed(check_invariants(run));
  BOOST_TEST((std::find(names.begin(), names.end(), "stable_ids") != names.end()));
}

BOOST_AUTO_TEST_CASE(unparseable_answers_fail_stable_ids) {
  auto run = clean_run();
  run.unparseable_answers = 1;
  BOOST_TEST(failed(check_invariants(run)) == std::vector<std::string>{"stable_ids"});
}

BOOST_AUTO_TEST_CASE(a_late_resubmission_that_creates_a_task_fails) {
  auto run = clean_run();
  run.answers.back().status = 202;
  run.answers.back().tasks[0].duplicate = false;
  auto report = check_invariants(run);
  BOOST_TEST(failed(report) == std::vector<std::string>{"late_duplicates_create_nothing"});
  BOOST_TEST(report.late_creations == 1u);
}

BOOST_AUTO_TEST_CASE(a_sent_task_the_provider_never_processed_is_lost_there) {
  auto run = clean_run();
  run.provider->delivered_ids.erase("p1s");
  auto report = check_invariants(run);
  BOOST_TEST(failed(report) == std::vector<std::string>{"provider_none_lost"});
  BOOST_TEST(report.sent_without_delivery == 1u);
}

BOOST_AUTO_TEST_CASE(channels_not_routed_to_the_provider_are_not_checked_there) {
  auto run = clean_run();
  run.provider_channels = {"sms"};
  run.provider->delivered_ids.erase("p1a");
  BOOST_TEST(check_invariants(run).all_pass());
}

BOOST_AUTO_TEST_CASE(a_failed_task_needs_no_delivery_but_an_unknown_delivery_fails) {
  auto run = clean_run();
  run.messages["m1"].tasks[0].status = "FAILED";
  run.provider->delivered_ids.erase("p1s");
  BOOST_TEST(check_invariants(run).all_pass());

  run.provider->delivered_ids.insert("p-from-elsewhere");
  auto report = check_invariants(run);
  BOOST_TEST(failed(report) == std::vector<std::string>{"provider_no_unknown"});
  BOOST_TEST(report.unknown_provider_ids == 1u);
}

BOOST_AUTO_TEST_CASE(an_unreadable_provider_fails_and_no_provider_checks_nothing_there) {
  auto run = clean_run();
  run.provider.reset();
  BOOST_TEST(failed(check_invariants(run)) == std::vector<std::string>{"provider_reachable"});

  run.provider_expected = false;
  auto report = check_invariants(run);
  BOOST_TEST(report.all_pass());
  BOOST_TEST(report.invariants.size() == 6u);
}

BOOST_AUTO_TEST_CASE(tasks_no_answer_named_are_extra_not_violations) {
  auto run = clean_run();
  run.messages["m0"].tasks.push_back({"fallback", "email", "SENT", "pf", 1});
  auto report = check_invariants(run);
  BOOST_TEST(report.all_pass());
  BOOST_TEST(report.extra_tasks == 1u);
}

BOOST_AUTO_TEST_CASE(nothing_accepted_is_a_failure) {
  run_record run;
  run.events = 10;
  BOOST_TEST(failed(check_invariants(run)) == std::vector<std::string>{"something_accepted"});
}

BOOST_AUTO_TEST_CASE(terminal_and_delivered_states) {
  for (auto s : {"SENT", "DELIVERED", "READ", "CLICKED", "FAILED", "DEAD", "EXPIRED", "SUPPRESSED",
                 "UNCONFIRMED"})
    BOOST_TEST(is_terminal_status(s), s);
  for (auto s : {"PENDING", "SENDING", "RETRY_WAIT", "", "sent", "BOGUS"})
    BOOST_TEST(!is_terminal_status(s), s);
  BOOST_TEST(is_delivered_status("UNCONFIRMED"));
  BOOST_TEST(!is_delivered_status("FAILED"));
}

BOOST_AUTO_TEST_SUITE_END()
