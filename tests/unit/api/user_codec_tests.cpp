// The users API's JSON: PUT and PATCH bodies become patches (null clears, a null or empty
// address removes a contact), the DND body its own patch, anything off the contract is refused
// before the installation's rules are asked, and a profile is written as docs/api.md shows it.
#include "api/user_codec.hpp"

#include <string>
#include <variant>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald;
namespace json = boost::json;

namespace {

domain::user_patch decoded_profile(const std::string& body,
                                   api::profile_change change = api::profile_change::merge) {
  auto decoded = api::decode_user_profile(body, change);
  auto* failure = std::get_if<domain::validation_error>(&decoded);
  BOOST_REQUIRE_MESSAGE(failure == nullptr, body << ": " << (failure ? failure->message : ""));
  return std::get<domain::user_patch>(decoded);
}

domain::validation_error
refused(const std::variant<domain::user_patch, domain::validation_error>& decoded) {
  auto* failure = std::get_if<domain::validation_error>(&decoded);
  BOOST_REQUIRE(failure != nullptr);
  return *failure;
}

} // namespace

BOOST_AUTO_TEST_SUITE(user_codec_tests)

BOOST_AUTO_TEST_CASE(a_full_profile_body_becomes_a_replacing_patch) {
  auto patch = decoded_profile(
      R"({"contacts":{"sms":"+8613800000000","email":"a@b.c"},"time_zone":"Asia/Shanghai",)"
      R"("locale":"zh-CN","opted_out_channels":["email","email"],)"
      R"("opted_out_categories":["marketing"]})",
      api::profile_change::replace);
  BOOST_TEST(patch.replace);
  BOOST_REQUIRE(patch.contacts.has_value());
  BOOST_TEST(patch.contacts->size() == 2u);
  BOOST_TEST(patch.contacts->at("sms") == "+8613800000000");
  BOOST_TEST(*patch.time_zone == "Asia/Shanghai");
  BOOST_TEST(*patch.locale == "zh-CN");
  BOOST_TEST(patch.opted_out_channels->size() == 1u); // a set: named twice, kept once
  BOOST_TEST(patch.opted_out_categories->count(domain::category::marketing) == 1u);
  BOOST_TEST((patch.dnd == domain::user_patch::dnd_change::keep));
}

BOOST_AUTO_TEST_CASE(a_patch_changes_only_what_it_names_and_null_clears) {
  auto patch = decoded_profile(R"({"contacts":{"sms":null,"email":"","app":"tok"},"locale":null})");
  BOOST_TEST(!patch.replace);
  BOOST_TEST(patch.contacts->at("sms") == ""); // removed by apply_patch
  BOOST_TEST(patch.contacts->at("email") == "");
  BOOST_TEST(patch.contacts->at("app") == "tok");
  BOOST_REQUIRE(patch.locale.has_value());
  BOOST_TEST(patch.locale->empty());
  BOOST_TEST(!patch.time_zone.has_value());
  BOOST_TEST(!patch.opted_out_channels.has_value());
  BOOST_TEST(!patch.opted_out_categories.has_value());

  auto cleared = decoded_profile(R"({"opted_out_channels":null})");
  BOOST_TEST(cleared.opted_out_channels->empty());
  BOOST_TEST(decoded_profile("{}").contacts.has_value() == false);
}

BOOST_AUTO_TEST_CASE(off_contract_bodies_are_400_naming_the_field) {
  for (const auto& [body, field] : {
           std::pair{R"({"contact":{}})", "contact"},
           std::pair{R"({"user_id":"u-1"})", "user_id"},
           std::pair{R"({"contacts":[]})", "contacts"},
           std::pair{R"({"contacts":null})", "contacts"}, // a merge of nothing
           std::pair{R"({"contacts":{"sms":7}})", "contacts.sms"},
           std::pair{R"({"time_zone":3})", "time_zone"},
           std::pair{R"({"locale":true})", "locale"},
           std::pair{R"({"opted_out_channels":"sms"})", "opted_out_channels"},
           std::pair{R"({"opted_out_channels":["sms",1]})", "opted_out_channels[1]"},
           std::pair{R"({"opted_out_categories":[null]})", "opted_out_categories[0]"},
       }) {
    BOOST_TEST_CONTEXT(body) {
      auto failure = refused(api::decode_user_profile(body, api::profile_change::merge));
      BOOST_TEST(failure.status == 400);
      BOOST_TEST(failure.code == "invalid_request");
      BOOST_TEST(failure.field == field);
    }
  }
  for (const std::string body : {"", "[]", "\"x\"", "{", R"({"locale":"en",})"}) {
    BOOST_TEST_CONTEXT(body) {
      auto failure = refused(api::decode_user_profile(body, api::profile_change::replace));
      BOOST_TEST(failure.status == 400);
      BOOST_TEST(failure.code == "invalid_request");
    }
  }
  auto twice = refused(
      api::decode_user_profile(R"({"locale":"en","locale":"fr"})", api::profile_change::merge));
  BOOST_TEST(twice.code == "duplicate_key");
  BOOST_TEST(twice.field == "locale");
}

