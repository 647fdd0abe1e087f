#include "providers/http_client.hpp"
#include "tools/h2c_server.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <curl/curl.h>

using namespace herald;
using namespace std::chrono_literals;

namespace {

/// Collects the client's answers; waits for them with a bound.
struct outbound_answers {
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<providers::outbound_answer> answers;

  providers::outbound_callback collect() {
    return [this](providers::outbound_answer answer) {
      std::lock_guard<std::mutex> guard{mutex};
      answers.push_back(std::move(answer));
      arrived.notify_all();
    };
  }
  bool wait_for(std::size_t count) {
    std::unique_lock<std::mutex> lock{mutex};
    return arrived.wait_for(lock, 20s, [&] { return answers.size() >= count; });
  }
};

providers::outbound_call h2c_post(const tools::h2c_server& server, const std::string& path) {
  providers::outbound_call call;
  call.url = server.url(path);
  call.headers = {"Content-Type: application/json", "X-Test: yes"};
  call.body = R"({"n":1})";
  call.timeout = 1000ms;
  call.version = providers::http_version::http2_prior_knowledge;
  return call;
}

} // namespace

BOOST_AUTO_TEST_SUITE(h2c_server_tests)

BOOST_AUTO_TEST_CASE(a_request_is_answered_over_http2_with_the_handlers_headers_and_body) {
  std::mutex mutex;
  std::vector<tools::fake_request> seen;
  tools::h2c_server server{[&](const tools::fake_request& request) {
    std::lock_guard<std::mutex> guard{mutex};
    seen.push_back(request);
    tools::fake_reply reply{201, "application/json", R"({"ok":true})"};
    reply.headers = {{"apns-id", "6e0f5f8c-0000-4000-8000-000000000001"}};
    return reply;
  }};
  providers::http_client client;
  outbound_answers got;
  client.call(h2c_post(server, "/3/device/abc?x=1"), got.collect());
  BOOST_REQUIRE(got.wait_for(1));
  const auto& answer = got.answers[0];
  BOOST_TEST(answer.code == 0);
  BOOST_TEST(answer.status == 201);
  BOOST_TEST(answer.body == R"({"ok":true})");
  BOOST_TEST(answer.header("apns-id").value_or("") == "6e0f5f8c-0000-4000-8000-000000000001");
  std::lock_guard<std::mutex> guard{mutex};
  BOOST_REQUIRE_EQUAL(seen.size(), 1u);
  BOOST_TEST(seen[0].protocol == "HTTP/2");
  BOOST_TEST(seen[0].method == "POST");
  BOOST_TEST(seen[0].target == "/3/device/abc?x=1");
  BOOST_TEST(seen[0].body == R"({"n":1})");
  BOOST_TEST(seen[0].header("x-test") == "yes");
  BOOST_TEST(seen[0].header("content-type") == "application/json");
}

BOOST_AUTO_TEST_CASE(concurrent_requests_are_all_answered) {
  tools::h2c_server server{[](const tools::fake_request& request) {
    return tools::fake_reply{200, "text/plain", request.target};
  }};
  providers::http_client client{providers::http_client_options{8, 8192, "test"}};
  outbound_answers got;
  for (int i = 0; i < 200; ++i)
    client.call(h2c_post(server, "/n/" + std::to_string(i)), got.collect());
  BOOST_REQUIRE(got.wait_for(200));
  std::size_t ok = 0;
  for (const auto& answer : got.answers)
    ok += answer.code == 0 && answer.status == 200 && answer.body.rfind("/n/", 0) == 0 ? 1 : 0;
  BOOST_TEST(ok == 200u);
  // libcurl 8 multiplexes them over the connections it keeps; 7.88 (Debian 12) opens one per
  // call, as it cannot reuse an h2c connection (http_client.cpp).
  BOOST_TEST(server.connections() <= 200u);
}

BOOST_AUTO_TEST_CASE(answers_that_end_badly_fail_the_transfer_after_the_request_arrived) {
  std::mutex mutex;
  std::size_t requests = 0;
  tools::h2c_server server{[&](const tools::fake_request& request) {
    {
      std::lock_guard<std::mutex> guard{mutex};
      ++requests;
    }
    tools::fake_reply reply{400, "application/json", R"({"reason":"BadDeviceToken"})"};
    if (request.target == "/hang")
      reply.hang = true;
    else if (request.target == "/dropped")
      reply.ending = tools::fake_ending::dropped;
    else if (request.target == "/cut")
      reply.ending = tools::fake_ending::cut;
    else if (request.target == "/garbage")
      reply.ending = tools::fake_ending::garbage;
    return reply;
  }};
  providers::http_client client;
  for (const std::string path : {"/hang", "/dropped", "/cut", "/garbage"}) {
    outbound_answers got;
    client.call(h2c_post(server, path), got.collect());
    BOOST_REQUIRE(got.wait_for(1));
    const auto& answer = got.answers[0];
    BOOST_TEST_CONTEXT(path << ": curl " << answer.code << " " << answer.error) {
      BOOST_TEST(answer.code != 0);
      if (path == "/hang")
        BOOST_TEST(answer.code == CURLE_OPERATION_TIMEDOUT);
      // A cut answer's head came, its reason did not; libcurl may not report a head whose
      // stream was reset before it read the body.
      if (path != "/cut")
        BOOST_TEST(answer.status == 0);
      BOOST_TEST(answer.body.find("BadDeviceToken") == std::string::npos);
    }
  }
  // A good answer still comes after all that (the spoiled connection is not reused).
  outbound_answers after;
  client.call(h2c_post(server, "/fine"), after.collect());
  BOOST_REQUIRE(after.wait_for(1));
  BOOST_TEST(after.answers[0].status == 400);
  BOOST_TEST(after.answers[0].body == R"({"reason":"BadDeviceToken"})");
  std::lock_guard<std::mutex> guard{mutex};
  BOOST_TEST(requests == 5u);
}

BOOST_AUTO_TEST_SUITE_END()
