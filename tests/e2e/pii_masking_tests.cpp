// Personal data and secrets a provider echoes in its error answers, through the built binary:
// a webhook channel and the status-event receiver both refuse with a text carrying one form
// each (issue 26, point 6). Neither GET /v1/messages/{id}, GET /v1/dead-letters, the database
// file nor any log line may show the form in clear; the masked remainder must be there, so
// the text did travel.

#include "support/herald_server.hpp"
#include "support/test_http_server.hpp"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

/// One form of personal data or secret as a provider might echo it.
struct pii_form {
  std::string name;
  std::string echoed;                // what the provider's answer carries
  std::vector<std::string> in_clear; // none of these may appear anywhere herald shows or keeps
  std::string masked;                // what must appear instead
};

/// After refusal()'s 37 bytes and these 150, a key straddles the 200-byte excerpt of an
/// answer: cut before masking, its first 12 characters would be kept, too few to look like a
/// key.
const std::string filler(150, 'e');

const std::vector<pii_form> forms = {
    {"percent-encoded phone", "To=%2B8613812345678", {"8613812", "%2B86138"}, "***5678"},
    {"percent-encoded email", "alice%40example.com", {"alice"}, "a***@example.com"},
    {"phone split by dots", "138.1234.5678", {"138.1234"}, "***5678"},
    {"phone split by slashes", "138/1234/5678", {"138/1234"}, "***5678"},
    {"phone glued to letters", "8613812345678x", {"8613812"}, "***5678x"},
    {"phone split by pluses", "138+1234+5678", {"138+1234"}, "***5678"},
    {"phone after a plus", "To=+8613812345678", {"8613812"}, "***5678"},
    {"phone encoded twice", "To=%252B8613812345678", {"8613812", "%252B"}, "***5678"},
    {"email encoded twice", "alice%2540example.com", {"alice"}, "a***@example.com"},
    {"JSON-escaped email", "alice\\u0040example.com", {"alice"}, "a***@example.com"},
    {"plain email", "alice@example.com", {"alice"}, "a***@example.com"},
    {"key at the cut",
     filler + " sk_live_51HxYzAbCdEfGhIjKlMnOpQrSt",
     {"sk_live", "51HxYz"},
     filler + " ***"},
    {"random key at the cut",
     filler + " Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdo",
     {"Zm9v"},
     filler + " ***"},
    {"bearer JWT",
     "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1LTEyMyJ9.c2ln",
     {"eyJhbGci", "eyJzdWIi"},
     "Bearer ***"},
    {"Twilio SID and auth token",
     "AC0123456789abcdef0123456789abcdef:fedcba9876543210fedcba9876543210",
     {"0123456789abcdef", "fedcba9876543210"},
     "***"},
};

/// The form a request is about: its index is in the event's or the message's biz id.
std::size_t form_of(const std::string& body) {
  const auto data = json::parse(body).at("data").as_object();
  const auto* biz_id = data.if_contains("biz_id"); // status events
  const auto text = biz_id != nullptr ? std::string(biz_id->as_string())
                                      : std::string(data.at("body").as_string()); // messages
  return std::stoul(text.substr(text.find('-') + 1));
}

std::string refusal(std::size_t form) {
  return R"({"error":"invalid recipient","echo":")" + forms.at(form).echoed + R"("})";
}

/// Every form's clear fragments missing from `text`, the masked ones present.
void check_masked(const std::string& where, const std::string& text) {
  for (const auto& form : forms) {
    for (const auto& clear : form.in_clear)
      BOOST_TEST(text.find(clear) == std::string::npos,
                 where << " shows " << form.name << " in clear (" << clear << ")");
    BOOST_TEST(text.find(form.masked) != std::string::npos,
               where << " lacks the masked " << form.name << " (" << form.masked << ")");
  }
}

std::string file_bytes(const temp_dir& dir, const std::string& name) {
  return read_file(dir.file(name));
}

} // namespace

BOOST_AUTO_TEST_SUITE(pii_masking_tests)

BOOST_AUTO_TEST_CASE(provider_error_text_is_masked_in_answers_database_and_logs) {
  test_server provider{[](const recorded_request& seen) {
    return reply{400, {{"Content-Type", "application/json"}}, refusal(form_of(seen.body))};
  }};
  temp_dir dir{"herald-pii"};
  running_herald herald("sqlite:" + dir.file("herald.db"), R"({
    "channels": [{"name": "sms", "type": "webhook", "url": ")" +
                                                               provider.url("/hook") + R"(",
                  "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                  "circuit": {"failure_threshold": 1000}}],
    "events": {"url": ")" + provider.url("/events") +
                                                               R"(",
               "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "types": ["task.failed"],
               "retry": {"schedule_ms": [100], "jitter": 0, "max_attempts": 1}}})");

  std::vector<std::string> message_ids;
  for (std::size_t i = 0; i < forms.size(); ++i) {
    const json::object message{{"biz_type", "PII"},
                               {"biz_id", "pii-" + std::to_string(i)},
                               {"user_id", "u-1"},
                               {"channels", json::array{"sms"}},
                               {"to", json::object{{"sms", "+8613900000000"}}},
                               {"content", {{"title", "t"}, {"body", "pii-" + std::to_string(i)}}}};
    const auto answer = herald.post(json::serialize(message));
    BOOST_REQUIRE_EQUAL(answer.status, 202);
    message_ids.emplace_back(json::parse(answer.body).at("message_id").as_string());
  }

  // Every task FAILED on the refusal; every task.failed event dead on the receiver's.
  std::string views;
  for (std::size_t i = 0; i < forms.size(); ++i) {
    const auto task = wait_for_status(herald, message_ids[i], "FAILED");
    BOOST_TEST(task.at("last_error").as_string().find(forms[i].masked) != std::string::npos,
               forms[i].name << ": " << task.at("last_error").as_string());
    views += herald.get("/v1/messages/" + message_ids[i]).body;
  }
  check_masked("GET /v1/messages/{id}", views);

  const auto letters = herald.get("/v1/dead-letters?channel=sms&limit=100");
  BOOST_REQUIRE_EQUAL(letters.status, 200);
  BOOST_TEST(json::parse(letters.body).at("dead_letters").as_array().size() == forms.size());
  check_masked("GET /v1/dead-letters", letters.body);

  const auto dead = static_cast<double>(forms.size());
  const auto metrics = herald.wait_for_metrics([&](const std::string& text) {
    return metric_sum(text, "herald_events_delivered_total", {"outcome=\"dead\""}) >= dead;
  });
  BOOST_REQUIRE_EQUAL(metric_sum(metrics, "herald_events_delivered_total", {"outcome=\"dead\""}),
                      dead);

  BOOST_REQUIRE_EQUAL(herald.process().stop(), 0);
  const auto log = herald.process().log();
  std::size_t dead_lines = 0;
  for (auto at = log.find("\"events.dead\""); at != std::string::npos;
       at = log.find("\"events.dead\"", at + 1))
    ++dead_lines;
  BOOST_TEST(dead_lines == forms.size());
  check_masked("the log", log);

  // attempts.detail, tasks.last_error and events.last_error, in whichever file SQLite left them.
  check_masked("the database", file_bytes(dir, "herald.db") + file_bytes(dir, "herald.db-wal"));
}

BOOST_AUTO_TEST_SUITE_END()
