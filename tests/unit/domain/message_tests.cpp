#include "domain/message.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::domain;

BOOST_AUTO_TEST_SUITE(message_tests)

BOOST_AUTO_TEST_CASE(priority_round_trips) {
  for (priority value : {priority::high, priority::normal, priority::low}) {
    const auto parsed = parse_priority(to_string(value));
    BOOST_REQUIRE(parsed.has_value());
    BOOST_TEST((*parsed == value));
  }
  BOOST_TEST(to_string(priority::high) == "high");
  BOOST_TEST(to_string(priority::normal) == "normal");
  BOOST_TEST(to_string(priority::low) == "low");
}

BOOST_AUTO_TEST_CASE(category_round_trips) {
  for (category value :
       {category::verification, category::transactional, category::marketing, category::system}) {
    const auto parsed = parse_category(to_string(value));
    BOOST_REQUIRE(parsed.has_value());
    BOOST_TEST((*parsed == value));
  }
  BOOST_TEST(to_string(category::verification) == "verification");
  BOOST_TEST(to_string(category::transactional) == "transactional");
  BOOST_TEST(to_string(category::marketing) == "marketing");
  BOOST_TEST(to_string(category::system) == "system");
}

BOOST_AUTO_TEST_CASE(unknown_text_is_refused) {
  for (const char* text : {"", "HIGH", "urgent", "normal ", "medium"})
    BOOST_TEST(!parse_priority(text).has_value(), text);
  for (const char* text : {"", "Marketing", "promo", "system\n"})
    BOOST_TEST(!parse_category(text).has_value(), text);
}

BOOST_AUTO_TEST_SUITE_END()
