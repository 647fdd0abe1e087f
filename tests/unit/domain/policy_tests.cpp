// domain::decide: every rule, their order, and time (quiet hours, cap windows) in the user's
// zone across daylight-saving changes and day boundaries. Time is only what the tests give.
#include "domain/policy.hpp"
#include "tzdata.hpp"

#include <map>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace herald::domain;
using herald::test::utc;
using herald::test::zone;
using namespace std::chrono_literals;

namespace {

/// Counters as a claim keeps them: what was admitted per counter and window.
struct usage {
  std::map<std::pair<std::string, timestamp>, std::uint32_t> used;
  cap_usage lookup() const {
    return [this](const std::string& counter, timestamp start) {
      auto found = used.find({counter, start});
      return found != used.end() ? found->second : 0U;
    };
  }
  void admit(const policy_verdict& verdict) {
    for (const auto& entry : verdict.counted)
      ++used[entry];
  }
};

policy_subject subject(category cat, const std::string& channel, const std::string& at) {
  policy_subject s;
  s.category = cat;
  s.channel = channel;
  s.send_at = utc(at);
  return s;
}

policy_rules marketing_sms_three_a_day() {
  policy_rules rules;
  rules.caps.push_back(
      frequency_cap{category::marketing, std::string("sms"), frequency_cap::period::day, 3});
  return rules;
}

std::string reason_of(const policy_verdict& v) {
  return v.reason ? std::string(to_string(*v.reason)) : std::string("-");
}

std::string decision_of(const policy_verdict& v) {
  return v.decision == policy_verdict::kind::suppress ? "suppress" : "send";
}

} // namespace

BOOST_AUTO_TEST_SUITE(policy_tests)

