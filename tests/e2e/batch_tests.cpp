// POST /v1/messages/batch against the built binary (docs/api.md): one result per item in order,
// duplicates within and across batches, a refused item among accepted ones, every accepted
// task sent once; hostile bodies get a clear 4xx and write nothing. Run against SQLite and,
// when HERALD_TEST_POSTGRES_URL is set, against PostgreSQL.

#include "support/herald_process.hpp"
#include "support/herald_server.hpp"
#include "support/http_client.hpp"
#include "support/postgres.hpp"

#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

const std::string batch_target = "/v1/messages/batch";

std::string unique_prefix() {
  std::random_device device;
  return "batch-" + std::to_string(::getpid()) + "-" + std::to_string(device() % 1000000) + "-";
}

json::object event(const std::string& biz_id) {
  return three_channel_event(biz_id);
}

std::string batch_of(const json::array& items) {
  return json::serialize(json::object{{"messages", items}});
}

json::array results_of(const http_response& response) {
  BOOST_REQUIRE_EQUAL(response.status, 200);
  BOOST_REQUIRE_EQUAL(response.header("content-type"), "application/json");
  return json::parse(response.body).as_object().at("results").as_array();
}

double created_tasks(running_herald& herald) {
  return metric_sum(herald.metrics(), "herald_tasks_created_total");
}

void a_batch_is_answered_per_item_and_sent_once(const std::string& database) {
  constexpr std::size_t events = 300;
  running_herald herald(database);
  const auto prefix = unique_prefix();
  const auto before = herald.metrics();
  json::array items;
  for (std::size_t i = 0; i < events; ++i)
    items.push_back(event(prefix + std::to_string(i)));
  items.push_back(event(prefix + "0")); // 300: a duplicate of item 0
  auto bad = event(prefix + "bad");
  bad["channels"] = json::array{"fax"}; // 301: refused, 422
  items.push_back(bad);
  items.push_back("not an event"); // 302: refused, 400
  auto response =
      request(host, herald.port(), "POST", batch_target, batch_of(items), json_headers());
  auto results = results_of(response);
  BOOST_REQUIRE_EQUAL(results.size(), events + 3);
  std::vector<std::string> message_ids;
  for (std::size_t i = 0; i < events; ++i) {
    BOOST_TEST_CONTEXT("item " << i) {
      const auto& result = results[i].as_object();
      BOOST_TEST(result.at("status").as_int64() == 202);
      BOOST_TEST(json::value_to<std::string>(result.at("trace_id")) ==
                 response.header("x-trace-id"));
      const auto& tasks = result.at("tasks").as_array();
      BOOST_REQUIRE_EQUAL(tasks.size(), 3u);
      for (const auto& task : tasks)
        BOOST_TEST(!task.at("duplicate").as_bool());
      message_ids.push_back(json::value_to<std::string>(result.at("message_id")));
    }
  }
  BOOST_TEST(results[events].at("status").as_int64() == 200);
  BOOST_TEST(results[events].at("message_id") == results[0].at("message_id"));
  BOOST_TEST(results[events].at("tasks").at(0).at("duplicate").as_bool());
  BOOST_TEST(results[events + 1].at("status").as_int64() == 422);
  BOOST_TEST(json::value_to<std::string>(results[events + 1].at("error").at("code")) ==
             "unknown_channel");
  BOOST_TEST(results[events + 2].at("status").as_int64() == 400);
  BOOST_TEST(json::value_to<std::string>(results[events + 2].at("error").at("field")) ==
             "messages[302]");

  // Every accepted task is sent exactly once; the refused items wrote nothing.
  const double tasks = events * 3;
  const auto success_before =
      metric_sum(before, "herald_provider_calls_total", {"outcome=\"success\""});
  auto after = herald.wait_for_metrics(
      [&](const std::string& text) {
        return metric_sum(text, "herald_provider_calls_total", {"outcome=\"success\""}) -
                   success_before >=
               tasks;
      },
      60s);
  BOOST_TEST(metric_sum(after, "herald_tasks_created_total") -
                 metric_sum(before, "herald_tasks_created_total") ==
             tasks);
  BOOST_TEST(metric_sum(after, "herald_messages_received_total") -
                 metric_sum(before, "herald_messages_received_total") ==
             events + 1);
  BOOST_TEST(metric_sum(after, "herald_provider_calls_total", {"outcome=\"success\""}) -
                 success_before ==
             tasks);
  auto first = herald.get("/v1/messages/" + message_ids[0]);
  BOOST_TEST(first.status == 200);

  // The same batch again: the same ids, every item a duplicate, nothing created.
  auto again = results_of(
      request(host, herald.port(), "POST", batch_target, batch_of(items), json_headers()));
  for (std::size_t i = 0; i < events; ++i) {
    BOOST_TEST(again[i].at("status").as_int64() == 200);
    BOOST_TEST(json::value_to<std::string>(again[i].at("message_id")) == message_ids[i]);
  }
  BOOST_TEST(created_tasks(herald) - metric_sum(before, "herald_tasks_created_total") == tasks);
}

