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
                             {{"t" + id + "s", "sms", "SENT", "p" + id + "s", 1, ""},
                              {"t" + id + "a", "app", "DELIVERED", "p" + id + "a", 1, ""}}};
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

// Policy (DND, an opt-out, a full cap) decided nothing was to be sent: not a lost message.
BOOST_AUTO_TEST_CASE(a_task_policy_suppressed_passes) {
  auto run = clean_run();
  run.messages["m1"].tasks[0].status = "SUPPRESSED";
  run.messages["m1"].tasks[0].policy_reason = "frequency_cap";
  run.provider->delivered_ids.erase("p1s");
  auto report = check_invariants(run);
  BOOST_TEST(report.suppressed_for_nothing == 0u);
}

BOOST_AUTO_TEST_CASE(a_task_suppressed_for_a_new_fallback_task_passes) {
  auto run = clean_run();
  run.messages["m1"].tasks[0].status = "SUPPRESSED";
  run.messages["m1"].tasks.push_back({"t1e", "email", "SENT", "p1e", 1, ""}); // the failover's
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
  run.messages["m0"].tasks.push_back({"fallback", "email", "SENT", "pf", 1, ""});
  auto report = check_invariants(run);
  BOOST_TEST(report.all_pass());
  BOOST_TEST(report.extra_tasks == 1u);
}

BOOST_AUTO_TEST_CASE(nothing_accepted_is_a_failure) {
  run_record run;
  run.events = 10;
  BOOST_TEST(failed(check_invariants(run)) == std::vector<std::string>{"something_accepted"});
}

BOOST_AUTO_TEST_CASE(sent_on_a_receipt_channel_is_unresolved) {
  auto run = clean_run();
  run.receipt_channels = {"sms"};
  auto report = check_invariants(run);
  // Every sms task is still SENT: its receipt or the reconciler has yet to move it.
  BOOST_TEST(failed(report) == std::vector<std::string>{"end_state"});
  BOOST_TEST(report.unsettled_tasks == 3u);
  BOOST_TEST(find(report, "end_state").detail.find("t0s(sms SENT)") != std::string::npos);

  run.messages["m0"].tasks[0].status = "DELIVERED";
  run.messages["m1"].tasks[0].status = "UNCONFIRMED";
  run.messages["m2"].tasks[0].status = "READ";
  report = check_invariants(run);
  BOOST_TEST(report.all_pass());
  BOOST_TEST(report.unsettled_tasks == 0u);
  BOOST_TEST(report.invariants.size() == 11u);

  // A fallback task no answer named must settle too.
  run.messages["m1"].tasks.push_back({"t1-fallback", "sms", "PENDING", "pfb", 0, ""});
  BOOST_TEST(failed(check_invariants(run)) == std::vector<std::string>{"end_state"});
}

BOOST_AUTO_TEST_CASE(an_undelivered_task_must_leave_a_task_on_its_fallback) {
  auto run = clean_run();
  run.receipt_channels = {"sms", "app"};
  run.messages["m1"].tasks[0].status = "UNDELIVERED";
  run.fallbacks = {{"sms", "app"}}; // the event named app too: that task is the fallback's
  auto report = check_invariants(run);
  BOOST_TEST(failed(report) == std::vector<std::string>{"end_state"}); // the SENT ones only
  BOOST_TEST(report.undelivered_without_fallback == 0u);

  run.receipt_channels.clear();
  run.fallbacks = {{"sms", "email"}};
  report = check_invariants(run);
  BOOST_TEST(failed(report) == std::vector<std::string>{"undelivered_fails_over"});
  BOOST_TEST(report.undelivered_without_fallback == 1u);
  BOOST_TEST(find(report, "undelivered_fails_over").detail.find("t1s") != std::string::npos);

  run.messages["m1"].tasks.push_back({"t1e", "email", "SENT", "p1e", 1, ""});
  BOOST_TEST(check_invariants(run).all_pass());

  // Without a fallback configured, UNDELIVERED is an end state of its own.
  run.fallbacks = {{"app", "email"}};
  run.messages["m1"].tasks.pop_back();
  BOOST_TEST(check_invariants(run).all_pass());
}

