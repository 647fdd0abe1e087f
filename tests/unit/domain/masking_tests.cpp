#include "domain/masking.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::domain;

BOOST_AUTO_TEST_SUITE(masking_tests)

BOOST_AUTO_TEST_CASE(phone_keeps_prefix_and_last_four) {
  BOOST_TEST(mask_phone("+8613800000000") == "+86138****0000");
  BOOST_TEST(mask_phone("+8613812345678") == "+86138****5678");
}

BOOST_AUTO_TEST_CASE(long_phone_hides_every_middle_character) {
  BOOST_TEST(mask_phone("+441234567890123") == "+44123******0123");
}

BOOST_AUTO_TEST_CASE(prefix_shrinks_so_at_least_three_characters_stay_hidden) {
  // Eleven digits without '+': five leading and four trailing would leave two hidden.
  BOOST_TEST(mask_phone("13812345678") == "1381****5678");
  BOOST_TEST(mask_phone("+14155550123") == "+1415****0123");
}

BOOST_AUTO_TEST_CASE(short_phone_hides_everything) {
  BOOST_TEST(mask_phone("") == "***");
  BOOST_TEST(mask_phone("+123456") == "***");
  BOOST_TEST(mask_phone("1234567") == "***");
}

BOOST_AUTO_TEST_CASE(phone_just_long_enough_still_hides_the_middle) {
  // Eight characters: never show more than a leading character and the last four.
  BOOST_TEST(mask_phone("12345678") == "1****5678");
  BOOST_TEST(mask_phone("+1234567") == "+****4567");
}

BOOST_AUTO_TEST_CASE(email_keeps_first_letter_and_domain) {
  BOOST_TEST(mask_email("alice@example.com") == "a***@example.com");
  BOOST_TEST(mask_email("a@b.c") == "a***@b.c");
  BOOST_TEST(mask_email("odd@local@example.com") == "o***@example.com");
}

BOOST_AUTO_TEST_CASE(invalid_email_is_hidden) {
  BOOST_TEST(mask_email("") == "***");
  BOOST_TEST(mask_email("alice") == "***");
  BOOST_TEST(mask_email("@example.com") == "***");
  BOOST_TEST(mask_email("alice@") == "***");
}

BOOST_AUTO_TEST_CASE(token_keeps_prefix_and_length) {
  BOOST_TEST(mask_token("device-token-1") == "dev***(14)");
  BOOST_TEST(mask_token("oAbC123") == "oAb***(7)");
  BOOST_TEST(mask_token("abcde") == "abc***(5)");
  BOOST_TEST(mask_token("abcd") == "***");
  BOOST_TEST(mask_token("") == "***");
}

BOOST_AUTO_TEST_CASE(recipient_picks_the_mask_by_shape) {
  BOOST_TEST(mask_recipient("alice@example.com") == "a***@example.com");
  BOOST_TEST(mask_recipient("+8613800000000") == "+86138****0000");
  BOOST_TEST(mask_recipient("+1 (415) 555-0123") == "+1 (41*******0123");
  BOOST_TEST(mask_recipient("device-token-1") == "dev***(14)");
  BOOST_TEST(mask_recipient("oAbC123") == "oAb***(7)");
  // Too few characters for a phone number: treated as a token.
  BOOST_TEST(mask_recipient("12345") == "123***(5)");
  BOOST_TEST(mask_recipient("+12345") == "+12***(6)");
  BOOST_TEST(mask_recipient("123456") == "***"); // a phone, but too short to show any of it
  BOOST_TEST(mask_recipient("https://hooks.example.com/x") == "htt***(27)");
}

BOOST_AUTO_TEST_SUITE_END()
