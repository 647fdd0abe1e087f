#pragma once

// Policy applied by the claim (docs/policy.md), written once for every backend: counters in the
// database, stored contacts, decisions recorded on the task and kept by resubmissions, replays
// and dead letters leaving decisions alone. A suite per backend expands HERALD_POLICY_CONTRACT().

#include "persistence/zoneinfo.hpp"
#include "receipt_contract.hpp"
#include "task_store_contract.hpp"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

namespace herald::test::policy_contract {

using domain::category;
using domain::task_state;
using task_store_contract::make_plan;
using task_store_contract::micros;

/// Store options deciding claims with: marketing SMS at most `per_day` per user per day; quiet
/// hours (22:00-08:00 for marketing) only if `quiet_hours`; users in UTC.
inline persistence::store_options with_sms_cap(std::uint32_t per_day, bool quiet_hours) {
  domain::policy_rules rules;
  if (!quiet_hours)
    rules.quiet_categories.clear();
  rules.caps.push_back(domain::frequency_cap{domain::category::marketing, std::string("sms"),
                                             domain::frequency_cap::period::day, per_day});
  persistence::store_options options;
  options.policy = std::make_shared<const persistence::claim_policy>(
      persistence::claim_policy{rules, std::make_shared<persistence::zoneinfo>()});
  return options;
}

/// Marketing SMS: 3 per user per day; no quiet hours; users in UTC.
inline persistence::store_options with_cap() {
  return with_sms_cap(3, false);
}

/// A marketing SMS for `user`, accepted at 2026-12-03T10:00:00Z, no send_at.
inline domain::message_plan marketing_sms(const std::string& biz_id, const std::string& user,
                                          domain::when_held over_cap = domain::when_held::drop) {
  auto plan = make_plan(biz_id, {"sms"}, user);
  plan.message.category = domain::category::marketing;
  plan.message.send_at.reset();
  plan.message.created_at = *domain::parse_rfc3339("2026-12-03T10:00:00Z");
  plan.over_cap = over_cap;
  return plan;
}

/// An app message with an SMS escalation step due at `escalate_at`.
inline domain::message_plan escalating_plan(const std::string& biz_id, std::int64_t escalate_at) {
  auto plan = make_plan(biz_id, {"app", "sms"}, "u-esc");
  plan.tasks.at(1).escalation = true;
  plan.tasks.at(1).not_before = micros(escalate_at);
  return plan;
}

/// The task of `channel` in the stored message `id`.
inline persistence::task_view stored_task(persistence::task_store& store, const std::string& id,
                                          const std::string& channel) {
  const auto view = store.find_message("default", id);
  BOOST_REQUIRE(view.has_value());
  for (const auto& task : view->tasks)
    if (task.channel == channel)
      return task;
  BOOST_FAIL("no " << channel << " task");
  return {};
}

inline std::vector<task_state> states_of(const std::vector<persistence::claim_result>& results) {
  std::vector<task_state> states;
  for (const auto& result : results)
    states.push_back(result.tasks.at(0).state);
  return states;
}

/// An SMS message of `user` whose SMS task is loaded PENDING, with addresses for email and app
/// too, failing over along sms -> email -> app.
struct failing_sms {
  domain::message_plan plan;
  domain::delivery sms;
  persistence::fallback_routes routes{{{"sms", "email"}, {"email", "app"}},
                                      task_store_contract::test_id_secret};
};

inline failing_sms claim_failing_sms(persistence::task_store& store, const std::string& biz_id,
                                     const std::string& user, domain::category category,
                                     const std::vector<std::string>& channels = {"sms"}) {
  failing_sms failing;
  failing.plan = make_plan(biz_id, channels, user);
  failing.plan.message.category = category;
  failing.plan.message.recipients["app"] = "to-app-" + user;
  store.claim({failing.plan});
  auto loaded = store.load_deliveries({failing.plan.tasks.at(0).id}, micros(1'790'000'020'000'000));
  BOOST_REQUIRE_EQUAL(loaded.size(), 1u);
  failing.sms = loaded.at(0);
  return failing;
}

inline void opt_out(persistence::task_store& store, const std::string& user,
                    std::set<std::string> channels) {
  domain::user_patch patch;
  patch.opted_out_channels = std::move(channels);
  store.update_user("default", user, patch, micros(1));
}

/// The SMS task failed permanently (or, with `to` SUPPRESSED, left an open circuit untried).
inline persistence::failover_result fail_sms(persistence::task_store& store,
                                             const failing_sms& failing,
                                             task_state to = task_state::failed) {
  const auto from = to == task_state::suppressed ? task_state::pending : task_state::sending;
  if (from == task_state::sending)
    store.apply({task_store_contract::take_lease(failing.sms.task_id, task_state::pending)}, {});
  return store.fail_over(task_store_contract::change(failing.sms.task_id, from, to, 1,
                                                     1'790'000'031'000'000, "unknown number"),
                         {}, failing.sms, failing.routes);
}

inline const persistence::claim_outcome& link_outcome(const persistence::failover_result& result,
                                                      std::size_t link) {
  BOOST_REQUIRE_GT(result.chain.size(), link);
  return result.chain.at(link).claim.tasks.at(0);
}

} // namespace herald::test::policy_contract

#define HERALD_POLICY_CONTRACT()                                                                   \
  BOOST_AUTO_TEST_CASE(one_claim_of_ten_for_one_user_admits_the_cap_and_the_next_claim_none) {     \
    using namespace herald::test::policy_contract;                                                 \
    auto store = herald::persistence::open_task_store(url(), true, with_cap());                    \
    std::vector<herald::domain::message_plan> plans;                                               \
    for (int i = 0; i < 10; ++i)                                                                   \
      plans.push_back(marketing_sms("promo-" + std::to_string(i), "u-cap"));                       \
    const auto first = store->claim(plans);                                                        \
    int admitted = 0;                                                                              \
    for (const auto& result : first) {                                                             \
      const auto& task = result.tasks.at(0);                                                       \
      BOOST_TEST(task.created);                                                                    \
      if (task.state == task_state::pending) {                                                     \
        ++admitted;                                                                                \
        BOOST_TEST(!task.policy_reason.has_value());                                               \
        BOOST_TEST(task.recipient == "to-sms-u-cap");                                              \
      } else {                                                                                     \
        BOOST_TEST((task.state == task_state::suppressed));                                        \
        BOOST_TEST((task.policy_reason == herald::domain::policy_reason::frequency_cap));          \
      }                                                                                            \
    }                                                                                              \
    BOOST_TEST(admitted == 3);                                                                     \
    /* Another connection (another node) reads the counters the first committed. */                \
    auto other = herald::persistence::open_task_store(url(), false, with_cap());                   \
    const auto later = other->claim({marketing_sms("promo-late", "u-cap")});                       \
    BOOST_TEST((later.at(0).tasks.at(0).state == task_state::suppressed));                         \
    /* Another user has room of their own. */                                                      \
    const auto someone = other->claim({marketing_sms("promo-0", "u-other")});                      \
    BOOST_TEST((someone.at(0).tasks.at(0).state == task_state::pending));                          \
    /* A resubmission finds every task as decided, reason included. */                             \
    const auto again = store->claim(plans);                                                        \
    BOOST_TEST((states_of(again) == states_of(first)));                                            \
    for (std::size_t i = 0; i < again.size(); ++i) {                                               \
      BOOST_TEST(!again[i].tasks.at(0).created);                                                   \
      BOOST_TEST((again[i].tasks.at(0).policy_reason == first[i].tasks.at(0).policy_reason));      \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  BOOST_AUTO_TEST_CASE(a_route_deferring_over_the_cap_fills_the_next_days) {                       \
    using namespace herald::test::policy_contract;                                                 \
    auto store = herald::persistence::open_task_store(url(), true, with_cap());                    \
    std::vector<herald::domain::message_plan> plans;                                               \
    for (int i = 0; i < 7; ++i)                                                                    \
      plans.push_back(                                                                             \
          marketing_sms("d-" + std::to_string(i), "u-defer", herald::domain::when_held::defer));   \
    const auto results = store->claim(plans);                                                      \
    std::vector<std::string> send_times;                                                           \
    for (const auto& result : results) {                                                           \
      BOOST_TEST((result.tasks.at(0).state == task_state::pending));                               \
      auto view = store->find_message("", result.message_id);                                      \
      BOOST_REQUIRE(view.has_value());                                                             \
      const auto& task = view->tasks.at(0);                                                        \
      send_times.push_back(task.send_at ? herald::domain::format_rfc3339(*task.send_at) : "-");    \
    }                                                                                              \
    const std::vector<std::string> expected{"-",                                                   \
                                            "-",                                                   \
                                            "-",                                                   \
                                            "2026-12-04T00:00:00.000000Z",                         \
                                            "2026-12-04T00:00:00.000000Z",                         \
                                            "2026-12-04T00:00:00.000000Z",                         \
                                            "2026-12-05T00:00:00.000000Z"};                        \
    BOOST_TEST(send_times == expected, boost::test_tools::per_element());                          \
    /* Deferred tasks wait for their time: not read by a sweep due before it. */                   \
    const auto due_now = store->load_unfinished(                                                   \
        "", 100, *herald::domain::parse_rfc3339("2026-12-03T10:00:01Z"),                           \
        herald::persistence::unfinished_filter{                                                    \
            "", *herald::domain::parse_rfc3339("2026-12-03T10:00:31Z"), {}});                      \
    BOOST_TEST(due_now.size() == 3u);                                                              \
  }                                                                                                \
                                                                                                   \
  BOOST_AUTO_TEST_CASE(a_left_out_address_takes_the_users_contact_of_the_same_tenant_only) {       \
    using namespace herald::test::policy_contract;                                                 \
    auto store = herald::persistence::open_task_store(url(), true, with_cap());                    \
    herald::domain::user_patch contacts;                                                           \
    contacts.contacts = std::map<std::string, std::string>{{"sms", "+8613811112222"}};             \
    store->update_user("tenant-a", "u-c", contacts, micros(1));                                    \
    auto addressed = make_plan("c-1", {"sms"}, "u-c", "tenant-a");                                 \
    auto elsewhere = make_plan("c-1", {"sms"}, "u-c", "tenant-b");                                 \
    for (auto* plan : {&addressed, &elsewhere}) {                                                  \
      plan->tasks.at(0).recipient.clear();                                                         \
      plan->message.recipients.erase("sms");                                                       \
    }                                                                                              \
    const auto results = store->claim({addressed, elsewhere});                                     \
    BOOST_TEST((results.at(0).tasks.at(0).state == task_state::pending));                          \
    BOOST_TEST(results.at(0).tasks.at(0).recipient == "+8613811112222");                           \
    BOOST_TEST(results.at(0).message.recipients.at("sms") == "+8613811112222");                    \
    BOOST_TEST((results.at(1).tasks.at(0).state == task_state::suppressed));                       \
    BOOST_TEST(                                                                                    \
        (results.at(1).tasks.at(0).policy_reason == herald::domain::policy_reason::no_contact));   \
    const auto due = store->load_deliveries({results.at(0).tasks.at(0).task_id}, micros(2));       \
    BOOST_REQUIRE_EQUAL(due.size(), 1u);                                                           \
    BOOST_TEST(due.at(0).recipient == "+8613811112222");                                           \
  }                                                                                                \
                                                                                                   \
  BOOST_AUTO_TEST_CASE(policy_decisions_are_not_dead_letters_and_are_not_replayed) {               \
    using namespace herald::test::policy_contract;                                                 \
    auto store = herald::persistence::open_task_store(url(), true, with_cap());                    \
    std::vector<herald::domain::message_plan> plans;                                               \
    for (int i = 0; i < 4; ++i)                                                                    \
      plans.push_back(marketing_sms("r-" + std::to_string(i), "u-replay"));                        \
    const auto results = store->claim(plans);                                                      \
    const auto& capped = results.at(3).tasks.at(0);                                                \
    BOOST_REQUIRE((capped.state == task_state::suppressed));                                       \
    BOOST_TEST(store->list_dead_letters("", {}, "", 100).empty());                                 \
    const auto replay = store->replay("", capped.task_id, micros(5));                              \
    BOOST_TEST((replay.result == herald::persistence::replay_result::outcome::not_replayable));    \
    BOOST_TEST((replay.state == task_state::suppressed));                                          \
  }                                                                                                \
                                                                                                   \
  /* A fallback is judged like any new task, by its message's category: an opted-out channel is    \
     passed for the next one along the chain, in the failover's transaction. */                    \
  BOOST_AUTO_TEST_CASE(a_fallback_policy_refuses_hands_over_to_the_next_one) {                     \
    using namespace herald::test::policy_contract;                                                 \
    auto store = herald::persistence::open_task_store(url(), true, with_cap());                    \
    opt_out(*store, "u-fo", {"email"});                                                            \
    const auto failing = claim_failing_sms(*store, "fo-1", "u-fo", category::transactional);       \
    const auto outcome = fail_sms(*store, failing);                                                \
    BOOST_REQUIRE((outcome.result == herald::persistence::failover_result::outcome::failed_over)); \
    BOOST_REQUIRE_EQUAL(outcome.chain.size(), 2u);                                                 \
    const auto& email = link_outcome(outcome, 0);                                                  \
    BOOST_TEST((email.created && email.state == task_state::suppressed));                          \
    BOOST_TEST((email.policy_reason == herald::domain::policy_reason::channel_opted_out));         \
    const auto& app = link_outcome(outcome, 1);                                                    \
    BOOST_TEST((app.created && app.state == task_state::pending && !app.policy_reason));           \
    BOOST_TEST(app.recipient == "to-app-u-fo");                                                    \
    /* The SMS is a dead letter whose user is still to get the message on app. */                  \
    using herald::domain::coverage;                                                                \
    const auto letters = store->list_dead_letters("", {"", coverage::pending}, "", 10);            \
    BOOST_REQUIRE_EQUAL(letters.size(), 1u);                                                       \
    BOOST_TEST(letters.at(0).task.task_id == failing.sms.task_id);                                 \
    BOOST_TEST(letters.at(0).other_tasks.size() == 2u);                                            \
    BOOST_TEST(store->list_dead_letters("", {"", coverage::none}, "", 10).empty());                \
    BOOST_TEST(store->list_dead_letters("", {"", coverage::covered}, "", 10).empty());             \
  }                                                                                                \
                                                                                                   \
  /* A fallback the request named itself, refused by policy when it was accepted, passes the       \
     chain on just the same. */                                                                    \
  BOOST_AUTO_TEST_CASE(a_refused_fallback_found_existing_passes_the_chain_on) {                    \
    using namespace herald::test::policy_contract;                                                 \
    auto store = herald::persistence::open_task_store(url(), true, with_cap());                    \
    opt_out(*store, "u-both", {"email"});                                                          \
    const auto failing =                                                                           \
        claim_failing_sms(*store, "fo-6", "u-both", category::transactional, {"sms", "email"});    \
    const auto outcome = fail_sms(*store, failing);                                                \
    BOOST_REQUIRE((outcome.result == herald::persistence::failover_result::outcome::failed_over)); \
    BOOST_REQUIRE_EQUAL(outcome.chain.size(), 2u);                                                 \
    BOOST_TEST(!link_outcome(outcome, 0).created); /* the request's own email task */              \
    const auto& app = link_outcome(outcome, 1);                                                    \
    BOOST_TEST((app.created && app.state == task_state::pending));                                 \
  }                                                                                                \
                                                                                                   \
  /* Every fallback refused: the user gets nothing, and the dead-letter list says so. */           \
  BOOST_AUTO_TEST_CASE(a_chain_refused_to_the_end_is_listed_as_reaching_no_one) {                  \
    using namespace herald::test::policy_contract;                                                 \
    auto store = herald::persistence::open_task_store(url(), true, with_cap());                    \
    opt_out(*store, "u-none", {"email", "app"});                                                   \
    const auto failing = claim_failing_sms(*store, "fo-2", "u-none", category::transactional);     \
    const auto outcome = fail_sms(*store, failing);                                                \
    BOOST_REQUIRE((outcome.result == herald::persistence::failover_result::outcome::failed_over)); \
    BOOST_REQUIRE_EQUAL(outcome.chain.size(), 2u);                                                 \
    BOOST_TEST((link_outcome(outcome, 1).state == task_state::suppressed));                        \
    using herald::domain::coverage;                                                                \
    const auto letters = store->list_dead_letters("", {"sms", coverage::none}, "", 10);            \
    BOOST_REQUIRE_EQUAL(letters.size(), 1u);                                                       \
    BOOST_TEST((letters.at(0).coverage == coverage::none));                                        \
    BOOST_REQUIRE_EQUAL(letters.at(0).other_tasks.size(), 2u);                                     \
    for (const auto& other : letters.at(0).other_tasks)                                            \
      BOOST_TEST((other.policy_reason == herald::domain::policy_reason::channel_opted_out));       \
  }                                                                                                \
                                                                                                   \
  /* A never-tried task leaving an open circuit goes only to a fallback that will be sent: with    \
     every fallback refused it stays, to wait for its own channel. */                              \
  BOOST_AUTO_TEST_CASE(an_open_circuit_keeps_a_task_whose_fallbacks_are_all_refused) {             \
    using namespace herald::test::policy_contract;                                                 \
    auto store = herald::persistence::open_task_store(url(), true, with_cap());                    \
    opt_out(*store, "u-wait", {"email", "app"});                                                   \
    const auto failing = claim_failing_sms(*store, "fo-3", "u-wait", category::transactional);     \
    const auto outcome = fail_sms(*store, failing, task_state::suppressed);                        \
    BOOST_TEST(                                                                                    \
        (outcome.result == herald::persistence::failover_result::outcome::fallbacks_refused));     \
    BOOST_TEST(                                                                                    \
        (stored_task(*store, failing.plan.message.id, "sms").state == task_state::pending));       \
    BOOST_TEST(store->find_message("default", failing.plan.message.id)->tasks.size() == 1u);       \
  }                                                                                                \
                                                                                                   \
  /* The fallback of a verification message passes the user's DND, as the message did; a           \
     transactional one's does not. */                                                              \
  BOOST_AUTO_TEST_CASE(a_fallback_keeps_its_messages_category) {                                   \
    using namespace herald::test::policy_contract;                                                 \
    auto store = herald::persistence::open_task_store(url(), true, with_cap());                    \
    const auto code = claim_failing_sms(*store, "fo-4", "u-dnd", category::verification);          \
    const auto news = claim_failing_sms(*store, "fo-5", "u-dnd", category::transactional);         \
    BOOST_TEST((code.sms.category == category::verification));                                     \
    herald::domain::user_patch dnd; /* turned on after both were accepted */                       \
    dnd.dnd = herald::domain::user_patch::dnd_change::set;                                         \
    dnd.dnd_until = micros(1'900'000'000'000'000);                                                 \
    store->update_user("default", "u-dnd", dnd, micros(1));                                        \
    const auto code_outcome = fail_sms(*store, code);                                              \
    const auto& email = link_outcome(code_outcome, 0);                                             \
    BOOST_TEST((email.created && email.state == task_state::pending && !email.policy_reason));     \
    const auto outcome = fail_sms(*store, news);                                                   \
    BOOST_TEST((link_outcome(outcome, 0).policy_reason == herald::domain::policy_reason::dnd));    \
  }                                                                                                \
                                                                                                   \
  /* An escalation step waits for its own time, and its SENDING mark suppresses it when a task     \
     of its message was READ first; a READ after the mark changes nothing, and a second mark       \
     of a suppressed step is refused. */                                                           \
  BOOST_AUTO_TEST_CASE(an_escalation_step_is_suppressed_by_a_read_before_it_is_marked) {           \
    using namespace herald::test::policy_contract;                                                 \
    using herald::test::task_store_contract::change;                                               \
    using herald::test::receipt_contract::no_fallbacks;                                            \
    using herald::test::receipt_contract::receipt;                                                 \
    auto store = open_store();                                                                     \
    constexpr std::int64_t due = 1'800'000'300'000'000;                                            \
    const auto read = escalating_plan("esc-read", due);                                            \
    const auto unread = escalating_plan("esc-unread", due);                                        \
    store->claim({read, unread});                                                                  \
    const auto loaded = store->load_deliveries({read.tasks.at(1).id}, micros(due + 1));            \
    BOOST_REQUIRE_EQUAL(loaded.size(), 1u);                                                        \
    BOOST_TEST(loaded.at(0).escalation);                                                           \
    BOOST_TEST((loaded.at(0).send_at == micros(due)));                                             \
    herald::persistence::unfinished_filter before_due;                                             \
    before_due.due_by = micros(due - 1);                                                           \
    /* A sweep before the step is due reads the two app tasks only. */                             \
    BOOST_TEST(store->load_unfinished("", 100, micros(due - 1), before_due).size() == 2u);         \
                                                                                                   \
    for (const auto* plan : {&read, &unread})                                                      \
      store->apply({change(plan->tasks.at(0).id, task_state::pending, task_state::sending),        \
                    change(plan->tasks.at(0).id, task_state::sending, task_state::sent, 1)},       \
                   {});                                                                            \
    store->record_receipts({receipt(read.tasks.at(0), herald::domain::receipt_status::read)},      \
                           no_fallbacks(), micros(due - 10));                                      \
                                                                                                   \
    std::vector<herald::persistence::state_change> marks;                                          \
    for (const auto* plan : {&read, &unread}) {                                                    \
      marks.push_back(                                                                             \
          change(plan->tasks.at(1).id, task_state::pending, task_state::sending, 0, due + 5));     \
      marks.back().escalation = true;                                                              \
    }                                                                                              \
    const auto applied = store->apply(marks, {});                                                  \
    BOOST_TEST((applied == std::vector<std::string>{unread.tasks.at(1).id}));                      \
    const auto suppressed = stored_task(*store, read.message.id, "sms");                           \
    BOOST_TEST((suppressed.state == task_state::suppressed));                                      \
    BOOST_TEST(                                                                                    \
        (suppressed.policy_reason == herald::domain::policy_reason::read_before_escalation));      \
    BOOST_TEST(suppressed.attempt_log.empty());                                                    \
                                                                                                   \
    /* Late: the step was marked already, its send stands. */                                      \
    store->record_receipts({receipt(unread.tasks.at(0), herald::domain::receipt_status::read)},    \
                           no_fallbacks(), micros(due + 10));                                      \
    BOOST_TEST((stored_task(*store, unread.message.id, "sms").state == task_state::sending));      \
    /* Firing again: nothing to mark. */                                                           \
    BOOST_TEST(store->apply({marks.at(0)}, {}).empty());                                           \
    BOOST_TEST((stored_task(*store, read.message.id, "sms").state == task_state::suppressed));     \
  }                                                                                                \
                                                                                                   \
  /* Quiet hours hold the route's app task from 23:00 to 08:00: the step still waits its five      \
     minutes after that, and is counted in that day's SMS cap; suppressed by a read, it gives      \
     its place back, so the day's one marketing SMS can still go. */                               \
  BOOST_AUTO_TEST_CASE(a_step_waits_after_its_held_route_task_and_a_read_gives_its_cap_back) {     \
    using namespace herald::test::policy_contract;                                                 \
    using herald::test::task_store_contract::change;                                               \
    using herald::test::receipt_contract::no_fallbacks;                                            \
    using herald::test::receipt_contract::receipt;                                                 \
    using herald::domain::parse_rfc3339;                                                           \
    auto store = herald::persistence::open_task_store(url(), true, with_sms_cap(1, true));         \
    auto night = make_plan("esc-night", {"app", "sms"}, "u-night");                                \
    night.message.category = herald::domain::category::marketing;                                  \
    night.message.send_at.reset();                                                                 \
    night.message.created_at = *parse_rfc3339("2026-12-03T23:00:00Z");                             \
    night.tasks.at(1).escalation = true;                                                           \
    night.tasks.at(1).not_before = *parse_rfc3339("2026-12-03T23:05:00Z");                         \
    const auto claimed = store->claim({night});                                                    \
    BOOST_TEST(                                                                                    \
        (claimed.at(0).tasks.at(0).policy_reason == herald::domain::policy_reason::quiet_hours));  \
    const auto step = stored_task(*store, night.message.id, "sms");                                \
    BOOST_TEST((step.state == task_state::pending));                                               \
    BOOST_TEST((step.send_at == parse_rfc3339("2026-12-04T08:05:00Z")));                           \
                                                                                                   \
    store->apply({change(night.tasks.at(0).id, task_state::pending, task_state::sending),          \
                  change(night.tasks.at(0).id, task_state::sending, task_state::sent, 1)},         \
                 {});                                                                              \
    store->record_receipts({receipt(night.tasks.at(0), herald::domain::receipt_status::read)},     \
                           no_fallbacks(), *parse_rfc3339("2026-12-04T08:01:00Z"));                \
    auto mark = change(night.tasks.at(1).id, task_state::pending, task_state::sending);            \
    mark.escalation = true;                                                                        \
    BOOST_TEST(store->apply({mark}, {}).empty());                                                  \
    BOOST_TEST((stored_task(*store, night.message.id, "sms").state == task_state::suppressed));    \
                                                                                                   \
    auto day = marketing_sms("esc-day", "u-night");                                                \
    day.message.created_at = *parse_rfc3339("2026-12-04T10:00:00Z");                               \
    const auto admitted = store->claim({day});                                                     \
    BOOST_TEST((admitted.at(0).tasks.at(0).state == task_state::pending));                         \
    BOOST_TEST(!admitted.at(0).tasks.at(0).policy_reason.has_value());                             \
  }                                                                                                \
                                                                                                   \
  BOOST_AUTO_TEST_CASE(without_a_policy_a_task_without_an_address_is_not_sent) {                   \
    using namespace herald::test::policy_contract;                                                 \
    auto store = open_store();                                                                     \
    auto plan = make_plan("nobody", {"sms"}, "u-none");                                            \
    plan.tasks.at(0).recipient.clear();                                                            \
    const auto results = store->claim({plan});                                                     \
    BOOST_TEST((results.at(0).tasks.at(0).state == task_state::suppressed));                       \
    BOOST_TEST(                                                                                    \
        (results.at(0).tasks.at(0).policy_reason == herald::domain::policy_reason::no_contact));   \
  }
