// The built herald binary over HTTP (design.md §7, §8): concurrent resubmissions are answered
// with the same ids and sent exactly once, bad input changes nothing, SIGTERM ends cleanly.
// Each scenario is written once and run against SQLite and, when HERALD_TEST_POSTGRES_URL is
// set, against PostgreSQL.

#include "support/herald_process.hpp"
#include "support/herald_server.hpp"
#include "support/http_client.hpp"
#include "support/postgres.hpp"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

struct counters {
  double created = 0;
  double duplicate = 0;
  double provider_success = 0;

  static counters read(running_herald& herald) {
    auto text = herald.metrics();
    return {metric_sum(text, "herald_tasks_created_total"),
            metric_sum(text, "herald_tasks_duplicate_total"),
            metric_sum(text, "herald_provider_calls_total", {"outcome=\"success\""})};
  }
};

/// biz_ids unique to this run, so a PostgreSQL database that outlives runs never has them.
std::string unique_prefix() {
  std::random_device device;
  return "e2e-" + std::to_string(::getpid()) + "-" + std::to_string(device() % 1000000) + "-";
}

std::string event_body(const std::string& biz_id) {
  return json::serialize(three_channel_event(biz_id));
}

/// One answer to one POST, reduced to what the checks compare.
struct answer {
  int status = 0;
  std::string message_id;
  std::vector<std::string> task_ids;
  std::vector<bool> duplicate;
  std::string failure; // set when the answer could not be read
};

answer read_answer(const http_response& response) {
  answer out;
  out.status = response.status;
  try {
    auto body = json::parse(response.body).as_object();
    out.message_id = json::value_to<std::string>(body.at("message_id"));
    for (const auto& task : body.at("tasks").as_array()) {
      out.task_ids.push_back(json::value_to<std::string>(task.at("task_id")));
      out.duplicate.push_back(task.at("duplicate").as_bool());
    }
  } catch (const std::exception& e) {
    out.failure = std::string(e.what()) + " in " + response.body.substr(0, 300);
  }
  return out;
}

/// Polls /metrics (every 50 ms, at most `timeout`) until `done` holds; the last counters.
counters wait_for_counters(running_herald& herald, const std::function<bool(const counters&)>& done,
                           std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto now = counters::read(herald);
  while (!done(now) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    now = counters::read(herald);
  }
  return now;
}

