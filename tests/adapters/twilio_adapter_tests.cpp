#include "observability/metrics.hpp"
#include "providers/twilio_protocol.hpp"
#include "providers/twilio_sms_provider.hpp"
#include "support/adapter_calls.hpp"
#include "support/fake_provider_server.hpp"
#include "tools/twilio_fake.hpp"

#include <string>

#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace herald::providers;
using namespace std::chrono_literals;
using answers = test::provider_answers;

namespace {

const std::string callback_url = "https://herald.example.com/v1/receipts/sms";

struct twilio_fixture {
  tools::twilio_fake fake{tools::twilio_fake::options{}};
  std::unique_ptr<test::test_server> server = test::serve(fake);
  std::shared_ptr<metrics> counters = std::make_shared<metrics>();
  twilio_sms_provider adapter{"sms", make_config(), counters};

  twilio_config make_config() const {
    twilio_config c;
    c.account_sid = "AC00000000000000000000000000000001";
    c.auth_token = "fake-auth-token";
    c.sender = "+15005550006";
    c.base_url = server->url("");
    c.status_callback_url = callback_url;
    c.timeout = 2000ms;
    return c;
  }

  static provider_request request(int n, const std::string& to = "+8613800000001") {
    provider_request r;
    r.task_id = "task-" + std::to_string(n);
    r.channel = "sms";
    r.recipient = to;
    r.provider_request_id = "hrq_" + std::to_string(n);
    r.body = "Your code is " + std::to_string(n);
    return r;
  }

  provider_result send_one(int n, const std::string& to = "+8613800000001") {
    answers got;
    adapter.send(request(n, to), got.collect());
    BOOST_REQUIRE(got.wait_for(1));
    return got.results.front();
  }

  status_answer ask(const std::string& sid) {
    std::mutex mutex;
    std::condition_variable arrived;
    std::optional<status_answer> answer;
    adapter.query_status({"task-1", "sms", "hrq_1", "trace", sid}, [&](status_answer a) {
      std::lock_guard<std::mutex> guard{mutex};
      answer = std::move(a);
      arrived.notify_all();
    });
    std::unique_lock<std::mutex> lock{mutex};
    BOOST_REQUIRE(arrived.wait_for(lock, 10s, [&] { return answer.has_value(); }));
    return *answer;
  }

