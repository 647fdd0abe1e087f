#include "providers/webhook_provider.hpp"
#include "providers/webhook_signature.hpp"
#include "support/test_http_server.hpp"

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>
#include <curl/curl.h>

using namespace herald;
using namespace herald::providers;
using namespace std::chrono_literals;

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using herald::test::recorded_request;
using herald::test::reply;
using herald::test::test_server;

namespace {

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr std::int64_t fixed_now = 1614265330;
constexpr auto bounded_wait = 10s; // generous: only a broken adapter ever waits this long

/// Collects callbacks; waits for them with a bounded wait.
class answers {
public:
  provider_callback callback(std::string tag) {
    return [this, tag = std::move(tag)](provider_result result) {
      {
        std::lock_guard<std::mutex> guard{mutex_};
        got_.emplace_back(tag, std::move(result));
      }
      changed_.notify_all();
    };
  }

  /// All answers so far, once at least `count` have come (or the bounded wait ran out).
  std::vector<std::pair<std::string, provider_result>> wait(std::size_t count) {
    std::unique_lock<std::mutex> lock{mutex_};
    changed_.wait_for(lock, bounded_wait, [&] { return got_.size() >= count; });
    return got_;
  }

  std::map<std::string, provider_result> by_tag(std::size_t count) {
    std::map<std::string, provider_result> out;
    for (auto& [tag, result] : wait(count)) {
      BOOST_TEST(out.count(tag) == 0u, "answered twice: " << tag);
      out[tag] = result;
    }
    BOOST_REQUIRE_EQUAL(out.size(), count);
    return out;
  }

  std::size_t size() {
    std::lock_guard<std::mutex> guard{mutex_};
    return got_.size();
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::pair<std::string, provider_result>> got_;
};

provider_request make_request(const std::string& id, std::uint32_t attempt = 1) {
  provider_request request;
  request.task_id = "task-" + id;
  request.channel = "webhook";
  request.recipient = "https://example.test/hooks/u-123";
  request.provider_request_id = id;
  request.title = "Order shipped";
  request.body = "Order 20260907-001 is on its way \xe2\x9c\x93 \"quoted\"";
  request.trace_id = "trace-" + id;
  request.attempt = attempt;
  return request;
}

webhook_config config_for(const std::string& url, std::chrono::milliseconds timeout = 2000ms) {
  webhook_config config;
  config.url = url;
  config.secret = secret;
  config.timeout = timeout;
  return config;
}

std::string name(call_outcome outcome) {
  return std::string{to_string(outcome)};
}

std::string imf_fixdate(std::chrono::system_clock::time_point at) {
  const std::time_t t = std::chrono::system_clock::to_time_t(at);
  std::tm parts{};
  gmtime_r(&t, &parts);
  char text[64];
  std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &parts);
  return text;
}

/// A port nothing listens on: bound once, then closed.
unsigned short closed_port() {
  asio::io_context io;
  tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
  const auto port = acceptor.local_endpoint().port();
  acceptor.close();
  return port;
}

} // namespace

BOOST_AUTO_TEST_SUITE(webhook_provider_tests)