// (a) 200 events, each submitted 5 times concurrently over 16 keep-alive connections.
void concurrent_resubmissions(const std::string& database) {
  constexpr int events = 200;
  constexpr int resubmissions = 5;
  constexpr int clients = 16;
  constexpr int channels = 3;
  running_herald herald(database);
  const auto before = counters::read(herald);
  const auto prefix = unique_prefix();

  // Consecutive jobs are the same event, so its resubmissions race each other.
  std::vector<int> jobs;
  for (int event = 0; event < events; ++event)
    for (int i = 0; i < resubmissions; ++i)
      jobs.push_back(event);
  std::vector<std::vector<answer>> answers(events);
  std::mutex answers_mutex;
  std::atomic<std::size_t> next{0};
  std::vector<std::string> client_errors(clients);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      try {
        http_connection connection(host, herald.port());
        for (auto job = next++; job < jobs.size(); job = next++) {
          int event = jobs[job];
          auto response = connection.request(
              "POST", "/v1/messages", event_body(prefix + std::to_string(event)), json_headers());
          auto reply = read_answer(response);
          std::lock_guard<std::mutex> lock(answers_mutex);
          answers[event].push_back(std::move(reply));
          if (response.closes())
            break;
        }
      } catch (const std::exception& e) {
        client_errors[c] = e.what();
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  for (const auto& error : client_errors)
    BOOST_TEST(error.empty(), "client failed: " << error);

  std::set<std::string> message_ids;
  for (int event = 0; event < events; ++event) {
    BOOST_TEST_CONTEXT("event " << event) {
      const auto& replies = answers[event];
      BOOST_REQUIRE_EQUAL(replies.size(), std::size_t(resubmissions));
      std::vector<int> created(channels, 0);
      for (const auto& reply : replies) {
        BOOST_TEST(reply.failure.empty(), reply.failure);
        BOOST_TEST((reply.status == 200 || reply.status == 202), "status " << reply.status);
        BOOST_TEST(reply.message_id == replies.front().message_id);
        BOOST_TEST(reply.task_ids == replies.front().task_ids, boost::test_tools::per_element());
        BOOST_REQUIRE_EQUAL(reply.duplicate.size(), std::size_t(channels));
        for (int ch = 0; ch < channels; ++ch)
          created[ch] += reply.duplicate[ch] ? 0 : 1;
        // 202 exactly when this answer created something.
        bool any_created = std::count(reply.duplicate.begin(), reply.duplicate.end(), false) > 0;
        BOOST_TEST(reply.status == (any_created ? 202 : 200));
      }
      for (int ch = 0; ch < channels; ++ch)
        BOOST_TEST(created[ch] == 1, "channel " << ch << " created " << created[ch] << " times");
      message_ids.insert(replies.front().message_id);
    }
  }
  BOOST_TEST(message_ids.size() == std::size_t(events));

  const double tasks = events * channels;
  auto after = wait_for_counters(
      herald,
      [&](const counters& c) { return c.provider_success - before.provider_success >= tasks; },
      60s);
  BOOST_TEST(after.created - before.created == tasks);
  BOOST_TEST(after.duplicate - before.duplicate == tasks * (resubmissions - 1));
  BOOST_TEST(after.provider_success - before.provider_success == tasks);

  http_connection connection(host, herald.port());
  // A call is counted when its answer arrives, and its SENT is committed a moment later (a
  // task taken in its claim gets there sooner than its neighbours): a message is read until
  // every task shows SENT, for at most 10 s, and then checked.
  const auto all_sent = [](const http_response& response) {
    if (response.status != 200)
      return false;
    const auto body = json::parse(response.body);
    for (const auto& task : body.at("tasks").as_array())
      if (json::value_to<std::string>(task.at("status")) != "SENT")
        return false;
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (const auto& id : message_ids) {
    auto response = connection.request("GET", "/v1/messages/" + id);
    while (!all_sent(response) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
      response = connection.request("GET", "/v1/messages/" + id);
    }
    BOOST_TEST_CONTEXT("message " << id) {
      BOOST_REQUIRE_EQUAL(response.status, 200);
      auto tasks_json = json::parse(response.body).at("tasks").as_array();
      BOOST_TEST(tasks_json.size() == std::size_t(channels));
      for (const auto& task : tasks_json)
        BOOST_TEST(json::value_to<std::string>(task.at("status")) == "SENT");
      BOOST_TEST(response.body.find("+8613800000000") == std::string::npos); // masked
    }
  }
  // Still exactly one successful call per task once every task is SENT.
  BOOST_TEST(counters::read(herald).provider_success - before.provider_success == tasks);
}

struct bad_input {
  std::string name;
  std::string body;
  header_list headers;
  int status;
  std::string code;
  std::string field;             // empty: not checked
  std::string message_part = {}; // empty: not checked
};

std::string valid_with(const std::string& members) {
  return R"({"biz_type":"ORDER_SHIPPED","user_id":"u-1","content":{"title":"t","body":"b"})" +
         members + "}";
}

// (b) Every kind of refusal: the documented status and error body, and nothing written.
void bad_inputs(const std::string& database) {
  running_herald herald(database);
  const auto prefix = unique_prefix();
  const auto id = R"(,"biz_id":")" + prefix + R"(1")";
  const auto sms = R"(,"channels":["sms"],"to":{"sms":"+8613800000000"})";
  std::string deep = std::string(32, '[') + std::string(32, ']'); // 33 levels with the object
  std::string big_pad(66000, 'a');

  const std::vector<bad_input> cases{
      {"malformed JSON", R"({"biz_type":"ORDER_SHIPPED",)", json_headers(), 400, "invalid_request",
       ""},
      {"wrong type", valid_with(R"(,"biz_id":42)" + std::string(sms)), json_headers(), 400,
       "invalid_request", "biz_id"},
      {"missing biz_id", valid_with(sms), json_headers(), 400, "invalid_request", "biz_id"},
      {"user_id too long",
       R"({"biz_type":"ORDER_SHIPPED","user_id":")" + std::string(129, 'u') + R"(")" + id + sms +
           R"(,"content":{"body":"b"}})",
       json_headers(), 400, "invalid_request", "user_id"},
      {"unknown channel", valid_with(id + R"(,"channels":["fax"],"to":{"fax":"1"})"),
       json_headers(), 422, "unknown_channel", ""},
      {"empty recipient", valid_with(id + R"(,"channels":["sms"],"to":{"sms":""})"), json_headers(),
       422, "missing_recipient", ""},
      {"unknown field", valid_with(id + sms + R"(,"colour":"red")"), json_headers(), 400,
       "invalid_request", "colour"},
      {"body over 64 KiB", valid_with(id + sms + R"(,"params":{"pad":")" + big_pad + R"("})"),
       json_headers(), 413, "payload_too_large", ""},
      {"wrong content type",
       valid_with(id + sms),
       {{"Content-Type", "text/plain"}},
       415,
       "unsupported_media_type",
       ""},
      {"nesting depth 33", valid_with(id + sms + R"(,"x":)" + deep), json_headers(), 400,
       "invalid_request", "", "too deep"},
  };

  const auto before = counters::read(herald);
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      auto response = herald.post(c.body, c.headers);
      BOOST_TEST(response.status == c.status);
      BOOST_TEST(response.header("content-type") == "application/json");
      BOOST_TEST(!response.header("x-trace-id").empty());
      try {
        auto error = json::parse(response.body).at("error").as_object();
        BOOST_TEST(json::value_to<std::string>(error.at("code")) == c.code);
        BOOST_TEST(!json::value_to<std::string>(error.at("message")).empty());
        if (!c.field.empty())
          BOOST_TEST(json::value_to<std::string>(error.at("field")) == c.field);
        if (!c.message_part.empty())
          BOOST_TEST(json::value_to<std::string>(error.at("message")).find(c.message_part) !=
                     std::string::npos);
      } catch (const std::exception& e) {
        BOOST_ERROR("error body unreadable (" << e.what() << "): " << response.body);
      }
    }
  }
  const auto after = counters::read(herald);
  BOOST_TEST(after.created == before.created);
  BOOST_TEST(herald.get("/healthz").status == 200);
}

