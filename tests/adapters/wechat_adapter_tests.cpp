#include "observability/metrics.hpp"
#include "providers/wechat_template_provider.hpp"
#include "support/adapter_calls.hpp"
#include "support/fake_provider_server.hpp"
#include "tools/wechat_fake.hpp"

#include <chrono>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace herald::providers;
using namespace std::chrono_literals;
using answers = test::provider_answers;

namespace {

struct wechat_fixture {
  tools::wechat_fake fake{tools::wechat_fake::options{}};
  std::unique_ptr<test::test_server> server = test::serve(fake);
  std::shared_ptr<metrics> counters = std::make_shared<metrics>();
  wechat_config config = make_config();
  std::shared_ptr<wechat_account> account = std::make_shared<wechat_account>(config, counters);
  wechat_template_provider adapter{"wechat", config, account, counters};

  wechat_config make_config() const {
    wechat_config c;
    c.appid = "wx-fake-app";
    c.app_secret = "fake-app-secret";
    c.template_id = "tpl-order-shipped";
    c.title_field = "first";
    c.body_field = "keyword1";
    c.base_url = server->url("");
    c.callback_token = "push-token";
    c.timeout = 2000ms;
    c.quota_pause = 123000ms;
    return c;
  }

  static provider_request request(int n, const std::string& openid = "o-user-1") {
    return test::numbered_request(n, "wechat", openid);
  }