BOOST_AUTO_TEST_CASE(posts_signed_json_with_the_same_ids_on_every_attempt) {
  test_server server{[](const recorded_request&) { return reply{}; }};
  answers got;
  webhook_provider provider{config_for(server.url()), [] { return fixed_now; }};

  provider.send(make_request("req-1", 1), got.callback("first"));
  BOOST_REQUIRE_EQUAL(got.wait(1).size(), 1u);
  provider.send(make_request("req-1", 2), got.callback("second"));
  auto results = got.by_tag(2);
  for (const auto& [tag, result] : results) {
    BOOST_TEST(name(result.outcome) == "success", tag);
    BOOST_TEST(result.detail == "req-1");
    BOOST_TEST(!result.retry_after.has_value());
  }

  const auto requests = server.requests();
  BOOST_REQUIRE_EQUAL(requests.size(), 2u);
  const auto key = *decode_webhook_secret(secret);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& seen = requests[i];
    BOOST_TEST(seen.method == "POST");
    BOOST_TEST(seen.target == "/hook");
    BOOST_TEST(seen.header("content-type") == "application/json");
    BOOST_TEST(seen.header("webhook-id") == "req-1");
    BOOST_TEST(seen.header("idempotency-key") == "req-1");
    BOOST_TEST(seen.header("webhook-timestamp") == std::to_string(fixed_now));
    BOOST_TEST(seen.header("x-herald-attempt") == std::to_string(i + 1));
    BOOST_TEST(seen.header("webhook-signature") ==
               sign_webhook(key, "req-1", fixed_now, seen.body));
    BOOST_TEST(seen.header("expect").empty());

    const auto body = json::parse(seen.body).as_object();
    BOOST_TEST(body.at("type").as_string() == "herald.message");
    BOOST_TEST(body.at("timestamp").as_string() == "2021-02-25T15:02:10.000000Z");
    const auto& data = body.at("data").as_object();
    BOOST_TEST(data.at("task_id").as_string() == "task-req-1");
    BOOST_TEST(data.at("channel").as_string() == "webhook");
    BOOST_TEST(data.at("recipient").as_string() == "https://example.test/hooks/u-123");
    BOOST_TEST(data.at("title").as_string() == "Order shipped");
    BOOST_TEST(data.at("body").as_string() == make_request("x").body);
    BOOST_TEST(data.at("trace_id").as_string() == "trace-req-1");
    BOOST_TEST(data.at("attempt").to_number<std::int64_t>() == static_cast<std::int64_t>(i + 1));
  }
  // The second attempt reused the first one's connection.
  BOOST_TEST(requests[0].connection == requests[1].connection);
  BOOST_TEST(server.connections() == 1u);
}

BOOST_AUTO_TEST_CASE(http_answers_are_classified) {
  const auto in_a_minute = imf_fixdate(std::chrono::system_clock::now() + 60s);
  test_server server{[&](const recorded_request& seen) {
    const auto id = seen.header("webhook-id");
    reply answer;
    if (id == "ok-204")
      answer.status = 204, answer.body.clear();
    else if (id == "busy-503")
      answer.status = 503, answer.headers = {{"Retry-After", "7"}};
    else if (id == "busy-503-date")
      answer.status = 503, answer.headers = {{"Retry-After", in_a_minute}};
    else if (id == "slow-down-429")
      answer.status = 429, answer.headers = {{"Retry-After", "3"}};
    else if (id == "gone-410")
      answer.status = 410;
    else if (id == "missing-404")
      answer.status = 404, answer.body = "no such hook";
    else if (id == "moved-302")
      answer.status = 302, answer.headers = {{"Location", "/elsewhere"}};
    return answer;
  }};
  answers got;
  webhook_provider provider{config_for(server.url())};
  const std::vector<std::string> ids = {"ok-204",   "busy-503",    "busy-503-date", "slow-down-429",
                                        "gone-410", "missing-404", "moved-302"};
  for (const auto& id : ids)
    provider.send(make_request(id), got.callback(id));
  auto results = got.by_tag(ids.size());

  BOOST_TEST(name(results["ok-204"].outcome) == "success");

  BOOST_TEST(name(results["busy-503"].outcome) == "retryable");
  BOOST_REQUIRE(results["busy-503"].retry_after.has_value());
  BOOST_TEST(results["busy-503"].retry_after->count() == 7000);

  BOOST_TEST(name(results["busy-503-date"].outcome) == "retryable");
  BOOST_REQUIRE(results["busy-503-date"].retry_after.has_value());
  BOOST_TEST(results["busy-503-date"].retry_after->count() > 50000);
  BOOST_TEST(results["busy-503-date"].retry_after->count() <= 61000);

  BOOST_TEST(name(results["slow-down-429"].outcome) == "throttled");
  BOOST_REQUIRE(results["slow-down-429"].retry_after.has_value());
  BOOST_TEST(results["slow-down-429"].retry_after->count() == 3000);

  BOOST_TEST(name(results["gone-410"].outcome) == "permanent");
  BOOST_TEST(results["gone-410"].detail == "endpoint gone (410): disabled");

  BOOST_TEST(name(results["missing-404"].outcome) == "permanent");
  BOOST_TEST(results["missing-404"].detail == "endpoint refused (404): no such hook");

  BOOST_TEST(name(results["moved-302"].outcome) == "permanent");

  // Exactly one request per call: the redirect was not followed.
  const auto requests = server.requests();
  BOOST_TEST(requests.size() == ids.size());
  for (const auto& seen : requests)
    BOOST_TEST(seen.target == "/hook");
}