// (c) SIGTERM drains and exits 0.
void sigterm_exits_cleanly(const std::string& database) {
  running_herald herald(database);
  BOOST_TEST(herald.post(event_body(unique_prefix() + "term")).status == 202);
  herald.process().signal(SIGTERM);
  auto code = herald.process().wait_exit(30s);
  BOOST_REQUIRE_MESSAGE(code.has_value(), "herald still runs 30 s after SIGTERM");
  BOOST_TEST(*code == 0, "exit code " << *code << "; output:\n" << herald.process().log());
}

std::size_t line_count(const std::string& text) {
  std::size_t lines = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    lines += line.empty() ? 0 : 1;
  return lines;
}

} // namespace

BOOST_AUTO_TEST_SUITE(http_api_tests)

BOOST_AUTO_TEST_CASE(concurrent_resubmissions_are_sent_once) {
  concurrent_resubmissions({});
}
BOOST_AUTO_TEST_CASE(bad_inputs_change_nothing) {
  bad_inputs({});
}
BOOST_AUTO_TEST_CASE(sigterm_exits_zero) {
  sigterm_exits_cleanly({});
}

// A request that names neither channels, template, category nor priority gets its route's
// (the embedded configuration routes PASSWORD_RESET as a verification code).
BOOST_AUTO_TEST_CASE(a_route_fills_in_what_the_request_leaves_open) {
  running_herald herald({});
  const auto posted = herald.post(R"({"biz_type":"PASSWORD_RESET","biz_id":")" + unique_prefix() +
                                  R"(pw","user_id":"u-1","params":{"code":"${code} 42"},)"
                                  R"("to":{"sms":"+8613800000000","email":"u-1@example.com"}})");
  BOOST_TEST_REQUIRE(posted.status == 202, posted.body);
  const auto id = read_answer(posted).message_id;
  const auto shown = herald.get("/v1/messages/" + id);
  BOOST_TEST_REQUIRE(shown.status == 200, shown.body);
  const auto message = json::parse(shown.body).as_object();
  BOOST_TEST(json::value_to<std::string>(message.at("category")) == "verification");
  BOOST_TEST(json::value_to<std::string>(message.at("priority")) == "high");
  // The parameter is data: a placeholder inside it stays as given.
  BOOST_TEST(json::value_to<std::string>(message.at("body")) == "Your reset code is ${code} 42.");
  BOOST_TEST(message.at("tasks").as_array().size() == 2u);
}