namespace {

/// /v1/stats as it would read for clean_run(): sms 3 SENT, app 3 DELIVERED.
herald_stats clean_stats() {
  herald_stats stats;
  for (const auto& state : all_task_states()) {
    stats.channels["sms"].states[state] = 0;
    stats.channels["app"].states[state] = 0;
    stats.total.states[state] = 0;
  }
  stats.channels["sms"].states["SENT"] = 3;
  stats.channels["sms"].accepted = 3;
  stats.channels["app"].states["DELIVERED"] = 3;
  stats.channels["app"].accepted = 3;
  stats.total.states["SENT"] = 3;
  stats.total.states["DELIVERED"] = 3;
  stats.total.accepted = 6;
  return stats;
}

} // namespace

BOOST_AUTO_TEST_CASE(stats_must_match_the_messages_exactly) {
  auto run = clean_run();
  run.stats = clean_stats();
  auto report = check_invariants(run);
  BOOST_TEST(report.all_pass());
  BOOST_TEST(find(report, "stats_match").detail.find("accepted 6") != std::string::npos);

  // One task counted in another state than its message shows.
  run.stats->channels["app"].states["DELIVERED"] = 2;
  run.stats->channels["app"].states["READ"] = 1;
  report = check_invariants(run);
  BOOST_TEST(failed(report) == std::vector<std::string>{"stats_match"});
  BOOST_TEST(report.stats_mismatches == 2u);
  BOOST_TEST(find(report, "stats_match").detail.find("app DELIVERED 2!=3") != std::string::npos);

  // States that do not add up to accepted.
  run.stats = clean_stats();
  run.stats->total.accepted = 7;
  report = check_invariants(run);
  BOOST_TEST(report.stats_mismatches == 1u);
  BOOST_TEST(find(report, "stats_match").detail.find("total accepted 7!=sum 6") !=
             std::string::npos);

  // Tasks on a channel the run never showed (another run in the window, or phantom rows).
  run.stats = clean_stats();
  run.stats->channels["email"].states["FAILED"] = 1;
  run.stats->channels["email"].accepted = 1;
  BOOST_TEST(check_invariants(run).stats_mismatches == 1u);

  // A fallback task the messages show must be counted too.
  run.stats = clean_stats();
  run.messages["m0"].tasks.push_back({"t0e", "email", "SENT", "p0e", 1, ""});
  BOOST_TEST(failed(check_invariants(run)) == std::vector<std::string>{"stats_match"});
}

BOOST_AUTO_TEST_CASE(stats_a_herald_does_not_have_are_reported_not_failed) {
  auto run = clean_run();
  run.stats_unavailable = "not available";
  auto report = check_invariants(run);
  BOOST_TEST(report.all_pass());
  BOOST_TEST(report.invariants.size() == 10u);

  run.stats_unavailable = "GET /v1/stats answered 500";
  report = check_invariants(run);
  BOOST_TEST(failed(report) == std::vector<std::string>{"stats_match"});
  BOOST_TEST(find(report, "stats_match").detail.find("500") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(end_states_depend_on_receipts) {
  std::set<std::string> receipts{"sms"};
  BOOST_TEST(is_end_status("SENT", "app", receipts));
  BOOST_TEST(!is_end_status("SENT", "sms", receipts));
  for (auto s : {"DELIVERED", "READ", "CLICKED", "UNDELIVERED", "UNCONFIRMED", "FAILED", "DEAD",
                 "EXPIRED", "SUPPRESSED"})
    BOOST_TEST(is_end_status(s, "sms", receipts), s);
  for (auto s : {"PENDING", "SENDING", "RETRY_WAIT"})
    BOOST_TEST(!is_end_status(s, "app", receipts), s);
  BOOST_TEST(all_task_states().size() == 13u);
}

BOOST_AUTO_TEST_CASE(terminal_and_delivered_states) {
  for (auto s : {"SENT", "DELIVERED", "READ", "CLICKED", "FAILED", "DEAD", "EXPIRED", "SUPPRESSED",
                 "UNCONFIRMED"})
    BOOST_TEST(is_terminal_status(s), s);
  for (auto s : {"PENDING", "SENDING", "RETRY_WAIT", "", "sent", "BOGUS"})
    BOOST_TEST(!is_terminal_status(s), s);
  BOOST_TEST(is_delivered_status("UNCONFIRMED"));
  BOOST_TEST(is_delivered_status("UNDELIVERED")); // the provider processed it
  BOOST_TEST(!is_delivered_status("FAILED"));
}

BOOST_AUTO_TEST_SUITE_END()
