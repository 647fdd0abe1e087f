#include "domain/keys.hpp"
#include "domain/template_definition.hpp"
#include "domain/template_text.hpp"

#include <string>

#include <boost/test/unit_test.hpp>

using namespace herald::domain;

namespace {

const std::set<std::string> channels = {"sms", "wechat", "email", "app"};

template_definition otp() {
  template_definition d;
  d.default_locale = "en";
  d.locales["en"] = locale_text{"Your code", "Code ${code}, valid for {{minutes}} minutes", {}};
  d.locales["en"].channels["sms"] = channel_text{std::nullopt, std::string("${code} is your code")};
  d.locales["zh-CN"] = locale_text{"验证码", "验证码${code}，{{minutes}}分钟内有效", {}};
  d.variables = std::vector<std::string>{"code", "minutes"};
  return d;
}

validation_error refusal(const template_definition& d, const request_limits& limits = {}) {
  auto error = check_definition(d, channels, limits);
  BOOST_TEST_REQUIRE(error.has_value(), "the definition was accepted");
  return *error;
}

rendered_text render(const template_definition& d, const std::string& locale,
                     const std::string& channel, const std::map<std::string, std::string>& params,
                     const request_limits& limits = {}) {
  auto result = render_definition(d, locale, channel, params, limits, "otp");
  BOOST_TEST_REQUIRE(std::holds_alternative<rendered_text>(result),
                     (std::holds_alternative<validation_error>(result)
                          ? std::get<validation_error>(result).message
                          : std::string()));
  return std::get<rendered_text>(result);
}

const std::map<std::string, std::string> params = {{"code", "123456"}, {"minutes", "5"}};

} // namespace

BOOST_AUTO_TEST_SUITE(template_definition_tests)

BOOST_AUTO_TEST_CASE(a_well_formed_definition_is_accepted) {
  BOOST_TEST(!check_definition(otp(), channels, {}).has_value());
}

BOOST_AUTO_TEST_CASE(broken_syntax_is_refused_with_field_and_position) {
  auto d = otp();
  d.locales["zh-CN"].body = "验证码${code 有效"; // "${" at character 4, never closed
  const auto error = refusal(d);
  BOOST_TEST(error.status == 422);
  BOOST_TEST(error.code == "invalid_template");
  BOOST_TEST(error.field == "locales.zh-CN.body");
  BOOST_TEST_REQUIRE(error.position.has_value());
  BOOST_TEST(*error.position == 4u);
  BOOST_TEST(error.message.find("locales.zh-CN.body: character 4:") == 0, error.message);
}

BOOST_AUTO_TEST_CASE(a_bad_name_in_a_channel_override_is_refused_where_it_is) {
  auto d = otp();
  d.locales["en"].channels["sms"].body = "ab ${co de}";
  const auto error = refusal(d);
  BOOST_TEST(error.field == "locales.en.channels.sms.body");
  BOOST_TEST(*error.position == 8u); // the space inside the name
}

BOOST_AUTO_TEST_CASE(a_placeholder_not_in_variables_is_refused_with_its_position) {
  auto d = otp();
  d.locales["en"].title = "Hi {{name}}";
  const auto error = refusal(d);
  BOOST_TEST(error.field == "locales.en.title");
  BOOST_TEST(*error.position == 4u);
  BOOST_TEST(error.message.find("'name' is not listed in variables") != std::string::npos);
  d.variables.reset(); // without a list, any name may be used
  BOOST_TEST(!check_definition(d, channels, {}).has_value());
}

BOOST_AUTO_TEST_CASE(structure_is_checked) {
  auto no_default = otp();
  no_default.default_locale = "fr";
  BOOST_TEST(refusal(no_default).field == "default_locale");
  auto unknown_channel = otp();
  unknown_channel.locales["en"].channels["fax"].body = "x";
  BOOST_TEST(refusal(unknown_channel).field == "locales.en.channels.fax");
  auto empty_body = otp();
  empty_body.locales["en"].body.clear();
  BOOST_TEST(refusal(empty_body).field == "locales.en.body");
  auto bad_tag = otp();
  bad_tag.locales["not a tag!"] = locale_text{"", "x", {}};
  BOOST_TEST(refusal(bad_tag).field == "locales.not a tag!");
  auto bad_variable = otp();
  bad_variable.variables->push_back("has space");
  BOOST_TEST(refusal(bad_variable).field == "variables[2]");
  auto control = otp();
  control.locales["en"].title = "a\nb";
  BOOST_TEST(refusal(control).field == "locales.en.title");
}

BOOST_AUTO_TEST_CASE(an_sms_body_too_long_without_its_parameters_is_refused) {
  request_limits limits;
  limits.body_character_limits = {{"sms", 10}, {"wechat", 10}};
  auto d = otp(); // sms has its own short body: "${code} is your code" is 13 characters bare
  auto error = refusal(d, limits);
  BOOST_TEST(error.field == "locales.en.channels.sms.body");
  BOOST_TEST(error.message.find("over the sms limit of 10") != std::string::npos, error.message);
  limits.body_character_limits = {{"sms", 13}, {"wechat", 200}};
  BOOST_TEST(!check_definition(d, channels, limits).has_value()); // placeholders count nothing
  limits.body_character_limits = {{"sms", 100}, {"wechat", 12}};
  BOOST_TEST(refusal(d, limits).field == "locales.en.body"); // wechat takes the locale's body
}