BOOST_AUTO_TEST_CASE(a_silent_endpoint_times_out_after_the_configured_timeout) {
  test_server server{[](const recorded_request&) {
    reply answer;
    answer.hang = true;
    return answer;
  }};
  answers got;
  webhook_provider provider{config_for(server.url(), 300ms)};
  const auto started = std::chrono::steady_clock::now();
  provider.send(make_request("silent"), got.callback("silent"));
  auto results = got.by_tag(1);
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - started)
                           .count();
  BOOST_TEST(name(results["silent"].outcome) == "timeout");
  BOOST_TEST(elapsed >= 290);
  BOOST_TEST(elapsed < 3000);
  BOOST_TEST(server.requests().size() == 1u); // it did arrive: the outcome is unknown
}

BOOST_AUTO_TEST_CASE(answers_that_break_off_or_are_no_http_are_outcome_unknown) {
  test_server server{[](const recorded_request& seen) {
    reply answer;
    answer.status = 503; // what decides the class is lost with the answer
    answer.body = R"({"error":"busy"})";
    if (seen.body.find("garbage") != std::string::npos)
      answer.end = reply::ending::garbage; // curl takes it for HTTP/0.9
    else if (seen.body.find("dropped") != std::string::npos)
      answer.end = reply::ending::dropped;
    return answer;
  }};
  answers got;
  webhook_provider provider{config_for(server.url(), 2000ms)};
  provider.send(make_request("garbage"), got.callback("garbage"));
  provider.send(make_request("dropped"), got.callback("dropped"));
  auto results = got.by_tag(2);
  for (const auto* tag : {"garbage", "dropped"}) {
    BOOST_TEST(name(results[tag].outcome) == "timeout", tag << ": " << results[tag].detail);
    BOOST_TEST(results[tag].detail.find("outcome unknown") != std::string::npos,
               results[tag].detail);
  }
}

BOOST_AUTO_TEST_CASE(a_refused_connection_is_retryable) {
  answers got;
  webhook_provider provider{
      config_for("http://127.0.0.1:" + std::to_string(closed_port()) + "/hook", 300ms)};
  provider.send(make_request("refused"), got.callback("refused"));
  auto results = got.by_tag(1);
  BOOST_TEST(name(results["refused"].outcome) == "retryable");
  BOOST_TEST(results["refused"].detail.find("not delivered") == 0u, results["refused"].detail);
}

BOOST_AUTO_TEST_CASE(stopping_answers_every_pending_call) {
  test_server server{[](const recorded_request&) {
    reply answer;
    answer.hang = true;
    return answer;
  }};
  answers got;
  {
    webhook_provider provider{config_for(server.url(), 60000ms)};
    for (const auto* id : {"a", "b", "c"})
      provider.send(make_request(id), got.callback(id));
    BOOST_REQUIRE(server.wait_for_requests(3));
    BOOST_TEST(got.size() == 0u);
  } // destroyed with three calls in flight
  auto results = got.by_tag(3);
  for (const auto& [id, result] : results) {
    BOOST_TEST(name(result.outcome) == "timeout", id);
    BOOST_TEST(result.detail == "adapter stopped");
  }
}

BOOST_AUTO_TEST_CASE(many_concurrent_calls_share_a_bounded_set_of_connections) {
  test_server server{[](const recorded_request&) { return reply{}; }};
  answers got;
  auto config = config_for(server.url());
  config.max_connections = 4;
  webhook_provider provider{config};
  constexpr std::size_t calls = 60;
  // From several threads at once, as channel actors on different workers would.
  std::vector<std::thread> senders;
  for (std::size_t t = 0; t < 3; ++t)
    senders.emplace_back([&, t] {
      for (std::size_t i = t; i < calls; i += 3) {
        const auto id = "m-" + std::to_string(i);
        provider.send(make_request(id), got.callback(id));
      }
    });
  for (auto& sender : senders)
    sender.join();
  auto results = got.by_tag(calls);
  for (const auto& [id, result] : results)
    BOOST_TEST(name(result.outcome) == "success", id);
  std::set<std::string> ids;
  for (const auto& seen : server.requests())
    ids.insert(seen.header("webhook-id"));
  BOOST_TEST(ids.size() == calls);
  BOOST_TEST(server.requests().size() == calls);
  BOOST_TEST(server.connections() <= 4u);
}

