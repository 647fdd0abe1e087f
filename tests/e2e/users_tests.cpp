// The users API against the built binary on its embedded SQLite: a profile is stored, merged,
// read back; do-not-disturb is set and lifted; every refusal is a JSON error that changes
// nothing; a tenant sees only its own users; the inbox keeps its route under /v1/users/.

#include "support/herald_server.hpp"

#include <string>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;

namespace {

const std::string users_config =
    R"({"channels":[{"name":"sms","type":"simulated"},{"name":"email","type":"simulated"},)"
    R"({"name":"app","type":"simulated"},{"name":"inapp","type":"inapp"}],)"
    R"("default_route":["inapp"]})";

const std::string phone = "+8613800000000";
const std::string email = "alice@example.com";

http_response call(running_herald& herald, const std::string& method, const std::string& target,
                   const std::string& body = {}, header_list headers = json_headers()) {
  return request(host, herald.port(), method, target, body, headers);
}

json::object profile_of(const http_response& response) {
  BOOST_REQUIRE_MESSAGE(response.status == 200, response.status << " " << response.body);
  return json::parse(response.body).as_object();
}

json::object stored(running_herald& herald, const std::string& user = "u-1") {
  return profile_of(herald.get("/v1/users/" + user));
}

std::string text(const json::value& value) {
  return std::string(value.as_string());
}

json::object error_of(const http_response& response) {
  return json::parse(response.body).at("error").as_object();
}

const std::string full_profile =
    json::serialize(json::object{{"contacts", {{"sms", phone}, {"email", email}}},
                                 {"time_zone", "Asia/Shanghai"},
                                 {"locale", "zh-CN"},
                                 {"opted_out_channels", json::array{"email"}},
                                 {"opted_out_categories", json::array{"marketing"}}});

} // namespace

BOOST_AUTO_TEST_SUITE(users_tests)