  provider_result send_one(int n, const std::string& openid = "o-user-1") {
    return test::send_and_wait(adapter, request(n, openid));
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(wechat_adapter_tests, wechat_fixture)

BOOST_AUTO_TEST_CASE(a_send_carries_the_template_and_client_msg_id_and_returns_the_msgid) {
  const auto result = send_one(1);
  BOOST_TEST((result.outcome == call_outcome::success));
  const auto sent = fake.sent();
  BOOST_REQUIRE_EQUAL(sent.size(), 1u);
  BOOST_TEST(result.detail == sent[0].msgid); // every digit of a msgid beyond 2^53
  BOOST_TEST(sent[0].openid == "o-user-1");
  BOOST_TEST(sent[0].client_msg_id == "hrq_1");
  BOOST_TEST(sent[0].body.find(R"("first":{"value":"Order shipped"})") != std::string::npos);
  BOOST_TEST(sent[0].body.find(R"("keyword1":{"value":"Order 1 is on its way"})") !=
             std::string::npos);
  BOOST_TEST(fake.token_requests() == 1u);
  send_one(2);
  BOOST_TEST(fake.token_requests() == 1u); // cached
}

BOOST_AUTO_TEST_CASE(a_thousand_cold_sends_fetch_one_token) {
  answers got;
  for (int i = 0; i < 1000; ++i)
    adapter.send(request(i), got.collect());
  BOOST_REQUIRE(got.wait_for(1000));
  BOOST_TEST(got.count(call_outcome::success) == 1000u);
  BOOST_TEST(fake.token_requests() == 1u);
}

BOOST_AUTO_TEST_CASE(a_thousand_sends_with_an_expired_token_cause_exactly_one_refresh) {
  send_one(0); // holds a token now
  fake.expire_tokens();
  answers got;
  for (int i = 1; i <= 1000; ++i)
    adapter.send(request(i), got.collect());
  BOOST_REQUIRE(got.wait_for(1000));
  BOOST_TEST(got.count(call_outcome::success) == 1000u);
  BOOST_TEST(fake.token_requests() == 2u);   // the first, and one refresh
  BOOST_TEST(fake.forced_refreshes() == 0u); // a plain fetch gave a new one
  BOOST_TEST(fake.sent().size() == 1001u);
  BOOST_TEST(
      counters->render().find(
          R"(herald_provider_token_refreshes_total{account="wx-fake-app",provider="wechat"} 2)") !=
      std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_token_refused_twice_is_retried_once_then_left_to_the_retry_policy) {
  send_one(0);
  fake.script({tools::wechat_fault::errcode, tools::wechat_fault::errcode}, {40001, 40001});
  const auto result = send_one(1);
  BOOST_TEST((result.outcome == call_outcome::retryable));
  BOOST_TEST(result.detail.find("40001") != std::string::npos);
  // WeChat still hands out the token it refused: one plain fetch, one forced refresh, no loop.
  BOOST_TEST(fake.token_requests() == 3u);
  BOOST_TEST(fake.forced_refreshes() == 1u);
}

BOOST_AUTO_TEST_CASE(the_body_decides_the_class_on_http_200) {
  fake.unfollow("o-gone");
  const auto unfollowed = send_one(1, "o-gone");
  BOOST_TEST((unfollowed.outcome == call_outcome::permanent));
  BOOST_TEST(unfollowed.detail.find("43004") != std::string::npos);

  fake.script({tools::wechat_fault::errcode}, {-1});
  BOOST_TEST((send_one(2).outcome == call_outcome::retryable));

  fake.script({tools::wechat_fault::errcode}, {40037});
  const auto bad_template = send_one(3);
  BOOST_TEST((bad_template.outcome == call_outcome::permanent));
  BOOST_TEST(
      counters->render().find(R"(herald_provider_config_errors_total{channel="wechat"} 1)") !=
      std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_daily_quota_throttles_for_the_configured_pause) {
  fake.set_quota_exhausted(true);
  const auto result = send_one(1);
  BOOST_TEST((result.outcome == call_outcome::throttled));
  BOOST_REQUIRE(result.retry_after.has_value());
  BOOST_TEST(result.retry_after->count() == 123000);
  fake.set_quota_exhausted(false);
  BOOST_TEST((send_one(1).outcome == call_outcome::success));
  BOOST_TEST(fake.sent().size() == 1u);
}

BOOST_AUTO_TEST_CASE(cut_or_garbled_answers_are_outcome_unknown_and_a_503_is_retryable) {
  send_one(0);
  fake.script({tools::wechat_fault::truncated, tools::wechat_fault::garbage,
               tools::wechat_fault::http_503});
  BOOST_TEST((send_one(1).outcome == call_outcome::timeout));
  BOOST_TEST((send_one(2).outcome == call_outcome::timeout));
  BOOST_TEST((send_one(3).outcome == call_outcome::retryable));
}

BOOST_AUTO_TEST_CASE(a_reply_slower_than_the_timeout_is_outcome_unknown) {
  send_one(0);
  fake.script({tools::wechat_fault::hang});
  test::check_unanswered_times_out([&] { return send_one(1); }, config.timeout);
}

BOOST_AUTO_TEST_CASE(a_refused_secret_makes_sends_wait_counts_and_never_shows_the_secret) {
  auto c = config;
  c.app_secret = "wrong-secret-value";
  auto other = std::make_shared<wechat_account>(c, counters);
  wechat_template_provider misconfigured{"wechat", c, other, counters};
  answers got;
  misconfigured.send(request(1), got.collect());
  BOOST_REQUIRE(got.wait_for(1));
  BOOST_TEST((got.results[0].outcome == call_outcome::retryable));
  BOOST_TEST(got.results[0].detail.find("40125") != std::string::npos);
  BOOST_TEST(got.results[0].detail.find("wrong-secret-value") == std::string::npos);
  BOOST_TEST(fake.sent().empty());
  BOOST_TEST(
      counters->render().find(R"(herald_provider_config_errors_total{channel="wechat"} 1)") !=
      std::string::npos);
  answers again; // held: the token endpoint is not asked again for every send
  misconfigured.send(request(2), again.collect());
  BOOST_REQUIRE(again.wait_for(1));
  BOOST_TEST(fake.token_requests() == 1u);
}

BOOST_AUTO_TEST_CASE(the_url_handshake_echoes_echostr_when_signed) {
  const auto now = std::chrono::system_clock::now();
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  auto push = tools::wechat_fake::finish_push("push-token", "o-user-1", "1", "success", seconds);
  const auto good = adapter.read_callback({"GET", push.query + "&echostr=hello-42", {}, {}, now});
  BOOST_TEST((good.result == callback_reading::kind::reply));
  BOOST_TEST(good.reply_body == "hello-42");
  auto forged = tools::wechat_fake::finish_push("other-token", "o-user-1", "1", "success", seconds);
  const auto bad = adapter.read_callback({"GET", forged.query + "&echostr=hello", {}, {}, now});
  BOOST_TEST((bad.result == callback_reading::kind::refused));
  BOOST_TEST(bad.http_status == 401u);
}

BOOST_AUTO_TEST_CASE(a_signed_finish_push_is_a_receipt_by_msgid_and_a_forged_one_is_refused) {
  const auto now = std::chrono::system_clock::now();
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  auto ok = tools::wechat_fake::finish_push("push-token", "o-user-1", "3662956322040938501",
                                            "success", seconds);
  const auto delivered = adapter.read_callback({"POST", ok.query, {}, ok.body, now});
  BOOST_REQUIRE((delivered.result == callback_reading::kind::receipt));
  BOOST_TEST(delivered.provider_message_id == "3662956322040938501");
  BOOST_TEST((delivered.status == domain::receipt_status::delivered));
  BOOST_TEST(delivered.reply_body == "success");
  BOOST_TEST(delivered.acknowledge_unknown);

  auto blocked =
      tools::wechat_fake::finish_push("push-token", "o-user-1", "7", "failed:user block", seconds);
  const auto undelivered = adapter.read_callback({"POST", blocked.query, {}, blocked.body, now});
  BOOST_REQUIRE((undelivered.result == callback_reading::kind::receipt));
  BOOST_TEST((undelivered.status == domain::receipt_status::undelivered));
  BOOST_TEST(undelivered.detail == "user block");

  auto forged = tools::wechat_fake::finish_push("guess", "o-user-1", "7", "success", seconds);
  const auto refused = adapter.read_callback({"POST", forged.query, {}, forged.body, now});
  BOOST_TEST((refused.result == callback_reading::kind::refused));
  BOOST_TEST(refused.error == "invalid_signature");

  auto old =
      tools::wechat_fake::finish_push("push-token", "o-user-1", "7", "success", seconds - 3600);
  const auto stale = adapter.read_callback({"POST", old.query, {}, old.body, now});
  BOOST_TEST(stale.error == "stale_timestamp");
}

// The signature covers only the timestamp and nonce: every verified push is sealed with what it
// carried, for the store to admit once (docs/channels.md); refused ones are not sealed at all.
BOOST_AUTO_TEST_CASE(every_verified_push_is_sealed_with_the_request_it_carried) {
  const auto now = std::chrono::system_clock::now();
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  auto real = tools::wechat_fake::finish_push("push-token", "o-user-1", "7", "success", seconds);
  const auto first = adapter.read_callback({"POST", real.query, {}, real.body, now});
  BOOST_REQUIRE(first.seal.has_value());
  BOOST_TEST(first.seal->channel == "wechat");
  BOOST_TEST(first.seal->signed_at == seconds);
  BOOST_TEST(first.seal->kept_until == seconds + 600); // stale on every node by then
  // WeChat's own repeat of the push: the same seal.
  const auto repeat = adapter.read_callback({"POST", real.query, {}, real.body, now});
  BOOST_REQUIRE(repeat.seal.has_value());
  BOOST_TEST(repeat.seal->digest == first.seal->digest);
  // The signed query with a forged body, and the same query as a URL handshake: same key,
  // other requests.
  auto forged =
      tools::wechat_fake::finish_push("push-token", "o-user-1", "8", "failed:user block", seconds);
  const auto lifted = adapter.read_callback({"POST", real.query, {}, forged.body, now});
  const auto handshake = adapter.read_callback({"GET", real.query + "&echostr=e", {}, {}, now});
  for (const auto* other : {&lifted, &handshake}) {
    BOOST_REQUIRE(other->seal.has_value());
    BOOST_TEST(other->seal->nonce == first.seal->nonce);
    BOOST_TEST(other->seal->signed_at == first.seal->signed_at);
    BOOST_TEST(other->seal->digest != first.seal->digest);
  }
  const auto unsigned_push = adapter.read_callback(
      {"POST",
       tools::wechat_fake::finish_push("guess", "o", "7", "success", seconds).query,
       {},
       real.body,
       now});
  BOOST_TEST((unsigned_push.result == callback_reading::kind::refused));
  BOOST_TEST(!unsigned_push.seal.has_value());
}

BOOST_AUTO_TEST_SUITE_END()
