// domain::admit and domain::admission: how a claim judges its new tasks (policy, caps shared
// within the claim, escalation timing) and fills addresses from contacts, without a database.
#include "domain/admission.hpp"
#include "tzdata.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace herald::domain;
using herald::test::utc;
using herald::test::zone;
using namespace std::chrono_literals;

namespace {

message_record marketing(const std::string& id, const std::string& at) {
  message_record m;
  m.id = id;
  m.key = {"shop", "PROMO", id, "u-1"};
  m.category = category::marketing;
  m.created_at = utc(at);
  return m;
}

task_record task(const std::string& channel, const std::string& recipient) {
  task_record t;
  t.id = "tsk_" + channel;
  t.channel = channel;
  t.recipient = recipient;
  return t;
}

task_record step(const std::string& channel, timestamp not_before) {
  auto t = task(channel, "addr");
  t.escalation = true;
  t.not_before = not_before;
  return t;
}

/// Finds zones in the system's tz database, as the store's zoneinfo does.
admission::zone_finder tzdata() {
  return [](const std::string& name) { return std::make_shared<const time_zone>(zone(name)); };
}

policy_rules one_marketing_sms_a_day() {
  policy_rules rules;
  rules.caps.push_back(
      frequency_cap{category::marketing, std::string("sms"), frequency_cap::period::day, 1});
  return rules;
}

std::string reason_of(const admitted_task& a) {
  return a.verdict && a.verdict->reason ? std::string(to_string(*a.verdict->reason)) : "-";
}

} // namespace

BOOST_AUTO_TEST_SUITE(admission_tests)

BOOST_AUTO_TEST_CASE(without_policy_only_a_missing_address_is_refused) {
  const auto m = marketing("o-1", "2026-12-03T23:00:00Z"); // in quiet hours: not judged
  const auto addressed = task("sms", "+8613800000000");
  const auto unaddressed = task("email", "");
  const auto later = step("app", m.created_at + 10min);
  const std::vector<claim_slot> slots{{&m, &addressed}, {&m, &unaddressed}, {&m, &later}};

  const auto admitted = admit(slots, {false, false, false}, nullptr);
  BOOST_TEST(!admitted[0].verdict);
  BOOST_REQUIRE(admitted[1].verdict);
  BOOST_TEST((admitted[1].verdict->decision == policy_verdict::kind::suppress));
  BOOST_TEST(reason_of(admitted[1]) == "no_contact");
  BOOST_TEST(!admitted[2].verdict);
  BOOST_TEST((admitted[2].step_time == m.created_at + 10min));
}

BOOST_AUTO_TEST_CASE(an_escalation_step_moves_with_the_tasks_quiet_hours_defer) {
  const policy_rules rules; // quiet hours 22:00-08:00 for marketing, UTC
  admission policy(rules, tzdata());
  const auto m = marketing("o-1", "2026-12-03T23:00:00Z");
  const auto sms = task("sms", "+8613800000000");
  const auto app = step("app", m.created_at + 10min);
  const std::vector<claim_slot> slots{{&m, &sms}, {&m, &app}};

  const auto admitted = admit(slots, {false, false}, &policy);
  BOOST_REQUIRE(admitted[0].verdict);
  BOOST_TEST(reason_of(admitted[0]) == "quiet_hours");
  BOOST_TEST((admitted[0].verdict->send_at == utc("2026-12-04T08:00:00Z")));
  // Still ten minutes after the route's task: the user has the delay to read it.
  BOOST_TEST((admitted[1].step_time == utc("2026-12-04T08:10:00Z")));
  BOOST_REQUIRE(admitted[1].verdict);
  BOOST_TEST((admitted[1].verdict->decision == policy_verdict::kind::send));
  BOOST_TEST(reason_of(admitted[1]) == "-");
}

BOOST_AUTO_TEST_CASE(only_a_task_sent_as_asked_and_due_goes_at_once) {
  const policy_rules rules; // quiet hours 22:00-08:00 for marketing, UTC
  admission policy(rules, tzdata());
  const auto day = marketing("o-1", "2026-12-03T12:00:00Z");
  const auto night = marketing("o-2", "2026-12-03T23:00:00Z");
  auto later = marketing("o-3", "2026-12-03T12:00:00Z");
  later.send_at = day.created_at + 1h;
  auto expired = marketing("o-4", "2026-12-03T12:00:00Z");
  expired.expire_at = day.created_at;
  const auto sms = task("sms", "+8613800000000");
  const auto none = task("email", "");
  const auto escalation = step("app", day.created_at + 10min);
  const std::vector<claim_slot> slots{{&day, &sms},     {&night, &sms}, {&later, &sms},
                                      {&expired, &sms}, {&day, &none},  {&day, &escalation}};
  const auto admitted = admit(slots, std::vector<bool>(slots.size(), false), &policy);
  std::vector<bool> at_once;
  for (std::size_t i = 0; i < slots.size(); ++i)
    at_once.push_back(goes_at_once(slots[i], admitted[i], day.created_at));
  // As asked; deferred by quiet hours; scheduled later; expired; no address; a step.
  BOOST_TEST(at_once == (std::vector<bool>{true, false, false, false, false, false}));
  BOOST_TEST(goes_at_once(slots[2], admitted[2], day.created_at + 1h)); // due by then
}