BOOST_AUTO_TEST_CASE(an_unknown_category_is_422_invalid_category) {
  auto failure = refused(api::decode_user_profile(
      R"({"opted_out_categories":["marketing","newsletters"]})", api::profile_change::merge));
  BOOST_TEST(failure.status == 422);
  BOOST_TEST(failure.code == "invalid_category");
  BOOST_TEST(failure.field == "opted_out_categories[1]");
  // verification is a category; that it cannot be turned off is domain::check_user_patch's.
  auto verification = decoded_profile(R"({"opted_out_categories":["verification"]})");
  BOOST_TEST(verification.opted_out_categories->count(domain::category::verification) == 1u);
}

BOOST_AUTO_TEST_CASE(a_dnd_body_sets_dnd_until_a_time_or_lifted) {
  using change = domain::user_patch::dnd_change;
  for (const std::string body : {"", "{}", R"({"until":null})"}) {
    auto patch = api::decode_dnd(body);
    BOOST_REQUIRE(std::holds_alternative<domain::user_patch>(patch));
    BOOST_TEST((std::get<domain::user_patch>(patch).dnd == change::set), body);
    BOOST_TEST(!std::get<domain::user_patch>(patch).dnd_until.has_value(), body);
  }
  auto until = api::decode_dnd(R"({"until":"2026-12-02T10:00:00+08:00"})");
  BOOST_REQUIRE(std::holds_alternative<domain::user_patch>(until));
  const auto& patch = std::get<domain::user_patch>(until);
  BOOST_TEST(!patch.replace);
  BOOST_TEST(!patch.contacts.has_value());
  BOOST_TEST(domain::format_rfc3339(*patch.dnd_until) == "2026-12-02T02:00:00.000000Z");

  auto not_a_time = refused(api::decode_dnd(R"({"until":"tomorrow"})"));
  BOOST_TEST(not_a_time.status == 422);
  BOOST_TEST(not_a_time.code == "invalid_until");
  auto not_a_string = refused(api::decode_dnd(R"({"until":1796119200})"));
  BOOST_TEST(not_a_string.status == 400);
  BOOST_TEST(not_a_string.field == "until");
  auto unknown = refused(api::decode_dnd(R"({"until":null,"reason":"night"})"));
  BOOST_TEST(unknown.status == 400);
  BOOST_TEST(unknown.field == "reason");
  BOOST_TEST(refused(api::decode_dnd("[]")).status == 400);
}

BOOST_AUTO_TEST_CASE(a_profile_is_encoded_with_every_field) {
  domain::user_profile user;
  user.tenant = "acme";
  user.user_id = "u-1";
  user.contacts = {{"sms", "+8613800000000"}};
  user.time_zone = "Asia/Shanghai";
  user.locale = "zh-CN";
  user.opted_out_channels = {"email"};
  user.opted_out_categories = {domain::category::marketing};
  user.updated_at = *domain::parse_rfc3339("2026-12-01T09:00:00Z");
  auto body = json::parse(api::encode_user_profile(user)).as_object();
  BOOST_TEST(body.at("user_id").as_string() == "u-1");
  BOOST_TEST(!body.contains("tenant")); // the caller's own
  BOOST_TEST(body.at("contacts").at("sms").as_string() == "+8613800000000");
  BOOST_TEST(body.at("time_zone").as_string() == "Asia/Shanghai");
  BOOST_TEST(body.at("locale").as_string() == "zh-CN");
  BOOST_TEST(body.at("opted_out_channels").as_array().at(0).as_string() == "email");
  BOOST_TEST(body.at("opted_out_categories").as_array().at(0).as_string() == "marketing");
  BOOST_TEST(body.at("dnd").is_null());
  BOOST_TEST(body.at("updated_at").as_string() == "2026-12-01T09:00:00.000000Z");

  user.dnd = domain::do_not_disturb{};
  BOOST_TEST(json::parse(api::encode_user_profile(user)).at("dnd").at("until").is_null());
  user.dnd->until = *domain::parse_rfc3339("2026-12-02T00:00:00Z");
  BOOST_TEST(json::parse(api::encode_user_profile(user)).at("dnd").at("until").as_string() ==
             "2026-12-02T00:00:00.000000Z");
}

BOOST_AUTO_TEST_SUITE_END()
