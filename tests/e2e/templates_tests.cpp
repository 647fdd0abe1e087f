// Stored templates against the built binary over HTTP: a template is saved, previewed,
// refused when broken (with its position), rendered at acceptance with parameters as data, and
// each message shows the version it used; on SQLite, and on PostgreSQL with a second node that
// sees a new version within its refresh interval.

#include "support/eventually.hpp"
#include "support/herald_server.hpp"
#include "support/postgres.hpp"

#include <random>
#include <string>
#include <unistd.h>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;

namespace {

// refresh_ms 100: a second node sees a new version within a tenth of a second.
const std::string templates_config =
    R"({"channels":[{"name":"sms","type":"simulated"},{"name":"email","type":"simulated"},)"
    R"({"name":"wechat","type":"simulated"}],"stored_templates":{"refresh_ms":100},)"
    R"("templates":{"welcome":{"title":"Hi","body":"Welcome {{name}}"}}})";

const std::string otp_v1 = json::serialize(json::object{
    {"default_locale", "en"},
    {"locales",
     {{"en",
       {{"title", "Your code"},
        {"body", "Code ${code}, valid {{minutes}} min"},
        {"channels", {{"sms", {{"body", "${code} is your code"}}}}}}},
      {"zh-CN", {{"title", "验证码"}, {"body", "验证码${code}，{{minutes}}分钟内有效"}}}}},
    {"variables", json::array{"code", "minutes"}}});

const std::string otp_v2 = json::serialize(json::object{
    {"default_locale", "en"},
    {"locales", {{"en", {{"title", "Your code (v2)"}, {"body", "v2: ${code} / ${minutes}"}}}}}});

std::string unique_tenant() {
  std::random_device device;
  return "tpl-" + std::to_string(::getpid()) + "-" + std::to_string(device() % 1000000);
}

http_response call(running_herald& herald, const std::string& method, const std::string& target,
                   const std::string& body = {}) {
  return request(host, herald.port(), method, target, body,
                 body.empty() ? header_list{} : json_headers());
}

std::string text(const json::value& value) {
  return std::string(value.as_string());
}

json::object body_of(const http_response& response, int status) {
  BOOST_REQUIRE_MESSAGE(response.status == status, response.status << " " << response.body);
  return json::parse(response.body).as_object();
}

json::object error_of(const http_response& response) {
  return json::parse(response.body).at("error").as_object();
}

std::string event(const std::string& tenant, const std::string& biz_id, const json::object& params,
                  const std::string& template_name = "otp", const std::string& locale = "") {
  json::object body{{"tenant", tenant},
                    {"biz_type", "OTP"},
                    {"biz_id", biz_id},
                    {"user_id", "u-1"},
                    {"channels", json::array{"sms", "email"}},
                    {"to", {{"sms", "+8613800000000"}, {"email", "alice@example.com"}}},
                    {"template", template_name},
                    {"params", params}};
  if (!locale.empty())
    body["locale"] = locale;
  return json::serialize(body);
}

const json::object code_42{{"code", "42"}, {"minutes", 5}};

/// The template a message shows it was rendered with.
json::value template_of(running_herald& herald, const std::string& message_id) {
  return body_of(herald.get("/v1/messages/" + message_id), 200).at("template");
}

std::string send(running_herald& herald, const std::string& body) {
  return text(body_of(herald.post(body), 202).at("message_id"));
}

void the_template_lifecycle(running_herald& herald, const std::string& tenant) {
  const std::string at = "/v1/templates/otp?tenant=" + tenant;
  const std::string preview_at = "/v1/templates/otp/preview?tenant=" + tenant;

  // Saved as version 1 and read back.
  auto saved = body_of(call(herald, "PUT", at, otp_v1), 201);
  BOOST_TEST(saved.at("version").as_int64() == 1);
  BOOST_TEST(text(saved.at("code")) == "otp");
  auto read = body_of(call(herald, "GET", at), 200);
  BOOST_TEST(read.at("locales") == json::parse(otp_v1).at("locales"));

  // Preview: every channel; injection strings in values come out literally.
  const json::object hostile{{"code", "${minutes}{{minutes}}<script>alert(1)</script>"},
                             {"minutes", "$${x}"}};
  auto preview = body_of(
      call(herald, "POST", preview_at, json::serialize(json::object{{"params", hostile}})), 200);
  const auto& locales = preview.at("locales").as_array();
  BOOST_REQUIRE_EQUAL(locales.size(), 2u);
  const auto& en = locales.at(0).as_object();
  BOOST_TEST(text(en.at("locale")) == "en");
  BOOST_TEST(text(en.at("body")) ==
             "Code ${minutes}{{minutes}}<script>alert(1)</script>, valid $${x} min");
  BOOST_TEST(text(en.at("channels").at("sms").at("body")) ==
             "${minutes}{{minutes}}<script>alert(1)</script> is your code");
  BOOST_TEST(text(en.at("channels").at("email").at("body")) == text(en.at("body")));
  auto zh = body_of(call(herald, "POST", preview_at,
                         json::serialize(json::object{{"params", code_42}, {"locale", "zh-CN"}})),
                    200);
  BOOST_TEST(text(zh.at("locales").at(0).at("body")) == "验证码42，5分钟内有效");
  auto missing = call(herald, "POST", preview_at, R"({"params":{"code":"1"}})");
  BOOST_TEST(missing.status == 422);
  BOOST_TEST(text(error_of(missing).at("code")) == "missing_parameter");
  BOOST_TEST(text(error_of(missing).at("field")) == "params.minutes");

  // A broken template is refused with its field and position, and changes nothing.
  auto broken = call(herald, "PUT", at,
                     R"({"default_locale":"en","locales":{"en":{"body":"Code: ${code"}}})");
  BOOST_TEST(broken.status == 422);
  BOOST_TEST(text(error_of(broken).at("code")) == "invalid_template");
  BOOST_TEST(text(error_of(broken).at("field")) == "locales.en.body");
  BOOST_TEST(error_of(broken).at("position").as_int64() == 7);
  auto unlisted = call(
      herald, "PUT", at,
      R"({"default_locale":"en","locales":{"en":{"body":"Hi ${nmae}"}},"variables":["name"]})");
  BOOST_TEST(unlisted.status == 422);
  BOOST_TEST(error_of(unlisted).at("position").as_int64() == 4);
  BOOST_TEST(body_of(call(herald, "GET", at), 200).at("version").as_int64() == 1);

  // A message rendered with version 1: SMS gets its own body, the others the locale's.
  const auto first = send(herald, event(tenant, "otp-1", code_42));
  BOOST_TEST(template_of(herald, first) ==
             (json::object{{"code", "otp"}, {"version", 1}, {"source", "stored"}}));
  auto view = body_of(herald.get("/v1/messages/" + first), 200);
  BOOST_TEST(text(view.at("body")) == "Code 42, valid 5 min");
  for (const auto& task : view.at("tasks").as_array()) {
    const auto& shown = task.as_object();
    if (text(shown.at("channel")) == "sms")
      BOOST_TEST(text(shown.at("content").at("body")) == "42 is your code");
    else
      BOOST_TEST(!shown.contains("content"));
  }
  auto zh_message = send(herald, event(tenant, "otp-zh", code_42, "otp", "zh-CN"));
  BOOST_TEST(text(body_of(herald.get("/v1/messages/" + zh_message), 200).at("body")) ==
             "验证码42，5分钟内有效");

  // Refusals at acceptance: a missing parameter, and a line break in a value.
  auto no_minutes = herald.post(event(tenant, "otp-x", json::object{{"code", "1"}}));
  BOOST_TEST(no_minutes.status == 422);
  BOOST_TEST(text(error_of(no_minutes).at("code")) == "missing_parameter");
  auto crlf = herald.post(
      event(tenant, "otp-y", json::object{{"code", "1\r\nBcc: x@example.com"}, {"minutes", 1}}));
  BOOST_TEST(crlf.status == 400);
  BOOST_TEST(text(error_of(crlf).at("field")) == "params.code");

  // Version 2: new messages show 2, the first still shows 1.
  BOOST_TEST(body_of(call(herald, "PUT", at, otp_v2), 200).at("version").as_int64() == 2);
  const auto second = send(herald, event(tenant, "otp-2", code_42));
  BOOST_TEST(template_of(herald, second).at("version").as_int64() == 2);
  BOOST_TEST(text(body_of(herald.get("/v1/messages/" + second), 200).at("body")) == "v2: 42 / 5");
  BOOST_TEST(template_of(herald, first).at("version").as_int64() == 1);
  BOOST_TEST(body_of(call(herald, "GET", at + "&version=1"), 200).at("version").as_int64() == 1);

  // A config template still renders, with no version.
  const auto config =
      send(herald, event(tenant, "welcome-1", json::object{{"name", "Ann"}}, "welcome"));
  BOOST_TEST(template_of(herald, config) ==
             (json::object{{"code", "welcome"}, {"version", nullptr}, {"source", "config"}}));

  // Deleted: later requests naming it are refused; accepted messages keep their text.
  BOOST_TEST(call(herald, "DELETE", at).status == 200);
  auto unknown = herald.post(event(tenant, "otp-3", code_42));
  BOOST_TEST(unknown.status == 422);
  BOOST_TEST(text(error_of(unknown).at("code")) == "unknown_template");
  BOOST_TEST(call(herald, "GET", at).status == 404);
  BOOST_TEST(template_of(herald, second).at("version").as_int64() == 2);
  // A resubmission is planned (rendered) before its key is looked up, so it is refused too;
  // the accepted message is left as it was.
  BOOST_TEST(herald.post(event(tenant, "otp-2", code_42)).status == 422);
  BOOST_TEST(template_of(herald, second).at("version").as_int64() == 2);
}

} // namespace

BOOST_AUTO_TEST_SUITE(templates_tests)

BOOST_AUTO_TEST_CASE(a_template_is_saved_previewed_versioned_and_shown_on_its_messages) {
  running_herald herald{"", templates_config};
  the_template_lifecycle(herald, unique_tenant());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(templates_postgres_tests,
                      *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

BOOST_AUTO_TEST_CASE(a_template_is_saved_previewed_versioned_and_shown_on_its_messages) {
  running_herald herald{own_test_database(), templates_config};
  the_template_lifecycle(herald, unique_tenant());
}

// Two nodes share the database: what one saves, the other renders within its refresh interval.
BOOST_AUTO_TEST_CASE(another_node_renders_a_new_version_after_its_refresh) {
  const auto database = own_test_database();
  running_herald first{database, templates_config};
  running_herald second{database, templates_config};
  const auto tenant = unique_tenant();
  const std::string at = "/v1/templates/otp?tenant=" + tenant;
  BOOST_REQUIRE(call(first, "PUT", at, otp_v1).status == 201);
  int attempt = 0;
  std::string rendered_by_second;
  BOOST_TEST(eventually(
      [&] {
        auto answer = second.post(event(tenant, "seen-" + std::to_string(++attempt), code_42));
        if (answer.status != 202)
          return false;
        rendered_by_second = text(json::parse(answer.body).at("message_id"));
        return true;
      },
      std::chrono::seconds{5}));
  BOOST_TEST(template_of(second, rendered_by_second).at("version").as_int64() == 1);
  BOOST_REQUIRE(call(first, "PUT", at, otp_v2).status == 200);
  BOOST_TEST(eventually(
      [&] {
        const auto id = send(second, event(tenant, "v2-" + std::to_string(++attempt), code_42));
        return template_of(second, id).at("version").as_int64() == 2;
      },
      std::chrono::seconds{5}));
  BOOST_REQUIRE(call(first, "DELETE", at).status == 200);
  BOOST_TEST(eventually(
      [&] {
        return second.post(event(tenant, "gone-" + std::to_string(++attempt), code_42)).status ==
               422;
      },
      std::chrono::seconds{5}));
}

BOOST_AUTO_TEST_SUITE_END()
