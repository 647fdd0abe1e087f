// The built herald's routes for operators (docs/api.md, docs/console.md): the OpenAPI document
// and the console's files come out of the binary as they were built, under a policy that lets
// no page run foreign script; GET /v1/channels adds up to the provider calls /metrics counts;
// a message is found by its business key as by its id.

#include "support/herald_server.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;

namespace {

std::string source_file(const std::string& relative) {
  auto path = std::filesystem::path(HERALD_SOURCE_DIR) / relative;
  std::ifstream in(path, std::ios::binary);
  BOOST_REQUIRE_MESSAGE(in, "cannot read " << path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string error_code(const http_response& response) {
  return std::string(json::parse(response.body).at("error").at("code").as_string());
}

std::string submit_event(running_herald& herald, const std::string& biz_id) {
  auto answer = herald.post(json::serialize(three_channel_event(biz_id)));
  BOOST_REQUIRE_MESSAGE(answer.status == 202, answer.body);
  return std::string(json::parse(answer.body).at("message_id").as_string());
}

} // namespace

BOOST_AUTO_TEST_SUITE(operator_routes_tests)

BOOST_AUTO_TEST_CASE(the_openapi_document_is_the_one_in_docs) {
  running_herald herald("");
  auto response = herald.get("/v1/openapi.yaml");
  BOOST_TEST(response.status == 200);
  BOOST_TEST(response.header("content-type") == "application/yaml");
  BOOST_TEST(response.body == source_file("docs/openapi.yaml"));
}

BOOST_AUTO_TEST_CASE(the_console_is_served_under_its_security_policy) {
  running_herald herald("");
  auto page = herald.get("/console");
  BOOST_TEST(page.status == 200);
  BOOST_TEST(page.header("content-type") == "text/html; charset=utf-8");
  BOOST_TEST(page.body == source_file("src/console/index.html"));
  BOOST_TEST(page.header("content-security-policy").find("script-src 'self'") != std::string::npos);
  BOOST_TEST(page.header("x-content-type-options") == "nosniff");

  auto script = herald.get("/console/console.js");
  BOOST_TEST(script.status == 200);
  BOOST_TEST(script.header("content-type") == "text/javascript; charset=utf-8");
  BOOST_TEST(script.body == source_file("src/console/console.js"));

  for (const auto* missing :
       {"/console/nothing.js", "/console/../docs/openapi.yaml", "/console/console.js/x"}) {
    auto response = herald.get(missing);
    BOOST_TEST(response.status == 404, missing);
    BOOST_TEST(error_code(response) == "not_found", missing);
  }
  auto post = herald.post_to("/console", "{}");
  BOOST_TEST(post.status == 405);
  BOOST_TEST(post.header("allow") == "GET");
}

BOOST_AUTO_TEST_CASE(channels_count_what_the_metrics_count) {
  running_herald herald("");
  auto message_id = submit_event(herald, "channels-1");
  wait_for_status(herald, message_id, "SENT");
  herald.wait_for_metrics([](const std::string& text) {
    return metric_sum(text, "herald_provider_calls_total", {"outcome=\"success\""}) >= 3;
  });

  auto response = herald.get("/v1/channels");
  BOOST_REQUIRE(response.status == 200);
  auto body = json::parse(response.body).as_object();
  BOOST_TEST(!body.at("retry_queue_depth").is_double()); // a count, not "0E0"
  BOOST_TEST(body.at("retry_queue_depth").to_number<int>() == 0);
  const auto metrics = herald.metrics();
  std::set<std::string> names;
  for (const auto& entry : body.at("channels").as_array()) {
    const auto& channel = entry.as_object();
    const std::string name(channel.at("channel").as_string());
    names.insert(name);
    BOOST_TEST(channel.at("circuit").as_string() == "closed", name);
    for (const auto& [outcome, count] : channel.at("provider_calls").as_object())
      BOOST_TEST(
          count.to_number<double>() ==
              metric_sum(metrics, "herald_provider_calls_total",
                         {"channel=\"" + name + "\"", "outcome=\"" + std::string(outcome) + "\""}),
          name << " " << outcome);
  }
  // Every channel of the embedded default is listed, called or not.
  BOOST_TEST((names == std::set<std::string>{"app", "email", "inapp", "sms", "wechat"}));
}

BOOST_AUTO_TEST_CASE(a_message_is_found_by_its_business_key) {
  running_herald herald("");
  auto message_id = submit_event(herald, "order 7/1");
  auto found = herald.get(
      "/v1/messages?biz_type=ORDER_SHIPPED&biz_id=order%207%2F1&user_id=u-order%207%2F1");
  BOOST_TEST(found.status == 200);
  BOOST_TEST(json::parse(found.body).at("message_id").as_string() == message_id);
  auto task_ids = [](const std::string& body) {
    std::set<std::string> ids;
    const auto message = json::parse(body);
    for (const auto& task : message.at("tasks").as_array())
      ids.emplace(task.at("task_id").as_string());
    return ids;
  };
  BOOST_TEST(task_ids(found.body).size() == 3u);
  BOOST_TEST(task_ids(found.body) == task_ids(herald.get("/v1/messages/" + message_id).body));

  // Form encoding: "+" is a space, "%2B" a plus.
  auto form_encoded =
      herald.get("/v1/messages?biz_type=ORDER_SHIPPED&biz_id=order+7%2F1&user_id=u-order+7/1");
  BOOST_TEST(json::parse(form_encoded.body).at("message_id").as_string() == message_id);
  auto plus_id = submit_event(herald, "a+b");
  auto plus = herald.get("/v1/messages?biz_type=ORDER_SHIPPED&biz_id=a%2Bb&user_id=u-a%2Bb");
  BOOST_TEST(json::parse(plus.body).at("message_id").as_string() == plus_id);
  BOOST_TEST(herald.get("/v1/messages?biz_type=ORDER_SHIPPED&biz_id=a+b&user_id=u-a+b").status ==
             404);

  auto unknown = herald.get("/v1/messages?biz_type=ORDER_SHIPPED&biz_id=other&user_id=u-1");
  BOOST_TEST(unknown.status == 404);
  BOOST_TEST(error_code(unknown) == "not_found");

  auto missing = herald.get("/v1/messages?biz_type=ORDER_SHIPPED&biz_id=order");
  BOOST_TEST(missing.status == 400);
  BOOST_TEST(json::parse(missing.body).at("error").at("field").as_string() == "user_id");
  auto malformed = herald.get("/v1/messages?biz_type=ORDER_SHIPPED&biz_id=a%2&user_id=u");
  BOOST_TEST(malformed.status == 400);
  BOOST_TEST(json::parse(malformed.body).at("error").at("field").as_string() == "biz_id");

  // Without keys the tenant is named, form-encoded: any tenant a submission may carry.
  auto event = three_channel_event("spaced");
  event["tenant"] = "acme corp";
  auto spaced = herald.post(json::serialize(event));
  BOOST_REQUIRE(spaced.status == 202);
  auto in_tenant = herald.get(
      "/v1/messages?tenant=acme+corp&biz_type=ORDER_SHIPPED&biz_id=spaced&user_id=u-spaced");
  BOOST_TEST(in_tenant.status == 200);
  BOOST_TEST(json::parse(in_tenant.body).at("message_id") ==
             json::parse(spaced.body).at("message_id"));
  BOOST_TEST(
      herald.get("/v1/messages?biz_type=ORDER_SHIPPED&biz_id=spaced&user_id=u-spaced").status ==
      404); // the default tenant's key is another message

  auto wrong_method = request(host, herald.port(), "DELETE", "/v1/messages");
  BOOST_TEST(wrong_method.status == 405);
  BOOST_TEST(wrong_method.header("allow") == "GET, POST");
}

BOOST_AUTO_TEST_CASE(every_answer_is_counted_by_route_and_code) {
  running_herald herald("");
  auto count = [&](const std::string& route, const std::string& code) {
    return metric_sum(herald.metrics(), "herald_http_responses_total",
                      {"route=\"" + route + "\"", "code=\"" + code + "\""});
  };
  BOOST_TEST(herald.get("/nowhere").status == 404);
  BOOST_TEST(herald.get("/v1/openapi.yaml").status == 200);
  BOOST_TEST(herald.get("/v1/messages?biz_type=X").status == 400);
  // A request the HTTP server refuses before any route sees it.
  http_connection connection(host, herald.port());
  BOOST_TEST(connection.raw("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n").status ==
             400);

  BOOST_TEST(count("unmatched", "404") == 1);
  BOOST_TEST(count("embedded_file", "200") == 1);
  BOOST_TEST(count("find_message_by_key", "400") == 1);
  BOOST_TEST(count("server", "400") == 1);
}

BOOST_AUTO_TEST_SUITE_END()
