// Failover against the built binary (issue 27, docs/reliability.md): every user reaches a
// fallback when their first channel gives up, whatever policy says of the fallbacks in
// between, and the dead-letter list tells a user who got nothing from one covered elsewhere.
//
// Four cases of 50 messages each, all at once, through simulated channels:
//   (a) SMS failing retryably until DEAD, email as its fallback;
//   (b) a verification code, the user on do-not-disturb, SMS failing permanently → email;
//   (c) the user opted out of email, the first fallback → app, the second;
//   (d) the user opted out of email and app → nothing, listed as coverage "none".

#include "support/eventually.hpp"
#include "support/herald_server.hpp"
#include "support/http_client.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

// Two failing SMS channels (one busy for ever, one refusing every number), both falling back
// to email, which falls back to app. Retries are quick, so DEAD comes within a second; the busy
// channel's circuit never opens, so every task runs out of attempts rather than leaving early.
const std::string failover_config = R"({
  "channels": [
    {"name": "sms_busy", "type": "simulated", "retryable_failure_rate": 1.0, "fallback": "email",
     "retry": {"schedule_ms": [20], "jitter": 0, "max_attempts": 3},
     "circuit": {"failure_threshold": 1000000}},
    {"name": "sms_bad", "type": "simulated", "permanent_failure_rate": 1.0, "fallback": "email"},
    {"name": "email", "type": "simulated", "fallback": "app"},
    {"name": "app", "type": "simulated"}
  ],
  "sweep_interval_ms": 200
})";

constexpr int per_case = 50;

struct drill_case {
  std::string name;
  std::string sms_channel;
  std::string category;
  std::set<std::string> opted_out;
  bool dnd = false;
};

std::string user_of(const drill_case& c, int i) {
  return "u-" + c.name + "-" + std::to_string(i);
}

std::string event_of(const drill_case& c, int i) {
  const auto user = user_of(c, i);
  return json::serialize(json::object{{"biz_type", "FAILOVER_DRILL"},
                                      {"biz_id", c.name + "-" + std::to_string(i)},
                                      {"user_id", user},
                                      {"channels", json::array{json::string(c.sms_channel)}},
                                      {"category", c.category},
                                      {"to",
                                       {{c.sms_channel, "+8613800000000"},
                                        {"email", user + "@example.com"},
                                        {"app", "tok-" + user}}},
                                      {"content", {{"title", "Your code"}, {"body", "123456"}}}});
}

void set_up_user(running_herald& herald, const drill_case& c, int i) {
  const auto user = user_of(c, i);
  if (!c.opted_out.empty()) {
    json::array channels;
    for (const auto& channel : c.opted_out)
      channels.emplace_back(channel);
    const auto put =
        request(host, herald.port(), "PUT", "/v1/users/" + user,
                json::serialize(json::object{{"opted_out_channels", channels}}), json_headers());
    BOOST_REQUIRE_MESSAGE(put.status == 200 || put.status == 201, put.body);
  }
  if (c.dnd) {
    const auto put =
        request(host, herald.port(), "PUT", "/v1/users/" + user + "/dnd", "{}", json_headers());
    BOOST_REQUIRE_MESSAGE(put.status == 200, put.body);
  }
}

struct message_outcome {
  bool settled = false;                     ///< every task terminal
  std::vector<std::string> reached;         ///< channels whose task is SENT
  int successful_calls = 0;                 ///< provider calls answered "success"
  std::map<std::string, std::string> state; ///< channel -> status
};

message_outcome outcome_of(running_herald& herald, const std::string& message_id) {
  message_outcome outcome;
  const auto response = herald.get("/v1/messages/" + message_id);
  if (response.status != 200)
    return outcome;
  outcome.settled = true;
  const auto view = json::parse(response.body);
  for (const auto& task : view.at("tasks").as_array()) {
    const auto channel = std::string(task.at("channel").as_string());
    const auto status = std::string(task.at("status").as_string());
    outcome.state[channel] = status;
    if (status == "PENDING" || status == "SENDING" || status == "RETRY_WAIT")
      outcome.settled = false;
    if (status == "SENT")
      outcome.reached.push_back(channel);
    for (const auto& attempt : task.at("attempt_log").as_array())
      if (attempt.at("outcome").as_string() == "success")
        ++outcome.successful_calls;
  }
  return outcome;
}