// One row per rule and per pair of rules that could both apply: the first in the order block
// list → preference → (no address) → category rules → quiet hours → caps decides.
BOOST_AUTO_TEST_CASE(rules_apply_in_their_order) {
  const auto shanghai = zone("Asia/Shanghai");
  user_profile dnd_and_opted_out;
  dnd_and_opted_out.dnd = do_not_disturb{};
  dnd_and_opted_out.opted_out_channels = {"sms"};
  dnd_and_opted_out.opted_out_categories = {category::marketing};
  user_profile opted_out_sms;
  opted_out_sms.opted_out_channels = {"sms"};
  opted_out_sms.opted_out_categories = {category::marketing};
  user_profile opted_out_marketing;
  opted_out_marketing.opted_out_categories = {category::marketing};
  user_profile dnd_until_noon;
  dnd_until_noon.dnd = do_not_disturb{utc("2026-12-03T04:00:00Z")}; // 12:00 in Shanghai
  const user_profile plain;

  struct row {
    const char* name;
    category cat;
    const user_profile* user;
    const char* at; // UTC; Shanghai is +08:00
    bool has_address;
    std::uint32_t already_sent; // marketing sms today
    const char* decision;
    const char* reason;
    const char* send_at; // empty: as asked
  };
  const std::vector<row> rows{
      {"DND first", category::marketing, &dnd_and_opted_out, "2026-12-03T15:00:00Z", false, 3,
       "suppress", "dnd", ""},
      {"channel opt-out before category", category::marketing, &opted_out_sms,
       "2026-12-03T15:00:00Z", true, 3, "suppress", "channel_opted_out", ""},
      {"category opt-out", category::marketing, &opted_out_marketing, "2026-12-03T15:00:00Z", true,
       3, "suppress", "category_opted_out", ""},
      {"transactional ignores a marketing opt-out", category::transactional, &opted_out_marketing,
       "2026-12-03T15:00:00Z", true, 3, "send", "-", ""},
      {"no address after preferences", category::transactional, &plain, "2026-12-03T02:00:00Z",
       false, 0, "suppress", "no_contact", ""},
      {"verification passes DND and opt-outs", category::verification, &dnd_and_opted_out,
       "2026-12-03T15:00:00Z", true, 3, "send", "-", ""},
      {"verification passes quiet hours", category::verification, &plain, "2026-12-03T15:00:00Z",
       true, 0, "send", "-", ""},
      {"transactional passes quiet hours", category::transactional, &plain, "2026-12-03T15:00:00Z",
       true, 0, "send", "-", ""},
      {"DND over: sent", category::marketing, &dnd_until_noon, "2026-12-03T04:00:00Z", true, 0,
       "send", "-", ""},
      {"DND still on a second before its end", category::marketing, &dnd_until_noon,
       "2026-12-03T03:59:59Z", true, 0, "suppress", "dnd", ""},
      {"marketing at 23:00 waits for 08:00", category::marketing, &plain, "2026-12-03T15:00:00Z",
       true, 0, "send", "quiet_hours", "2026-12-04T00:00:00Z"},
      {"marketing at 07:59 waits a minute", category::marketing, &plain, "2026-12-03T23:59:00Z",
       true, 0, "send", "quiet_hours", "2026-12-04T00:00:00Z"},
      {"marketing at 08:00 goes", category::marketing, &plain, "2026-12-04T00:00:00Z", true, 0,
       "send", "-", ""},
      {"marketing at 21:59 goes", category::marketing, &plain, "2026-12-03T13:59:00Z", true, 0,
       "send", "-", ""},
      {"under the cap", category::marketing, &plain, "2026-12-03T02:00:00Z", true, 2, "send", "-",
       ""},
      {"cap full", category::marketing, &plain, "2026-12-03T02:00:00Z", true, 3, "suppress",
       "frequency_cap", ""},
      {"no user stored: rules with the default zone", category::marketing, nullptr,
       "2026-12-03T02:00:00Z", true, 0, "send", "-", ""},
  };
  for (const auto& r : rows) {
    BOOST_TEST_CONTEXT(r.name) {
      usage counts;
      const auto s = subject(r.cat, "sms", r.at);
      auto sub = s;
      sub.has_address = r.has_address;
      const auto window = cap_window(frequency_cap::period::day, sub.send_at, shanghai).first;
      counts.used[{"marketing/sms/day", window}] = r.already_sent;
      const auto verdict =
          decide(sub, r.user, shanghai, marketing_sms_three_a_day(), counts.lookup());
      BOOST_TEST(decision_of(verdict) == r.decision);
      BOOST_TEST(reason_of(verdict) == r.reason);
      BOOST_TEST(format_rfc3339(verdict.send_at) ==
                 format_rfc3339(*r.send_at ? utc(r.send_at) : sub.send_at));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_route_may_drop_what_quiet_hours_or_a_full_cap_would_hold) {
  const auto shanghai = zone("Asia/Shanghai");
  usage counts;
  auto quiet = subject(category::marketing, "sms", "2026-12-03T15:00:00Z");
  quiet.quiet = when_held::drop;
  auto verdict = decide(quiet, nullptr, shanghai, policy_rules{}, counts.lookup());
  BOOST_TEST(decision_of(verdict) == "suppress");
  BOOST_TEST(reason_of(verdict) == "quiet_hours");

  // Deferred past its expiry: never sent, so suppressed with the reason that held it.
  auto expiring = subject(category::marketing, "sms", "2026-12-03T15:00:00Z");
  expiring.expire_at = utc("2026-12-03T20:00:00Z");
  verdict = decide(expiring, nullptr, shanghai, policy_rules{}, counts.lookup());
  BOOST_TEST(decision_of(verdict) == "suppress");
  BOOST_TEST(reason_of(verdict) == "quiet_hours");
}

// Ten events for one user on one day: three sent, seven suppressed — or, deferred, three a
// day on the following days (each at 00:00 local moved on to the end of quiet hours, 08:00).
BOOST_AUTO_TEST_CASE(a_cap_admits_exactly_its_limit_then_suppresses_or_defers) {
  const auto shanghai = zone("Asia/Shanghai");
  const auto rules = marketing_sms_three_a_day();
  usage dropped;
  int sent = 0;
  int suppressed = 0;
  for (int i = 0; i < 10; ++i) {
    auto verdict = decide(subject(category::marketing, "sms", "2026-12-03T02:00:00Z"), nullptr,
                          shanghai, rules, dropped.lookup());
    dropped.admit(verdict);
    (decision_of(verdict) == "send" ? sent : suppressed) += 1;
    if (decision_of(verdict) == "suppress")
      BOOST_TEST(reason_of(verdict) == "frequency_cap");
  }
  BOOST_TEST(sent == 3);
  BOOST_TEST(suppressed == 7);

  usage deferred;
  std::vector<std::string> send_times;
  for (int i = 0; i < 7; ++i) {
    auto s = subject(category::marketing, "sms", "2026-12-03T02:00:00Z");
    s.over_cap = when_held::defer;
    auto verdict = decide(s, nullptr, shanghai, rules, deferred.lookup());
    deferred.admit(verdict);
    send_times.push_back(format_rfc3339(verdict.send_at));
  }
  const std::vector<std::string> expected{
      "2026-12-03T02:00:00.000000Z", "2026-12-03T02:00:00.000000Z", "2026-12-03T02:00:00.000000Z",
      // Dec 4 00:00 Shanghai is inside quiet hours: 08:00 Shanghai = 00:00 UTC.
      "2026-12-04T00:00:00.000000Z", "2026-12-04T00:00:00.000000Z", "2026-12-04T00:00:00.000000Z",
      "2026-12-05T00:00:00.000000Z"};
  BOOST_TEST(send_times == expected, boost::test_tools::per_element());
}

// A cap counts tasks across channels when it names none, per channel when it does, and the
// hourly and daily caps of one category apply together.
BOOST_AUTO_TEST_CASE(caps_count_per_channel_or_across_channels) {
  const auto utc_zone = time_zone::fixed(0s);
  policy_rules rules;
  rules.quiet_categories.clear();
  rules.caps = {
      frequency_cap{category::marketing, std::nullopt, frequency_cap::period::hour, 2},
      frequency_cap{category::marketing, std::string("sms"), frequency_cap::period::day, 5}};
  usage counts;
  std::vector<std::string> decisions;
  for (const char* channel : {"sms", "email", "push"}) {
    auto verdict = decide(subject(category::marketing, channel, "2026-12-03T10:15:00Z"), nullptr,
                          utc_zone, rules, counts.lookup());
    counts.admit(verdict);
    decisions.push_back(decision_of(verdict));
  }
  BOOST_TEST(decisions == (std::vector<std::string>{"send", "send", "suppress"}),
             boost::test_tools::per_element());
  // The next hour has room again; the sms day cap counted the one sms.
  auto next_hour = decide(subject(category::marketing, "sms", "2026-12-03T11:00:00Z"), nullptr,
                          utc_zone, rules, counts.lookup());
  BOOST_TEST(decision_of(next_hour) == "send");
  BOOST_TEST(next_hour.counted.size() == 2U);
  // Transactional tasks are not counted by marketing caps.
  auto transactional = decide(subject(category::transactional, "sms", "2026-12-03T10:20:00Z"),
                              nullptr, utc_zone, rules, counts.lookup());
  BOOST_TEST(decision_of(transactional) == "send");
  BOOST_TEST(transactional.counted.empty());
}

// Cap windows are the user's calendar hours and days, through DST changes: a 23-hour and a
// 25-hour day in Paris, the repeated hour counted as one window, a half-hour zone.
BOOST_AUTO_TEST_CASE(cap_windows_follow_the_users_wall_clock) {
  struct row {
    const char* zone;
    frequency_cap::period per;
    const char* at;
    const char* start;
    const char* end;
  };
  const auto day = frequency_cap::period::day;
  const auto hour = frequency_cap::period::hour;
  for (const auto& r : std::vector<row>{
           {"Europe/Paris", day, "2026-03-29T12:00:00Z", "2026-03-28T23:00:00Z",
            "2026-03-29T22:00:00Z"}, // spring forward: 23 hours
           {"Europe/Paris", day, "2026-10-25T12:00:00Z", "2026-10-24T22:00:00Z",
            "2026-10-25T23:00:00Z"}, // fall back: 25 hours
           {"Europe/Paris", hour, "2026-10-25T00:30:00Z", "2026-10-25T00:00:00Z",
            "2026-10-25T02:00:00Z"}, // 02:30 CEST, first pass of the repeated hour
           {"Europe/Paris", hour, "2026-10-25T01:30:00Z", "2026-10-25T00:00:00Z",
            "2026-10-25T02:00:00Z"}, // 02:30 CET, second pass: the same window
           {"Europe/Paris", hour, "2026-03-29T01:30:00Z", "2026-03-29T01:00:00Z",
            "2026-03-29T02:00:00Z"}, // 03:30 CEST, the hour after the gap
           {"Asia/Shanghai", day, "2026-12-31T16:00:00Z", "2026-12-31T16:00:00Z",
            "2027-01-01T16:00:00Z"}, // new year's midnight local
           {"Asia/Shanghai", day, "2026-12-31T15:59:59Z", "2026-12-30T16:00:00Z",
            "2026-12-31T16:00:00Z"},
           {"Asia/Kolkata", hour, "2026-12-03T10:45:00Z", "2026-12-03T10:30:00Z",
            "2026-12-03T11:30:00Z"}, // +05:30
           {"America/New_York", day, "2026-11-01T12:00:00Z", "2026-11-01T04:00:00Z",
            "2026-11-02T05:00:00Z"},
       }) {
    BOOST_TEST_CONTEXT(r.zone << " " << r.at) {
      const auto [start, end] = cap_window(r.per, utc(r.at), zone(r.zone));
      BOOST_TEST(format_rfc3339(start) == format_rfc3339(utc(r.start)));
      BOOST_TEST(format_rfc3339(end) == format_rfc3339(utc(r.end)));
    }
  }
}

// Quiet hours in the user's zone: New York's 22:00 before and after the fall-back, Sydney's
// summer time, and the deferred time landing on the far side of a DST change.
BOOST_AUTO_TEST_CASE(quiet_hours_defer_to_the_local_morning_across_dst) {
  struct row {
    const char* zone;
    const char* at;
    const char* send_at;
  };
  for (const auto& r : std::vector<row>{
           // 22:30 EDT on Oct 31; 08:00 EST on Nov 1 (clocks went back in between).
           {"America/New_York", "2026-11-01T02:30:00Z", "2026-11-01T13:00:00Z"},
           // 23:00 EST on Mar 7; 08:00 EDT on Mar 8 (clocks went forward).
           {"America/New_York", "2026-03-08T04:00:00Z", "2026-03-08T12:00:00Z"},
           // 23:00 AEDT in December; 08:00 AEDT next day.
           {"Australia/Sydney", "2026-12-03T12:00:00Z", "2026-12-03T21:00:00Z"},
           // 12:00 in Sydney: not quiet.
           {"Australia/Sydney", "2026-12-03T01:00:00Z", "2026-12-03T01:00:00Z"},
       }) {
    BOOST_TEST_CONTEXT(r.zone << " " << r.at) {
      usage counts;
      auto verdict = decide(subject(category::marketing, "push", r.at), nullptr, zone(r.zone),
                            policy_rules{}, counts.lookup());
      BOOST_TEST(decision_of(verdict) == "send");
      BOOST_TEST(format_rfc3339(verdict.send_at) == format_rfc3339(utc(r.send_at)));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_patch_changes_what_it_gives_and_a_put_replaces) {
  const auto t0 = utc("2026-12-03T00:00:00Z");
  user_patch put;
  put.replace = true;
  put.contacts = std::map<std::string, std::string>{{"sms", "+8613800000000"}, {"email", "a@b.c"}};
  put.time_zone = "Asia/Shanghai";
  put.opted_out_categories = std::set<category>{category::marketing};
  auto user = apply_patch(std::nullopt, "t", "u-1", put, t0);
  BOOST_TEST(user.contacts.size() == 2U);

  user_patch patch;
  patch.contacts = std::map<std::string, std::string>{{"email", ""}, {"push", "tok"}};
  patch.dnd = user_patch::dnd_change::set;
  user = apply_patch(user, "t", "u-1", patch, t0 + 1s);
  BOOST_TEST(user.contacts.count("email") == 0U);
  BOOST_TEST(user.contacts.at("push") == "tok");
  BOOST_TEST(user.contacts.at("sms") == "+8613800000000");
  BOOST_TEST(user.time_zone == "Asia/Shanghai");
  BOOST_TEST(user.dnd.has_value());

  user_patch replace;
  replace.replace = true;
  user = apply_patch(user, "t", "u-1", replace, t0 + 2s);
  BOOST_TEST(user.contacts.empty());
  BOOST_TEST(user.time_zone.empty());
  BOOST_TEST(user.opted_out_categories.empty());
  BOOST_TEST(user.dnd.has_value()); // DND has its own resource
  BOOST_TEST(format_rfc3339(user.updated_at) == format_rfc3339(t0 + 2s));
}

BOOST_AUTO_TEST_SUITE_END()