  callback_reading callback(const tools::twilio_sent& message,
                            const std::string& signature_override = {}) {
    auto cb = fake.status_callback(message);
    return adapter.read_callback(
        {"POST",
         {},
         {{"content-type", "application/x-www-form-urlencoded"},
          {"x-twilio-signature", signature_override.empty() ? cb.signature : signature_override}},
         cb.body,
         std::chrono::system_clock::now()});
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(twilio_adapter_tests, twilio_fixture)

BOOST_AUTO_TEST_CASE(a_send_is_a_form_post_with_basic_auth_and_the_sid_is_the_message_id) {
  const auto result = send_one(1);
  BOOST_TEST((result.outcome == call_outcome::success));
  const auto sent = fake.sent();
  BOOST_REQUIRE_EQUAL(sent.size(), 1u);
  BOOST_TEST(result.detail == sent[0].sid);
  BOOST_TEST(sent[0].to == "+8613800000001");
  BOOST_TEST(sent[0].from == "+15005550006");
  BOOST_TEST(sent[0].body == "Your code is 1");
  BOOST_TEST(sent[0].status_callback == callback_url);
}

BOOST_AUTO_TEST_CASE(the_error_code_decides_the_class) {
  const auto bad_number = send_one(1, "not-a-number");
  BOOST_TEST((bad_number.outcome == call_outcome::permanent));
  BOOST_TEST(bad_number.detail.find("21211") != std::string::npos);

  fake.unsubscribe("+8613800000002");
  const auto stopped = send_one(2, "+8613800000002");
  BOOST_TEST((stopped.outcome == call_outcome::permanent));
  BOOST_TEST(stopped.detail.find("21610") != std::string::npos);

  fake.script({{429, 20429, 7}});
  const auto throttled = send_one(3);
  BOOST_TEST((throttled.outcome == call_outcome::throttled));
  BOOST_REQUIRE(throttled.retry_after.has_value());
  BOOST_TEST(throttled.retry_after->count() == 7000);

  fake.script({{503, 30001, 0}});
  BOOST_TEST((send_one(4).outcome == call_outcome::retryable));
  BOOST_TEST(fake.sent().empty());
}

BOOST_AUTO_TEST_CASE(a_cut_or_missing_answer_after_twilio_took_the_call) {
  using shape = tools::twilio_error::shape;
  fake.script({{201, 0, 0, shape::truncated}, {201, 0, 0, shape::hang}});
  const auto cut = send_one(1);
  // 201 came, so Twilio created it: a success named by herald's own id, as the SID was cut.
  BOOST_TEST((cut.outcome == call_outcome::success));
  BOOST_TEST(cut.detail == "hrq_1");
  const auto started = std::chrono::steady_clock::now();
  const auto hung = send_one(2);
  BOOST_TEST((hung.outcome == call_outcome::timeout)); // outcome unknown: retried, not failed
  BOOST_TEST((std::chrono::steady_clock::now() - started >= 2000ms));
  BOOST_TEST(fake.sent().size() == 2u);
}

BOOST_AUTO_TEST_CASE(wrong_credentials_are_a_configuration_error) {
  auto c = make_config();
  c.auth_token = "not-the-token";
  twilio_sms_provider wrong{"sms", c, counters};
  answers got;
  wrong.send(request(1), got.collect());
  BOOST_REQUIRE(got.wait_for(1));
  BOOST_TEST((got.results[0].outcome == call_outcome::permanent));
  BOOST_TEST(got.results[0].detail.find("not-the-token") == std::string::npos);
  BOOST_TEST(counters->render().find(R"(herald_provider_config_errors_total{channel="sms"} 1)") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_status_is_asked_by_message_sid) {
  const auto sid = send_one(1).detail;
  fake.set_status(sid, "delivered");
  const auto delivered = ask(sid);
  BOOST_TEST((delivered.result == status_answer::kind::found));
  BOOST_TEST((delivered.status == provider_status::delivered));
  fake.set_status(sid, "undelivered", 30003);
  const auto undelivered = ask(sid);
  BOOST_TEST((undelivered.status == provider_status::undelivered));
  BOOST_TEST(undelivered.detail.find("30003") != std::string::npos);
  BOOST_TEST((ask("SM0000000000000000000000000000ffff").result == status_answer::kind::not_found));
  BOOST_TEST((ask("").result == status_answer::kind::unknown)); // no SID: cannot be asked
}

BOOST_AUTO_TEST_CASE(signed_status_callbacks_are_receipts_and_others_are_refused) {
  send_one(1);
  auto message = fake.sent().at(0);
  message.status = "sent";
  BOOST_TEST((callback(message).result == callback_reading::kind::reply)); // no final word yet

  message.status = "delivered";
  const auto delivered = callback(message);
  BOOST_REQUIRE((delivered.result == callback_reading::kind::receipt));
  BOOST_TEST(delivered.provider_message_id == message.sid);
  BOOST_TEST((delivered.status == domain::receipt_status::delivered));

  message.status = "failed";
  message.error_code = 30006;
  const auto failed = callback(message);
  BOOST_REQUIRE((failed.result == callback_reading::kind::receipt));
  BOOST_TEST((failed.status == domain::receipt_status::undelivered));
  BOOST_TEST(failed.detail.find("30006") != std::string::npos);

  const auto forged = callback(message, "AAAAAAAAAAAAAAAAAAAAAAAAAAA=");
  BOOST_TEST((forged.result == callback_reading::kind::refused));
  BOOST_TEST(forged.http_status == 401u);
  // Signed over another URL (a gateway rewriting it): refused as well.
  auto params = *form_decode(fake.status_callback(message).body);
  const auto elsewhere =
      callback(message, twilio_signature("fake-auth-token", "https://other.example/cb", params));
  BOOST_TEST(elsewhere.error == "invalid_signature");
}

BOOST_AUTO_TEST_SUITE_END()