BOOST_AUTO_TEST_CASE(a_callback_may_send_again) {
  test_server server{[](const recorded_request&) { return reply{}; }};
  answers got;
  webhook_provider provider{config_for(server.url())};
  provider.send(make_request("one"), [&](provider_result result) {
    got.callback("one")(std::move(result));
    provider.send(make_request("two"), got.callback("two"));
  });
  auto results = got.by_tag(2);
  BOOST_TEST(name(results["two"].outcome) == "success");
}

BOOST_AUTO_TEST_CASE(config_validation) {
  BOOST_TEST(config_for("http://127.0.0.1:8080/hook").validate() == "");
  BOOST_TEST(config_for("https://hooks.example.com/herald?x=1").validate() == "");
  BOOST_TEST(config_for("HTTPS://hooks.example.com/").validate() == "");
  for (const char* bad_url : {"", "ftp://example.com/", "example.com/hook", "http://", "https:///x",
                              "file:///etc/passwd", "http://exa mple.com/"})
    BOOST_TEST(config_for(bad_url).validate() != "", "accepted url '" << bad_url << "'");
  auto config = config_for("http://127.0.0.1/");
  config.secret = "not-a-secret";
  BOOST_TEST(config.validate().find("secret") != std::string::npos);
  config = config_for("http://127.0.0.1/", 0ms);
  BOOST_TEST(config.validate() != "");
  config = config_for("http://127.0.0.1/");
  config.max_connections = 0;
  BOOST_TEST(config.validate() != "");
  BOOST_CHECK_THROW(webhook_provider{config}, std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(url_credentials_are_never_echoed) {
  // Invalid URLs are quoted in config errors, and those reach stderr and logs.
  for (const char* bad_url : {"https://alice:hunter2@exa mple.com/?token=s3cr3t",
                              "https://alice:hunter2@/hook?token=s3cr3t"}) {
    const auto problem = config_for(bad_url).validate();
    BOOST_TEST(problem != "");
    BOOST_TEST(problem.find("hunter2") == std::string::npos, problem);
    BOOST_TEST(problem.find("s3cr3t") == std::string::npos, problem);
  }
  // A transport failure's detail does not carry them either.
  answers got;
  webhook_provider provider{config_for(
      "http://alice:hunter2@127.0.0.1:" + std::to_string(closed_port()) + "/hook?token=s3cr3t",
      300ms)};
  provider.send(make_request("refused"), got.callback("refused"));
  const auto detail = got.by_tag(1)["refused"].detail;
  BOOST_TEST(detail.find("hunter2") == std::string::npos, detail);
  BOOST_TEST(detail.find("s3cr3t") == std::string::npos, detail);
}

BOOST_AUTO_TEST_CASE(answers_are_masked_before_they_are_cut) {
  // Keys masked to "***" shrink the text, so what stood at the end of the kept 8 KiB shows in
  // the detail: a number cut there ("+86138") must not, nor the start of a key at the
  // detail's own cut (too short there to look like a key).
  const std::size_t number_at = max_kept_answer - 6; // "+86138" kept, the rest cut
  std::string keys;
  while (keys.size() + 400 < number_at)
    keys += "sk_live_" + std::string(391, 'k') + " ";
  keys += "sk_live_" + std::string(number_at - keys.size() - 9, 'k') + " ";
  const std::string cut_number = keys + "+8613812345678 and more";
  const std::string long_text = std::string(185, 'a') + " Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdo";
  test_server server{[&](const recorded_request& seen) {
    return reply{400, {}, seen.header("webhook-id") == "cut-number" ? cut_number : long_text};
  }};
  answers got;
  webhook_provider provider{config_for(server.url())};
  provider.send(make_request("cut-number"), got.callback("cut-number"));
  provider.send(make_request("long-text"), got.callback("long-text"));
  auto results = got.by_tag(2);
  const auto& number = results["cut-number"].detail;
  BOOST_TEST(number.find("***") != std::string::npos, number); // the keys were masked
  BOOST_TEST(number.find("86138") == std::string::npos, number);
  const auto& key = results["long-text"].detail;
  BOOST_TEST(key.find("Zm9v") == std::string::npos, key);
}

BOOST_AUTO_TEST_CASE(payload_shape) {
  auto request = make_request("p-1", 3);
  request.body = "line\nbreak";
  BOOST_TEST(
      webhook_payload(request, fixed_now) ==
      R"({"type":"herald.message","timestamp":"2021-02-25T15:02:10.000000Z","data":{)"
      R"("task_id":"task-p-1","channel":"webhook","recipient":"https://example.test/hooks/u-123",)"
      R"("title":"Order shipped","body":"line\nbreak","trace_id":"trace-p-1","attempt":3}})");
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

/// Collects status answers by tag; waits for them with a bounded wait.
class status_answers {
public:
  status_callback callback(std::string tag) {
    return [this, tag = std::move(tag)](status_answer answer) {
      {
        std::lock_guard<std::mutex> guard{mutex_};
        BOOST_TEST(got_.count(tag) == 0u, "answered twice: " << tag);
        got_[tag] = std::move(answer);
      }
      changed_.notify_all();
    };
  }

  std::map<std::string, status_answer> wait(std::size_t count) {
    std::unique_lock<std::mutex> lock{mutex_};
    changed_.wait_for(lock, bounded_wait, [&] { return got_.size() >= count; });
    BOOST_REQUIRE_EQUAL(got_.size(), count);
    return got_;
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, status_answer> got_;
};

provider_status_query status_query(const std::string& provider_request_id) {
  return {"task-" + provider_request_id,
          "webhook",
          provider_request_id,
          "trace-" + provider_request_id,
          {}};
}

webhook_config asking_config(const std::string& status_url,
                             std::chrono::milliseconds timeout = 2000ms) {
  auto config = config_for("http://127.0.0.1:1/hook", timeout); // sends are not used here
  config.status_url = status_url;
  return config;
}

std::string kind_of(const status_answer& answer) {
  return std::string{to_string(answer.result)};
}

} // namespace

BOOST_AUTO_TEST_SUITE(webhook_status_query_tests)

BOOST_AUTO_TEST_CASE(asks_get_status_url_slash_escaped_id_and_reads_the_answer) {
  const std::map<std::string, reply> script = {
      {"/status/hrq_delivered", {200, {}, R"({"status":"delivered","message_id":"pm-7"})"}},
      {"/status/hrq_accepted", {200, {}, R"({"status":"accepted"})"}},
      {"/status/hrq%20a%2Fb%3Fc", {200, {}, R"({"status":"undelivered"})"}},
      {"/status/hrq_never", {404, {}, R"({"error":"not_found"})"}},
      {"/status/hrq_broken", {500, {}, "oops"}},
      {"/status/hrq_garbled", {200, {}, "not json"}},
      {"/status/hrq_strange", {200, {}, R"({"status":"lost in space"})"}},
  };
  test_server server{[&](const recorded_request& seen) {
    auto found = script.find(seen.target);
    return found != script.end() ? found->second : reply{418, {}, "unexpected"};
  }};
  webhook_provider provider{asking_config(server.url("/status/"))}; // a trailing '/' is fine
  BOOST_TEST(provider.can_query_status());
  status_answers got;
  for (const auto* id : {"hrq_delivered", "hrq_accepted", "hrq a/b?c", "hrq_never", "hrq_broken",
                         "hrq_garbled", "hrq_strange"})
    provider.query_status(status_query(id), got.callback(id));
  auto answers = got.wait(7);

  BOOST_TEST(kind_of(answers["hrq_delivered"]) == "found");
  BOOST_TEST(to_string(answers["hrq_delivered"].status) == "delivered");
  BOOST_TEST(answers["hrq_delivered"].message_id == "pm-7");
  BOOST_TEST(kind_of(answers["hrq_accepted"]) == "found");
  BOOST_TEST(to_string(answers["hrq_accepted"].status) == "accepted");
  BOOST_TEST(answers["hrq_accepted"].message_id == "");
  BOOST_TEST(kind_of(answers["hrq a/b?c"]) == "found");
  BOOST_TEST(to_string(answers["hrq a/b?c"].status) == "undelivered");
  BOOST_TEST(kind_of(answers["hrq_never"]) == "not_found");
  for (const auto* id : {"hrq_broken", "hrq_garbled", "hrq_strange"})
    BOOST_TEST(kind_of(answers[id]) == "unknown", id << ": " << answers[id].detail);
  BOOST_TEST(answers["hrq_broken"].detail.find("500") != std::string::npos);

  for (const auto& seen : server.requests()) {
    BOOST_TEST(seen.method == "GET");
    BOOST_TEST(seen.body.empty());
  }
  BOOST_TEST(server.requests().size() == 7u);
}

BOOST_AUTO_TEST_CASE(a_silent_or_refusing_status_api_is_unknown) {
  test_server silent{[](const recorded_request&) {
    reply answer;
    answer.hang = true;
    return answer;
  }};
  webhook_provider slow{asking_config(silent.url("/status"), 300ms)};
  webhook_provider closed{
      asking_config("http://127.0.0.1:" + std::to_string(closed_port()) + "/status", 300ms)};
  status_answers got;
  const auto started = std::chrono::steady_clock::now();
  slow.query_status(status_query("hrq_1"), got.callback("silent"));
  closed.query_status(status_query("hrq_1"), got.callback("refused"));
  auto answers = got.wait(2);
  BOOST_TEST(kind_of(answers["silent"]) == "unknown");
  BOOST_TEST(kind_of(answers["refused"]) == "unknown");
  BOOST_TEST((std::chrono::steady_clock::now() - started < 5s));
  BOOST_TEST(silent.requests().size() == 1u);
}

BOOST_AUTO_TEST_CASE(without_a_status_url_the_provider_cannot_be_asked) {
  test_server server{[](const recorded_request&) { return reply{}; }};
  webhook_provider provider{config_for(server.url())};
  BOOST_TEST(!provider.can_query_status());
  status_answers got;
  provider.query_status(status_query("hrq_1"), got.callback("inline"));
  BOOST_TEST(kind_of(got.wait(1)["inline"]) == "unknown");
  BOOST_TEST(server.requests().empty());
}

BOOST_AUTO_TEST_CASE(stopping_answers_every_pending_query) {
  test_server server{[](const recorded_request&) {
    reply answer;
    answer.hang = true;
    return answer;
  }};
  status_answers got;
  {
    webhook_provider provider{asking_config(server.url("/status"), 60000ms)};
    provider.query_status(status_query("hrq_1"), got.callback("a"));
    provider.query_status(status_query("hrq_2"), got.callback("b"));
    BOOST_REQUIRE(server.wait_for_requests(2));
  }
  for (const auto& [tag, answer] : got.wait(2))
    BOOST_TEST(kind_of(answer) == "unknown", tag);
}

BOOST_AUTO_TEST_CASE(status_answers_are_classified) {
  const auto found = classify_status_answer(CURLE_OK, 200, R"({"status":"read"})", "");
  BOOST_TEST(kind_of(found) == "found");
  BOOST_TEST(to_string(found.status) == "read");
  BOOST_TEST(kind_of(classify_status_answer(CURLE_OK, 204, "", "")) == "unknown");
  BOOST_TEST(kind_of(classify_status_answer(CURLE_OK, 404, "", "")) == "not_found");
  BOOST_TEST(kind_of(classify_status_answer(CURLE_OK, 410, "", "")) == "unknown");
  BOOST_TEST(kind_of(classify_status_answer(CURLE_OK, 302, "", "")) == "unknown");
  BOOST_TEST(kind_of(classify_status_answer(CURLE_OPERATION_TIMEDOUT, 0, "", "")) == "unknown");
  // A 404 seen before the connection broke is still the provider's word.
  BOOST_TEST(kind_of(classify_status_answer(CURLE_RECV_ERROR, 404, "", "")) == "not_found");
  BOOST_TEST(kind_of(classify_status_answer(CURLE_RECV_ERROR, 200, R"({"status":"sent"})", "")) ==
             "unknown");
  BOOST_TEST(escape_path_segment("hrq_Az09-._~") == "hrq_Az09-._~");
  BOOST_TEST(escape_path_segment("a b/%\xc3\xa9") == "a%20b%2F%25%C3%A9");
  for (const auto* status : {"accepted", "sent", "delivered", "read", "clicked", "undelivered"})
    BOOST_TEST(to_string(*parse_provider_status(status)) == status);
  BOOST_TEST(!receipt_of(provider_status::accepted).has_value());
  BOOST_TEST(!receipt_of(provider_status::sent).has_value());
  BOOST_TEST(domain::to_string(*receipt_of(provider_status::clicked)) == "clicked");
}

BOOST_AUTO_TEST_SUITE_END()