// Without keys, /v1/stats counts the tenant ?tenant= names, and every tenant without it.
BOOST_AUTO_TEST_CASE(stats_count_the_tenant_the_query_names) {
  running_herald herald({});
  for (const std::string tenant : {"acme", "acme", "default"}) {
    const auto posted =
        herald.post(R"({"tenant":")" + tenant + R"(","biz_type":"T","biz_id":")" + unique_prefix() +
                    R"(","user_id":"u-1",)"
                    R"("channels":["sms"],"to":{"sms":"+8613800000000"},)"
                    R"("content":{"body":"b"}})");
    BOOST_TEST_REQUIRE(posted.status == 202, posted.body);
  }
  auto accepted = [&](const std::string& query) {
    const auto answer = herald.get("/v1/stats" + query);
    BOOST_TEST_REQUIRE(answer.status == 200, answer.body);
    return json::parse(answer.body).at("total").at("accepted").to_number<int>();
  };
  BOOST_TEST(accepted("?tenant=acme") == 2);
  BOOST_TEST(accepted("?tenant=default") == 1);
  BOOST_TEST(accepted("?tenant=nobody") == 0);
  BOOST_TEST(accepted("") == 3);
}

BOOST_AUTO_TEST_CASE(version_exits_zero) {
  auto run = run_herald({"--version"});
  BOOST_TEST(run.exit_code == 0);
  BOOST_TEST(!run.out.empty());
}

BOOST_AUTO_TEST_CASE(bad_listen_address_exits_two) {
  auto run = run_herald({"serve", "--listen", "nonsense"});
  BOOST_TEST(run.exit_code == 2);
  BOOST_TEST(line_count(run.err) == 1u, "stderr: " << run.err);
}

BOOST_AUTO_TEST_CASE(invalid_config_exits_two) {
  temp_dir dir("herald-e2e-config");
  write_file(dir.file("herald.json"), "{ \"http\": { not json");
  auto run = run_herald({"serve", "--config", dir.file("herald.json")});
  BOOST_TEST(run.exit_code == 2);
  BOOST_TEST(line_count(run.err) == 1u, "stderr: " << run.err);
}

BOOST_AUTO_TEST_SUITE_END()

// The same scenarios on PostgreSQL (scripts/with-postgres.sh provides a server).
BOOST_AUTO_TEST_SUITE(http_api_postgres_tests,
                      *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

BOOST_AUTO_TEST_CASE(concurrent_resubmissions_are_sent_once) {
  concurrent_resubmissions(own_test_database());
}
BOOST_AUTO_TEST_CASE(bad_inputs_change_nothing) {
  bad_inputs(own_test_database());
}
BOOST_AUTO_TEST_CASE(sigterm_exits_zero) {
  sigterm_exits_cleanly(own_test_database());
}

BOOST_AUTO_TEST_SUITE_END()