BOOST_AUTO_TEST_CASE(locale_choice_exact_then_language_then_default) {
  auto d = otp();
  d.locales["zh"] = locale_text{"", "zh", {}};
  BOOST_TEST(choose_locale(d, "zh-CN") == "zh-CN");
  BOOST_TEST(choose_locale(d, "zh-TW") == "zh");
  BOOST_TEST(choose_locale(d, "fr-FR") == "en");
  BOOST_TEST(choose_locale(d, "") == "en");
}

BOOST_AUTO_TEST_CASE(channels_get_their_override_others_the_locale_text) {
  const auto d = otp();
  const auto sms = render(d, "en", "sms", params);
  BOOST_TEST(sms.title == "Your code"); // no title override: the locale's
  BOOST_TEST(sms.body == "123456 is your code");
  const auto email = render(d, "en", "email", params);
  BOOST_TEST(email.body == "Code 123456, valid for 5 minutes");
  BOOST_TEST(render(d, "zh-CN", "sms", params).body == "验证码123456，5分钟内有效");
}

BOOST_AUTO_TEST_CASE(values_are_data_never_markup_or_placeholders) {
  const auto d = otp();
  const std::map<std::string, std::string> hostile = {
      {"code", "${minutes}{{minutes}}<script>alert(1)</script>"}, {"minutes", "$${x}"}};
  const auto email = render(d, "en", "email", hostile);
  BOOST_TEST(email.body ==
             "Code ${minutes}{{minutes}}<script>alert(1)</script>, valid for $${x} minutes");
}

BOOST_AUTO_TEST_CASE(a_missing_parameter_is_named) {
  auto result = render_definition(otp(), "en", "email", {{"code", "1"}}, {}, "otp");
  BOOST_TEST_REQUIRE(std::holds_alternative<validation_error>(result));
  const auto& error = std::get<validation_error>(result);
  BOOST_TEST(error.status == 422);
  BOOST_TEST(error.code == "missing_parameter");
  BOOST_TEST(error.field == "params.minutes");
}

BOOST_AUTO_TEST_CASE(the_rendered_sms_length_is_limited_in_characters) {
  request_limits limits;
  limits.body_character_limits = {{"sms", 20}};
  BOOST_TEST(render(otp(), "zh-CN", "sms", params, limits).body.size() > 20u); // bytes, not chars
  auto result =
      render_definition(otp(), "en", "sms", {{"code", std::string(10, '9')}}, limits, "otp");
  BOOST_TEST_REQUIRE(std::holds_alternative<validation_error>(result));
  BOOST_TEST(std::get<validation_error>(result).code == "text_too_long");
  // Only the limited channels are limited.
  BOOST_TEST(
      render(otp(), "en", "email", {{"code", std::string(100, '9')}, {"minutes", "5"}}, limits)
          .body.size() > 100u);
}

BOOST_AUTO_TEST_CASE(a_text_rendering_past_its_bound_is_refused) {
  auto d = otp();
  d.locales["en"].body = std::string();
  for (int i = 0; i < 100; ++i) // 100 placeholders of a 1 KiB value: 100 KiB
    d.locales["en"].body += "${code}";
  auto result = render_definition(d, "en", "email", {{"code", std::string(1024, '9')}}, {}, "otp");
  BOOST_TEST_REQUIRE(std::holds_alternative<validation_error>(result));
  BOOST_TEST(std::get<validation_error>(result).code == "text_too_long");
  BOOST_TEST(render(d, "en", "email", {{"code", "1"}}).body.size() == 100U); // short values pass
}

BOOST_AUTO_TEST_CASE(a_definition_holds_a_bounded_number_of_locales) {
  auto d = otp();
  for (std::size_t i = d.locales.size(); i < max_template_locales; ++i)
    d.locales[std::string{static_cast<char>('a' + i / 26), static_cast<char>('a' + i % 26)}] =
        locale_text{"", "b", {}};
  BOOST_TEST(!check_definition(d, channels, {}).has_value());
  d.locales["zz"] = locale_text{"", "b", {}};
  BOOST_TEST(refusal(d).field == "locales");
}

BOOST_AUTO_TEST_CASE(placeholders_are_listed_with_character_positions) {
  const auto found = placeholders_of("验证码${code}，{{ minutes }}");
  BOOST_TEST_REQUIRE(found.size() == 2u);
  BOOST_TEST(found[0].name == "code");
  BOOST_TEST(found[0].position == 4u);
  BOOST_TEST(found[1].name == "minutes");
  BOOST_TEST(found[1].position == 12u);
}

BOOST_AUTO_TEST_CASE(the_catalog_keeps_the_newest_version_per_tenant_and_code) {
  template_catalog catalog;
  catalog.put(stored_template{"t1", "otp", 2, otp(), {}});
  catalog.put(stored_template{"t1", "otp", 1, otp(), {}}); // a late, older answer
  catalog.put(stored_template{"t2", "otp", 7, otp(), {}});
  BOOST_TEST(catalog.find("t1", "otp")->version == 2u);
  BOOST_TEST(catalog.find("t2", "otp")->version == 7u);
  BOOST_TEST(catalog.find("t1", "other") == nullptr);
  catalog.erase("t1", "otp");
  BOOST_TEST(catalog.find("t1", "otp") == nullptr);
  BOOST_TEST(catalog.size() == 1u);
}

BOOST_AUTO_TEST_CASE(template_codes_are_plain_names) {
  BOOST_TEST(is_template_code("order_shipped.v2-a"));
  BOOST_TEST(!is_template_code(""));
  BOOST_TEST(!is_template_code("a/b"));
  BOOST_TEST(!is_template_code(std::string(65, 'a')));
}

BOOST_AUTO_TEST_SUITE_END()