void hostile_batches_write_nothing(const std::string& database) {
  running_herald herald(database);
  const auto prefix = unique_prefix();
  const auto before = created_tasks(herald);
  json::array too_many;
  for (int i = 0; i < 1001; ++i)
    too_many.push_back(event(prefix + std::to_string(i)));
  struct refusal {
    std::string name;
    std::string body;
    header_list headers;
    int status;
    std::string code;
    std::string field;
  };
  const std::vector<refusal> cases{
      {"1001 items", batch_of(too_many), json_headers(), 400, "invalid_request", "messages"},
      {"no items", R"({"messages":[]})", json_headers(), 400, "invalid_request", "messages"},
      {"messages not an array", R"({"messages":{"a":1}})", json_headers(), 400, "invalid_request",
       "messages"},
      {"messages missing", R"({"events":[]})", json_headers(), 400, "invalid_request", "events"},
      {"not JSON", R"({"messages":[)", json_headers(), 400, "invalid_request", ""},
      {"wrong content type",
       batch_of({event(prefix + "ct")}),
       {{"Content-Type", "text/plain"}},
       415,
       "unsupported_media_type",
       ""},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      auto response = request(host, herald.port(), "POST", batch_target, c.body, c.headers);
      BOOST_TEST(response.status == c.status);
      BOOST_TEST(!response.header("x-trace-id").empty());
      auto error = json::parse(response.body).at("error").as_object();
      BOOST_TEST(json::value_to<std::string>(error.at("code")) == c.code);
      if (!c.field.empty())
        BOOST_TEST(json::value_to<std::string>(error.at("field")) == c.field);
    }
  }
  // A body over the batch limit (4 MiB) is refused from its Content-Length alone.
  http_connection connection(host, herald.port());
  auto huge = connection.raw("POST " + batch_target +
                             " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             "Content-Length: 4194305\r\n\r\n");
  BOOST_TEST(huge.status == 413);
  BOOST_TEST(huge.body.find("4194304") != std::string::npos, huge.body);
  // Items that are no events are refused one by one; the request itself is handled.
  auto items = results_of(request(host, herald.port(), "POST", batch_target,
                                  R"({"messages":[1,"x",null,[],{"biz_id":{}}]})", json_headers()));
  BOOST_REQUIRE_EQUAL(items.size(), 5u);
  for (std::size_t i = 0; i < items.size(); ++i) {
    BOOST_TEST(items[i].at("status").as_int64() == 400);
    BOOST_TEST(json::value_to<std::string>(items[i].at("error").at("field"))
                   .rfind("messages[" + std::to_string(i) + "]", 0) == 0u);
  }
  BOOST_TEST(created_tasks(herald) == before);
  BOOST_TEST(metric_sum(herald.metrics(), "herald_messages_received_total") == 0);
  BOOST_TEST(herald.get("/healthz").status == 200);
}

} // namespace

BOOST_AUTO_TEST_SUITE(batch_api_tests)

BOOST_AUTO_TEST_CASE(a_batch_is_answered_per_item_and_each_task_sent_once) {
  a_batch_is_answered_per_item_and_sent_once({});
}
BOOST_AUTO_TEST_CASE(hostile_batches_get_a_4xx_and_write_nothing) {
  hostile_batches_write_nothing({});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(batch_api_postgres_tests,
                      *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

BOOST_AUTO_TEST_CASE(a_batch_is_answered_per_item_and_each_task_sent_once) {
  a_batch_is_answered_per_item_and_sent_once(own_test_database());
}
BOOST_AUTO_TEST_CASE(hostile_batches_get_a_4xx_and_write_nothing) {
  hostile_batches_write_nothing(own_test_database());
}

BOOST_AUTO_TEST_SUITE_END()