BOOST_AUTO_TEST_CASE(a_put_profile_reads_back_and_a_second_put_replaces_it) {
  running_herald herald{"", users_config};
  auto put = profile_of(call(herald, "PUT", "/v1/users/u-1", full_profile));
  BOOST_TEST(text(put.at("user_id")) == "u-1");
  BOOST_TEST(text(put.at("contacts").at("sms")) == phone);
  BOOST_TEST(text(put.at("contacts").at("email")) == email);
  BOOST_TEST(text(put.at("time_zone")) == "Asia/Shanghai");
  BOOST_TEST(text(put.at("locale")) == "zh-CN");
  BOOST_TEST(put.at("opted_out_channels") == json::array{"email"});
  BOOST_TEST(put.at("opted_out_categories") == json::array{"marketing"});
  BOOST_TEST(put.at("dnd").is_null());
  BOOST_TEST(text(put.at("updated_at")).back() == 'Z');
  BOOST_TEST(stored(herald) == put);

  // Whatever a PUT leaves out is emptied.
  auto replaced = profile_of(call(herald, "PUT", "/v1/users/u-1", R"({"locale":"en"})"));
  BOOST_TEST(replaced.at("contacts").as_object().empty());
  BOOST_TEST(text(replaced.at("time_zone")) == "");
  BOOST_TEST(text(replaced.at("locale")) == "en");
  BOOST_TEST(replaced.at("opted_out_channels").as_array().empty());
  BOOST_TEST(replaced.at("opted_out_categories").as_array().empty());
  BOOST_TEST(stored(herald) == replaced);

  // No address reaches herald's log.
  const auto log = herald.process().log();
  BOOST_TEST(log.find(phone) == std::string::npos);
  BOOST_TEST(log.find(email) == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_patch_merges_contacts_and_null_removes_one) {
  running_herald herald{"", users_config};
  profile_of(call(herald, "PUT", "/v1/users/u-1", full_profile));
  auto patched = profile_of(call(herald, "PATCH", "/v1/users/u-1",
                                 R"({"contacts":{"email":null,"app":"token-7"},"locale":"en"})"));
  BOOST_TEST(patched.at("contacts") == (json::object{{"sms", phone}, {"app", "token-7"}}));
  BOOST_TEST(text(patched.at("locale")) == "en");
  BOOST_TEST(text(patched.at("time_zone")) == "Asia/Shanghai"); // not named: kept
  BOOST_TEST(patched.at("opted_out_channels") == json::array{"email"});
  auto emptied = profile_of(
      call(herald, "PATCH", "/v1/users/u-1", R"({"contacts":{"sms":""},"time_zone":null})"));
  BOOST_TEST(emptied.at("contacts") == (json::object{{"app", "token-7"}}));
  // The inbox reaches the user by user_id: a stored inapp address would be ignored, so refused.
  BOOST_TEST(call(herald, "PATCH", "/v1/users/u-1", R"({"contacts":{"inapp":"inbox-7"}})").status ==
             422);
  BOOST_TEST(text(emptied.at("time_zone")) == "");
  BOOST_TEST(stored(herald) == emptied);

  // A PATCH of a user never stored creates it.
  auto created = profile_of(call(herald, "PATCH", "/v1/users/u-2", R"({"locale":"fr"})"));
  BOOST_TEST(text(created.at("locale")) == "fr");
  BOOST_TEST(created.at("contacts").as_object().empty());
}

BOOST_AUTO_TEST_CASE(dnd_is_set_until_a_time_or_lifted_and_a_profile_put_keeps_it) {
  running_herald herald{"", users_config};
  auto until = profile_of(
      call(herald, "PUT", "/v1/users/u-1/dnd", R"({"until":"2099-01-01T08:00:00+08:00"})"));
  BOOST_TEST(text(until.at("dnd").at("until")) == "2099-01-01T00:00:00.000000Z");
  BOOST_TEST(until.at("contacts").as_object().empty()); // created by its DND
  auto profile = profile_of(call(herald, "PUT", "/v1/users/u-1", full_profile));
  BOOST_TEST(profile.at("dnd") == until.at("dnd"));

  auto lifted = profile_of(call(herald, "DELETE", "/v1/users/u-1/dnd", "", {}));
  BOOST_TEST(lifted.at("dnd").is_null());
  BOOST_TEST(text(lifted.at("contacts").at("sms")) == phone);
  BOOST_TEST(stored(herald).at("dnd").is_null());
  BOOST_TEST(call(herald, "DELETE", "/v1/users/u-1/dnd", "", {}).status == 200); // none: fine

  auto open_ended = profile_of(call(herald, "PUT", "/v1/users/u-1/dnd", "{}"));
  BOOST_TEST(open_ended.at("dnd") == (json::object{{"until", nullptr}}));
  auto no_body = profile_of(call(herald, "PUT", "/v1/users/u-3/dnd", "", {}));
  BOOST_TEST(no_body.at("dnd").at("until").is_null());
}

BOOST_AUTO_TEST_CASE(a_user_never_stored_is_404_user_not_found) {
  running_herald herald{"", users_config};
  auto unknown = herald.get("/v1/users/nobody");
  BOOST_TEST(unknown.status == 404);
  BOOST_TEST(text(error_of(unknown).at("code")) == "user_not_found");
}

BOOST_AUTO_TEST_CASE(every_refusal_is_a_json_error_and_changes_nothing) {
  running_herald herald{"", users_config};
  const auto before = profile_of(call(herald, "PUT", "/v1/users/u-1", full_profile));
  struct refusal {
    std::string method;
    std::string target;
    std::string body;
    int status;
    std::string code;
    std::string field;
  };
  const std::string long_address = std::string(321, 'a');
  const std::vector<refusal> refusals{
      {"PATCH", "/v1/users/u-1", R"({"contacts":{"fax":"+1"}})", 422, "unknown_channel",
       "contacts.fax"},
      {"PUT", "/v1/users/u-1", R"({"opted_out_channels":["pager"]})", 422, "unknown_channel",
       "opted_out_channels"},
      {"PATCH", "/v1/users/u-1", R"({"time_zone":"Mars/Olympus_Mons"})", 422, "invalid_time_zone",
       "time_zone"},
      {"PATCH", "/v1/users/u-1", R"({"time_zone":"../../etc/passwd"})", 422, "invalid_time_zone",
       "time_zone"},
      {"PATCH", "/v1/users/u-1", R"({"locale":"en_US"})", 422, "invalid_locale", "locale"},
      {"PATCH", "/v1/users/u-1", R"({"opted_out_categories":["newsletters"]})", 422,
       "invalid_category", "opted_out_categories[0]"},
      {"PUT", "/v1/users/u-1", R"({"opted_out_categories":["marketing","verification"]})", 422,
       "mandatory_category", "opted_out_categories"},
      {"PATCH", "/v1/users/u-1", R"({"contacts":{"email":")" + long_address + R"("}})", 422,
       "invalid_contact", "contacts.email"},
      {"PATCH", "/v1/users/u-1", R"({"contacts":{"sms":"+86\u000a138"}})", 422, "invalid_contact",
       "contacts.sms"},
      {"PUT", "/v1/users/u-1/dnd", R"({"until":"next week"})", 422, "invalid_until", "until"},
      {"PUT", "/v1/users/u-1/dnd", R"({"until":"2000-01-01T00:00:00Z"})", 422, "invalid_until",
       "until"},
      {"PATCH", "/v1/users/u-1", R"({"nickname":"al"})", 400, "invalid_request", "nickname"},
      {"PUT", "/v1/users/u-1/dnd", R"({"until":null,"why":"sleep"})", 400, "invalid_request",
       "why"},
      {"PATCH", "/v1/users/u-1", R"({"contacts":{"sms":1}})", 400, "invalid_request",
       "contacts.sms"},
      {"PATCH", "/v1/users/u-1", R"({"locale":"en","locale":"fr"})", 400, "duplicate_key",
       "locale"},
      {"PUT", "/v1/users/u-1", "[]", 400, "invalid_request", ""},
      {"PUT", "/v1/users/u-1", "{", 400, "invalid_request", ""},
      {"PUT", "/v1/users/u%00/dnd", "{}", 400, "invalid_request", "user_id"},
      {"PATCH", "/v1/users/" + std::string(129, 'u'), "{}", 400, "invalid_request", "user_id"},
  };
  for (const auto& r : refusals) {
    BOOST_TEST_CONTEXT(r.method << " " << r.target.substr(0, 40) << " " << r.body.substr(0, 80)) {
      auto response = call(herald, r.method, r.target, r.body);
      BOOST_TEST(response.status == r.status);
      BOOST_TEST(response.header("content-type") == "application/json");
      auto error = error_of(response);
      BOOST_TEST(text(error.at("code")) == r.code);
      BOOST_TEST(text(error.at("message")) != "");
      if (r.field.empty())
        BOOST_TEST(!error.contains("field"));
      else
        BOOST_TEST(text(error.at("field")) == r.field);
    }
  }
  auto wrong_type = call(herald, "PUT", "/v1/users/u-1", "{}", {{"Content-Type", "text/plain"}});
  BOOST_TEST(wrong_type.status == 415);
  auto post = call(herald, "POST", "/v1/users/u-1", "{}");
  BOOST_TEST(post.status == 405);
  BOOST_TEST(post.header("allow") == "GET, PUT, PATCH");
  BOOST_TEST(stored(herald) == before);
}

BOOST_AUTO_TEST_CASE(the_inbox_still_answers_under_users) {
  running_herald herald{"", users_config};
  profile_of(call(herald, "PUT", "/v1/users/u-1", full_profile));
  auto inbox = herald.get("/v1/users/u-1/inbox");
  BOOST_REQUIRE_EQUAL(inbox.status, 200);
  auto page = json::parse(inbox.body).as_object();
  BOOST_TEST(text(page.at("user_id")) == "u-1");
  BOOST_TEST(page.at("items").as_array().empty());
}

BOOST_AUTO_TEST_CASE(without_keys_the_tenant_parameter_separates_users) {
  running_herald herald{"", users_config};
  profile_of(call(herald, "PUT", "/v1/users/u-1?tenant=acme", R"({"locale":"en"})"));
  BOOST_TEST(herald.get("/v1/users/u-1").status == 404); // tenant "default"
  BOOST_TEST(text(stored(herald, "u-1?tenant=acme").at("locale")) == "en");
}

BOOST_AUTO_TEST_CASE(a_key_sees_and_changes_only_its_tenants_users) {
  temp_dir dir{"herald-e2e-users"};
  const auto database = "sqlite:" + dir.file("herald.db");
  const auto backend_a = create_api_key(database, "tenant-a", "submit,read");
  const auto reader_a = create_api_key(database, "tenant-a", "read");
  const auto backend_b = create_api_key(database, "tenant-b", "submit,read");
  running_herald herald{database, R"({"auth":{"mode":"api_keys"},"channels":[{"name":"sms","type":)"
                                  R"("simulated"},{"name":"email","type":"simulated"}]})"};
  auto as = [](const std::string& key) {
    auto headers = json_headers();
    headers.emplace_back("Authorization", "Bearer " + key);
    return headers;
  };

  auto of_a = profile_of(call(herald, "PUT", "/v1/users/u-1", full_profile, as(backend_a)));
  auto theirs = call(herald, "GET", "/v1/users/u-1", "", as(backend_b));
  BOOST_TEST(theirs.status == 404);
  BOOST_TEST(text(error_of(theirs).at("code")) == "user_not_found");
  // The same user id in tenant b is another user.
  profile_of(call(herald, "PATCH", "/v1/users/u-1", R"({"locale":"de"})", as(backend_b)));
  profile_of(call(herald, "PUT", "/v1/users/u-1/dnd", "{}", as(backend_b)));
  BOOST_TEST(profile_of(call(herald, "GET", "/v1/users/u-1", "", as(reader_a))) == of_a);
  auto named = call(herald, "GET", "/v1/users/u-1?tenant=tenant-b", "", as(backend_a));
  BOOST_TEST(named.status == 403);

  // Reading needs `read`, changing needs `submit`.
  auto refused = call(herald, "PATCH", "/v1/users/u-1", R"({"locale":"en"})", as(reader_a));
  BOOST_TEST(refused.status == 403);
  BOOST_TEST(call(herald, "DELETE", "/v1/users/u-1/dnd", "", as(reader_a)).status == 403);
  BOOST_TEST(call(herald, "GET", "/v1/users/u-1", "", json_headers()).status == 401);
  BOOST_TEST(profile_of(call(herald, "GET", "/v1/users/u-1", "", as(reader_a))) == of_a);
}

BOOST_AUTO_TEST_SUITE_END()