/// Every dead letter of the list with `query`, page after page.
std::vector<json::object> dead_letters(running_herald& herald, const std::string& query) {
  std::vector<json::object> letters;
  std::string after;
  for (;;) {
    const auto response = herald.get("/v1/dead-letters?limit=100&" + query +
                                     (after.empty() ? "" : "&after=" + after));
    BOOST_REQUIRE_MESSAGE(response.status == 200, response.body);
    const auto body = json::parse(response.body).as_object();
    for (const auto& letter : body.at("dead_letters").as_array())
      letters.push_back(letter.as_object());
    if (body.at("next_after").is_null())
      return letters;
    after = std::string(body.at("next_after").as_string());
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(failover_chain_tests)

BOOST_AUTO_TEST_CASE(every_user_reaches_a_fallback_or_is_listed_as_reached_by_none) {
  running_herald herald("", failover_config);
  const std::vector<drill_case> cases = {
      {"dead", "sms_busy", "transactional", {}, false},
      {"code", "sms_bad", "verification", {}, true},
      {"optout", "sms_bad", "transactional", {"email"}, false},
      {"nowhere", "sms_bad", "transactional", {"email", "app"}, false},
  };
  std::map<std::string, std::vector<std::string>> messages; // case -> message ids
  for (const auto& c : cases)
    for (int i = 0; i < per_case; ++i) {
      set_up_user(herald, c, i);
      const auto response = herald.post(event_of(c, i));
      BOOST_REQUIRE_MESSAGE(response.status == 202, response.body);
      messages[c.name].push_back(
          std::string(json::parse(response.body).at("message_id").as_string()));
    }

  std::map<std::string, message_outcome> outcomes;
  BOOST_REQUIRE_MESSAGE(eventually(
                            [&] {
                              for (const auto& [name, ids] : messages)
                                for (const auto& id : ids) {
                                  auto& outcome = outcomes[id];
                                  if (!outcome.settled)
                                    outcome = outcome_of(herald, id);
                                  if (!outcome.settled)
                                    return false;
                                }
                              return true;
                            },
                            60s),
                        "not every message settled; herald's log:\n"
                            << herald.process().log());

  const std::map<std::string, std::string> reached_on = {
      {"dead", "email"}, {"code", "email"}, {"optout", "app"}};
  for (const auto& [name, ids] : messages)
    for (const auto& id : ids) {
      const auto& outcome = outcomes.at(id);
      if (name == "nowhere") {
        BOOST_TEST(outcome.reached.empty(), id);
        BOOST_TEST(outcome.successful_calls == 0, id);
        BOOST_TEST(outcome.state.at("email") == "SUPPRESSED", id);
        BOOST_TEST(outcome.state.at("app") == "SUPPRESSED", id);
        continue;
      }
      // Exactly once, on the channel the case expects.
      BOOST_TEST(outcome.reached == std::vector<std::string>{reached_on.at(name)},
                 name << " " << id);
      BOOST_TEST(outcome.successful_calls == 1, name << " " << id);
    }
  for (const auto& id : messages.at("dead"))
    BOOST_TEST(outcomes.at(id).state.at("sms_busy") == "DEAD", id);
  for (const auto& id : messages.at("optout"))
    BOOST_TEST(outcomes.at(id).state.at("email") == "SUPPRESSED", id);

  // The dead-letter list: the SMS of every user who got nothing, with why, apart from those
  // covered by a fallback.
  const auto nowhere = dead_letters(herald, "coverage=none");
  std::set<std::string> listed;
  for (const auto& letter : nowhere) {
    BOOST_TEST(letter.at("coverage").as_string() == "none");
    listed.insert(std::string(letter.at("message_id").as_string()));
    const auto& others = letter.at("other_tasks").as_array();
    BOOST_TEST(others.size() == 2u);
    for (const auto& other : others)
      BOOST_TEST(other.at("policy_reason").as_string() == "channel_opted_out");
  }
  BOOST_TEST(listed ==
             std::set<std::string>(messages.at("nowhere").begin(), messages.at("nowhere").end()));
  const auto covered = dead_letters(herald, "coverage=covered");
  BOOST_TEST(covered.size() == 3u * per_case); // (a), (b), (c): the SMS task of each
  for (const auto& letter : covered)
    BOOST_TEST(letter.at("coverage").as_string() == "covered");
  BOOST_TEST(dead_letters(herald, "").size() == 4u * per_case);
  BOOST_TEST(herald.get("/v1/dead-letters?coverage=some").status == 400);
}

BOOST_AUTO_TEST_SUITE_END()