BOOST_AUTO_TEST_CASE(a_step_of_another_message_does_not_move) {
  const policy_rules rules;
  admission policy(rules, tzdata());
  const auto night = marketing("o-1", "2026-12-03T23:00:00Z");
  auto day = marketing("o-2", "2026-12-03T23:00:00Z");
  day.category = category::transactional; // not held by quiet hours
  const auto sms = task("sms", "+8613800000000");
  const auto app = step("app", day.created_at + 10min);
  const auto admitted = admit({{&night, &sms}, {&day, &app}}, {false, false}, &policy);
  BOOST_TEST(reason_of(admitted[0]) == "quiet_hours");
  BOOST_TEST((admitted[1].step_time == day.created_at + 10min));
}

BOOST_AUTO_TEST_CASE(tasks_of_one_claim_share_their_caps_and_stored_ones_are_not_judged) {
  const auto rules = one_marketing_sms_a_day();
  admission policy(rules, tzdata());
  const auto first = marketing("o-1", "2026-12-03T10:00:00Z");
  const auto second = marketing("o-2", "2026-12-03T11:00:00Z");
  const auto third = marketing("o-3", "2026-12-03T12:00:00Z");
  const auto sms = task("sms", "+8613800000000");
  const std::vector<claim_slot> slots{{&first, &sms}, {&second, &sms}, {&third, &sms}};

  // The first is stored already (a resubmission): judged when it was created, not again.
  const auto admitted = admit(slots, {true, false, false}, &policy);
  BOOST_TEST(!admitted[0].verdict);
  BOOST_REQUIRE(admitted[1].verdict);
  BOOST_TEST((admitted[1].verdict->decision == policy_verdict::kind::send));
  BOOST_TEST(admitted[1].verdict->counted.size() == 1u);
  BOOST_REQUIRE(admitted[2].verdict);
  BOOST_TEST((admitted[2].verdict->decision == policy_verdict::kind::suppress)); // drop
  BOOST_TEST(reason_of(admitted[2]) == "frequency_cap");
}

BOOST_AUTO_TEST_CASE(stored_flags_must_match_the_slots) {
  const auto m = marketing("o-1", "2026-12-03T10:00:00Z");
  const auto sms = task("sms", "+8613800000000");
  BOOST_CHECK_THROW(admit({{&m, &sms}}, {}, nullptr), std::invalid_argument);
  BOOST_CHECK_THROW(admit({{&m, &sms}}, {false, false}, nullptr), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(what_the_counters_admitted_before_the_claim_counts) {
  const auto rules = one_marketing_sms_a_day();
  admission policy(rules, tzdata());
  const auto m = marketing("o-1", "2026-12-03T10:00:00Z");
  const auto sms = task("sms", "+8613800000000");
  const auto day = cap_window(frequency_cap::period::day, m.created_at, zone("UTC")).first;
  policy.add_usage("shop", "u-1", rules.caps[0].counter(), day, 1);
  policy.add_usage("shop", "u-2", rules.caps[0].counter(), day, 5); // another user's

  const auto admitted = admit({{&m, &sms}}, {false}, &policy);
  BOOST_TEST(reason_of(admitted[0]) == "frequency_cap");
}

BOOST_AUTO_TEST_CASE(a_user_is_judged_in_their_zone_and_reached_at_their_contacts) {
  const policy_rules rules;
  admission policy(rules, tzdata());
  user_profile user;
  user.tenant = "shop";
  user.user_id = "u-1";
  user.time_zone = "Asia/Shanghai";
  user.contacts = {{"sms", "+8613800000001"}, {"email", "u1@example.com"}};
  policy.add_user(user);
  BOOST_TEST(policy.user("shop", "u-2") == nullptr);

  // 15:00 UTC is 23:00 in Shanghai: quiet until 08:00 there.
  std::vector<message_plan> plans(1);
  plans[0].message = marketing("o-1", "2026-12-03T15:00:00Z");
  plans[0].message.recipients = {{"email", "given@example.com"}};
  plans[0].tasks = {task("sms", ""), task("email", "given@example.com")};
  fill_contacts(plans, policy);
  BOOST_TEST(plans[0].tasks[0].recipient == "+8613800000001");
  BOOST_TEST(plans[0].tasks[1].recipient == "given@example.com"); // `to` wins
  BOOST_TEST(plans[0].message.recipients.at("sms") == "+8613800000001");
  BOOST_TEST(plans[0].message.recipients.at("email") == "given@example.com");

  const auto admitted = admit({{&plans[0].message, &plans[0].tasks[0]}}, {false}, &policy);
  BOOST_TEST(reason_of(admitted[0]) == "quiet_hours");
  BOOST_TEST((admitted[0].verdict->send_at == utc("2026-12-04T00:00:00Z")));
}

BOOST_AUTO_TEST_CASE(an_unknown_zone_falls_back_to_the_default) {
  policy_rules rules;
  rules.default_time_zone = "Asia/Shanghai";
  admission policy(rules, [](const std::string& name) -> std::shared_ptr<const time_zone> {
    if (name == "Asia/Shanghai")
      return std::make_shared<const time_zone>(zone(name));
    return nullptr; // removed from the database since it was stored
  });
  user_profile user;
  user.tenant = "shop";
  user.user_id = "u-1";
  user.time_zone = "Gone/Zone";
  policy.add_user(user);
  const auto m = marketing("o-1", "2026-12-03T15:00:00Z"); // 23:00 in Shanghai
  const auto sms = task("sms", "+8613800000000");
  const auto admitted = admit({{&m, &sms}}, {false}, &policy);
  BOOST_TEST(reason_of(admitted[0]) == "quiet_hours");
}

BOOST_AUTO_TEST_SUITE_END()
