// Adapters going away while their calls are in flight: every callback runs exactly once, none
// after its adapter's client is gone, nothing a callback touches is freed under it (run under
// AddressSanitizer to see the last part).

#include "observability/metrics.hpp"
#include "providers/twilio_sms_provider.hpp"
#include "providers/wechat_template_provider.hpp"
#include "support/test_http_server.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace herald::providers;
using namespace std::chrono_literals;

namespace {

/// Counts the answers of each call by its number: a call answered twice or never shows.
struct answer_counts {
  explicit answer_counts(std::size_t calls) : counts(calls) {}

  provider_callback collect(std::size_t n) {
    return [this, n](provider_result result) {
      ++counts[n];
      std::lock_guard<std::mutex> guard{mutex};
      outcomes.push_back(result.outcome);
    };
  }
  status_callback collect_status(std::size_t n) {
    return [this, n](status_answer) { ++counts[n]; };
  }
  bool each_once() const {
    for (const auto& count : counts)
      if (count.load() != 1)
        return false;
    return true;
  }

  std::vector<std::atomic<int>> counts;
  std::mutex mutex;
  std::vector<call_outcome> outcomes;
};

std::string token_answer() {
  return R"({"access_token":"tok-1","expires_in":7200})";
}

std::string sent_answer() {
  return R"({"errcode":0,"errmsg":"ok","msgid":3662956322040938501})";
}

wechat_config wechat_config_for(const test::test_server& server) {
  wechat_config c;
  c.appid = "wx-fake-app";
  c.app_secret = "fake-app-secret";
  c.template_id = "tpl";
  c.body_field = "keyword1";
  c.base_url = server.url("");
  c.timeout = 10s;
  return c;
}

provider_request request(std::size_t n, const std::string& recipient = "o-user-1") {
  provider_request r;
  r.task_id = "task-" + std::to_string(n);
  r.channel = "wechat";
  r.recipient = recipient;
  r.provider_request_id = "hrq_" + std::to_string(n);
  r.body = "body";
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(adapter_shutdown_tests)

// The token fetch never answers: every send of both channels waits on it when the account goes.
BOOST_AUTO_TEST_CASE(sends_waiting_on_a_token_fetch_are_answered_once_when_the_account_goes) {
  test::test_server server{[](const test::recorded_request&) {
    test::reply hold;
    hold.hang = true;
    return hold;
  }};
  auto counters = std::make_shared<metrics>();
  const auto config = wechat_config_for(server);
  answer_counts answers{200};
  {
    auto account = std::make_shared<wechat_account>(config, counters);
    auto first = std::make_unique<wechat_template_provider>("wechat", config, account, counters);
    auto second = std::make_unique<wechat_template_provider>("wechat2", config, account, counters);
    account.reset(); // the channels hold it now
    for (std::size_t n = 0; n < 100; ++n) {
      first->send(request(n), answers.collect(n));
      second->send(request(100 + n), answers.collect(100 + n));
    }
    BOOST_REQUIRE(server.wait_for_requests(1));
    first.reset(); // its sends still wait on the shared fetch
    for (const auto& count : answers.counts)
      BOOST_TEST(count.load() == 0);
    second.reset(); // the account goes with it: its client stops, the fetch ends stopped
  }
  BOOST_TEST(answers.each_once());
  BOOST_TEST(server.requests().size() == 1u); // one token fetch, no send
  for (const auto outcome : answers.outcomes)
    BOOST_TEST((outcome != call_outcome::success && outcome != call_outcome::permanent));
}

// Sends in flight on the shared client when their channel goes: the sibling channel keeps the
// account, the orphaned calls end on their own and are answered once.
BOOST_AUTO_TEST_CASE(a_channel_that_goes_with_sends_in_flight_leaves_its_sibling_working) {
  std::atomic<int> send_number{0};
  test::test_server server{[&](const test::recorded_request& seen) {
    test::reply answer;
    answer.headers = {{"Content-Type", "application/json"}};
    if (seen.target.rfind("/cgi-bin/token", 0) == 0) {
      answer.body = token_answer();
    } else if (seen.body.find("o-slow") != std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1 + send_number++ % 3));
      answer.body = R"({"errcode":40001,"errmsg":"invalid credential"})"; // a token refresh
    } else {
      answer.body = sent_answer();
    }
    return answer;
  }};
  auto counters = std::make_shared<metrics>();
  const auto config = wechat_config_for(server);
  answer_counts answers{300};
  auto account = std::make_shared<wechat_account>(config, counters);
  auto leaving = std::make_unique<wechat_template_provider>("wechat", config, account, counters);
  auto staying = std::make_unique<wechat_template_provider>("wechat2", config, account, counters);
  for (std::size_t n = 0; n < 200; ++n)
    leaving->send(request(n, "o-slow"), answers.collect(n));
  leaving.reset();
  for (std::size_t n = 200; n < 300; ++n)
    staying->send(request(n), answers.collect(n));
  for (int i = 0; i < 400 && !answers.each_once(); ++i)
    std::this_thread::sleep_for(50ms);
  BOOST_TEST(answers.each_once());
  staying.reset();
  account.reset();
  BOOST_TEST(answers.each_once());
}

// The last holder goes while answers arrive: repeated with different timing to catch a race
// between a call completing and the client stopping.
BOOST_AUTO_TEST_CASE(accounts_and_channels_destroyed_while_answers_arrive) {
  test::test_server server{[](const test::recorded_request& seen) {
    test::reply answer;
    answer.headers = {{"Content-Type", "application/json"}};
    answer.body = seen.target.rfind("/cgi-bin/token", 0) == 0 ? token_answer() : sent_answer();
    return answer;
  }};
  auto counters = std::make_shared<metrics>();
  const auto config = wechat_config_for(server);
  for (int round = 0; round < 20; ++round) {
    answer_counts answers{50};
    {
      auto account = std::make_shared<wechat_account>(config, counters);
      wechat_template_provider adapter{"wechat", config, account, counters};
      account.reset();
      for (std::size_t n = 0; n < 50; ++n)
        adapter.send(request(n), answers.collect(n));
      std::this_thread::sleep_for(std::chrono::milliseconds(round % 5));
    }
    BOOST_TEST(answers.each_once());
  }
}

BOOST_AUTO_TEST_CASE(a_twilio_channel_destroyed_with_sends_and_queries_in_flight) {
  test::test_server server{[](const test::recorded_request&) {
    test::reply hold;
    hold.hang = true;
    return hold;
  }};
  twilio_config config;
  config.account_sid = "AC00000000000000000000000000000001";
  config.auth_token = "fake-auth-token";
  config.sender = "+15005550006";
  config.base_url = server.url("");
  answer_counts answers{100};
  {
    twilio_sms_provider adapter{"sms", config, std::make_shared<metrics>()};
    for (std::size_t n = 0; n < 50; ++n) {
      adapter.send(request(n, "+8613800000001"), answers.collect(n));
      provider_status_query query;
      query.task_id = "task-" + std::to_string(n);
      query.provider_message_id = "SM00000000000000000000000000000001";
      adapter.query_status(query, answers.collect_status(50 + n));
    }
    BOOST_REQUIRE(server.wait_for_requests(1));
  }
  BOOST_TEST(answers.each_once());
}

BOOST_AUTO_TEST_SUITE_END()
