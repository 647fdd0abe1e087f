#include "domain/template_text.hpp"

#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace herald::domain;

namespace {

const std::map<std::string, std::string> params = {
    {"a", "1"}, {"b_c", "two"}, {"order.no", "A-7"}, {"x-y", "z"}};

std::string rendered(const std::string& text, const std::map<std::string, std::string>& with) {
  auto result = render_template(text, with);
  BOOST_TEST_REQUIRE(std::holds_alternative<std::string>(result),
                     "'" << text << "' did not render");
  return std::get<std::string>(result);
}

} // namespace

BOOST_AUTO_TEST_SUITE(template_text_tests)

BOOST_AUTO_TEST_CASE(placeholders_render_in_both_forms) {
  struct row {
    const char* text;
    const char* expected;
  };
  for (const auto& [text, expected] : std::vector<row>{
           {"", ""},
           {"no placeholders", "no placeholders"},
           {"${a}", "1"},
           {"${a}-${b_c}-${order.no}-${x-y}", "1-two-A-7-z"},
           {"{{a}}-{{ b_c }}-{{a  }}", "1-two-1"},
           {"${a} and {{a}}", "1 and 1"},
           {"price: $5, $ ${a}", "price: $5, $ 1"},
           {"$${a} is how you write ${a}", "${a} is how you write 1"},
           {"Total: $$${a}", "Total: $1"},
           {"$$5 and $$$", "$5 and $$"},
           {"ünïcode ${a} 中文", "ünïcode 1 中文"},
       })
    BOOST_TEST(rendered(text, params) == expected, "'" << text << "'");
}

BOOST_AUTO_TEST_CASE(double_braces_around_anything_but_a_name_stay_text) {
  for (const char* text : {"{a}", "{{", "}}", "{{ }}", "{{a", "{{a b}}", "{{a} }", "{ {a}}"})
    BOOST_TEST(rendered(text, params) == text);
  BOOST_TEST(rendered("{{{a}}}", params) == "{1}");
  BOOST_TEST(rendered("{{ x y }} {{a}}", params) == "{{ x y }} 1");
  BOOST_TEST(rendered("{${a}}", params) == "{1}");
}

BOOST_AUTO_TEST_CASE(values_are_data_and_never_rescanned) {
  const std::map<std::string, std::string> hostile = {{"a", "${b}"},
                                                      {"b", "{{b}}"},
                                                      {"c", "line\r\nInjected: yes"},
                                                      {"d", "<script>x</script>"},
                                                      {"e", "$${b}"}};
  BOOST_TEST(rendered("${a}|{{a}}|${b}|${e}", hostile) == "${b}|${b}|{{b}}|$${b}");
  BOOST_TEST(rendered("${c}", hostile) == "line\r\nInjected: yes");
  BOOST_TEST(rendered("${d}", hostile) == "<script>x</script>");
}

BOOST_AUTO_TEST_CASE(the_first_missing_parameter_is_named) {
  for (const auto& [text, name] :
       std::vector<std::pair<std::string, std::string>>{{"${a} ${missing} ${other}", "missing"},
                                                        {"{{a}} {{missing}} ${other}", "missing"},
                                                        {"${other} {{missing}}", "other"}}) {
    auto result = render_template(text, params);
    BOOST_TEST_REQUIRE(std::holds_alternative<missing_parameter>(result), text);
    BOOST_TEST(std::get<missing_parameter>(result).name == name);
  }
}

BOOST_AUTO_TEST_CASE(broken_dollar_placeholders_are_refused_with_their_position) {
  struct row {
    const char* text;
    std::size_t position;
    const char* says;
  };
  for (const auto& [text, position, says] : std::vector<row>{
           {"${", 1, "is not closed"},
           {"Hello ${name", 7, "is not closed"},
           {"${}", 1, "names no parameter"},
           {"ab ${a b}", 7, "may only contain"},
           {"${a}${ a}", 7, "may only contain"},
           {"${a${b}", 4, "may only contain"},
           {"中文 ${é}", 6, "may only contain"}, // counted in characters, not bytes
           {"{{ok}} then ${", 13, "is not closed"},
       }) {
    const auto error = check_template(text);
    BOOST_TEST_REQUIRE(error.has_value(), "'" << text << "' was accepted");
    BOOST_TEST(error->position == position, "'" << text << "'");
    BOOST_TEST(error->message.find(says) != std::string::npos, error->message);
    // Rendering refuses the same text the same way, whatever the parameters.
    auto result = render_template(text, params);
    BOOST_TEST_REQUIRE(std::holds_alternative<template_syntax_error>(result));
    BOOST_TEST(std::get<template_syntax_error>(result).position == position);
  }
}

BOOST_AUTO_TEST_CASE(valid_templates_pass_the_check) {
  for (const char* text :
       {"", "plain", "${a}", "{{ a }}", "$${a}", "{{ not a name }}", "$", "}", "{{", "a $ b { c }"})
    BOOST_TEST(!check_template(text).has_value(), "'" << text << "'");
}

BOOST_AUTO_TEST_SUITE_END()
