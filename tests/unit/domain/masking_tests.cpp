#include "domain/masking.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::domain;

BOOST_AUTO_TEST_SUITE(masking_tests)

BOOST_AUTO_TEST_CASE(phone_shows_at_most_the_last_four_digits) {
  BOOST_TEST(mask_phone("+8613800000000") == "***0000");
  BOOST_TEST(mask_phone("+8613812345678") == "***5678");
  BOOST_TEST(mask_phone("+441234567890123") == "***0123");
  BOOST_TEST(mask_phone("13812345678") == "***5678");
  BOOST_TEST(mask_phone("+1 (415) 555-0123") == "***0123");
  BOOST_TEST(mask_phone("12345678") == "***5678");
}

BOOST_AUTO_TEST_CASE(short_phone_hides_everything) {
  BOOST_TEST(mask_phone("") == "***");
  BOOST_TEST(mask_phone("+123456") == "***");
  BOOST_TEST(mask_phone("1234567") == "***");
  BOOST_TEST(mask_phone("+(1)-( )") == "***"); // long enough, but no four digits to show
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
  // Phone numbers: never more than the last four digits (the country and carrier prefix too
  // narrow a number down).
  BOOST_TEST(mask_recipient("+8613800000000") == "***0000");
  BOOST_TEST(mask_recipient("+1 (415) 555-0123") == "***0123");
  BOOST_TEST(mask_recipient("device-token-1") == "dev***(14)");
  BOOST_TEST(mask_recipient("oAbC123") == "oAb***(7)");
  // Too few characters for a phone number: treated as a token.
  BOOST_TEST(mask_recipient("12345") == "123***(5)");
  BOOST_TEST(mask_recipient("+12345") == "+12***(6)");
  BOOST_TEST(mask_recipient("123456") == "***"); // a phone, but too short to show any of it
  BOOST_TEST(mask_recipient("https://hooks.example.com/x") == "htt***(27)");
}

BOOST_AUTO_TEST_CASE(url_hides_credentials_query_values_and_fragment) {
  BOOST_TEST(mask_url("https://alice:hunter2@hooks.example.com/sms?token=abc&v=1#frag") ==
             "https://***@hooks.example.com/sms?token=***&v=***#***");
  BOOST_TEST(mask_url("http://127.0.0.1:9100/sms") == "http://127.0.0.1:9100/sms");
  BOOST_TEST(mask_url("https://user@host") == "https://***@host");
  BOOST_TEST(mask_url("https://host/a?flag") == "https://host/a?flag");
  BOOST_TEST(mask_url("https://host/a?") == "https://host/a?");
  // A token in the path (chat webhooks) is hidden; ordinary segments stay.
  BOOST_TEST(mask_url("https://hooks.example.com/services/T0001/B0002/aZ3kP9qLm2Xw7Rt5Yv8Nc1Hd") ==
             "https://hooks.example.com/services/T0001/B0002/***");
  BOOST_TEST(mask_url("not a url:secret@x") == "***@x");
}

BOOST_AUTO_TEST_CASE(free_text_masks_phones_to_the_last_four_digits) {
  BOOST_TEST(mask_free_text("unknown number +8613812345678") == "unknown number ***5678");
  BOOST_TEST(mask_free_text("to 13812345678, retry") == "to ***5678, retry");
  BOOST_TEST(mask_free_text("call +1 (415) 555-0123 now") == "call ***0123 now");
  // Short numbers are status codes, counts and durations, not phone numbers.
  BOOST_TEST(mask_free_text("endpoint unavailable (503) after 2000 ms") ==
             "endpoint unavailable (503) after 2000 ms");
  BOOST_TEST(mask_free_text("Failed to connect to 127.0.0.1 port 9100") ==
             "Failed to connect to 127.0.0.1 port 9100");
  // Text that starts with digits (a sanitizer build caught a read before the first byte here).
  BOOST_TEST(mask_free_text("503 Service Unavailable") == "503 Service Unavailable");
  BOOST_TEST(mask_free_text("13812345678 is not reachable") == "***5678 is not reachable");
  BOOST_TEST(mask_free_text("7") == "7");
}

BOOST_AUTO_TEST_CASE(free_text_masks_emails) {
  BOOST_TEST(mask_free_text("mailbox alice.b+tag@example.co.uk is full.") ==
             "mailbox a***@example.co.uk is full.");
  BOOST_TEST(mask_free_text(R"({"to":"bob@example.com"})") == R"({"to":"b***@example.com"})");
  BOOST_TEST(mask_free_text("user@localhost") == "user@localhost"); // no domain: not an address
}

BOOST_AUTO_TEST_CASE(free_text_masks_credentials) {
  BOOST_TEST(mask_free_text("Authorization: Bearer eyJhbGci.eyJzdWIi.sig") ==
             "Authorization: Bearer ***");
  BOOST_TEST(mask_free_text("basic dXNlcjpwYXNz rejected") == "basic *** rejected");
  BOOST_TEST(mask_free_text("bad request: token=abc123&user=u1") ==
             "bad request: token=***&user=u1");
  BOOST_TEST(mask_free_text(R"({"api_key": "k-1", "secret":"s", "password" : 'p'})") ==
             R"({"api_key": "***", "secret":"***", "password" : '***'})");
  BOOST_TEST(mask_free_text("X-Signature=v1,abc") == "X-Signature=***,abc");
}

BOOST_AUTO_TEST_CASE(free_text_masks_long_hex_and_base64_runs) {
  BOOST_TEST(mask_free_text("key 0123456789abcdef0123456789abcdef used") == "key *** used");
  BOOST_TEST(mask_free_text("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw refused") == "*** refused");
  BOOST_TEST(mask_free_text("id tsk_0123456789abcdef01234567") == "id ***");
  // Words, even long ones, are not secrets.
  BOOST_TEST(mask_free_text("Service-Unavailable_temporarily_overloaded") ==
             "Service-Unavailable_temporarily_overloaded");
  BOOST_TEST(mask_free_text("deadbeef") == "deadbeef");
}

BOOST_AUTO_TEST_CASE(free_text_masks_urls) {
  BOOST_TEST(mask_free_text("POST https://u:p@hooks.example.com/x?sig=abc failed") ==
             "POST https://***@hooks.example.com/x?sig=*** failed");
}

BOOST_AUTO_TEST_CASE(free_text_masks_percent_encoded_phones) {
  BOOST_TEST(mask_free_text("invalid To=%2B8613812345678&From=x") == "invalid To=***5678&From=x");
  BOOST_TEST(mask_free_text("To=%252B8613812345678") == "To=***5678"); // encoded twice
  BOOST_TEST(mask_free_text("To=+8613812345678") == "To=***5678");
}

BOOST_AUTO_TEST_CASE(free_text_masks_percent_encoded_emails) {
  BOOST_TEST(mask_free_text("no mailbox alice%40example.com") == "no mailbox a***@example.com");
  BOOST_TEST(mask_free_text("alice%2540example.com") == "a***@example.com"); // encoded twice
  BOOST_TEST(mask_free_text("alice%2Btag%40example.com") == "a***@example.com");
}

BOOST_AUTO_TEST_CASE(free_text_masks_json_and_html_escaped_emails) {
  BOOST_TEST(mask_free_text(R"({"to":"alice\u0040example.com"})") ==
             R"({"to":"a***@example.com"})");
  BOOST_TEST(mask_free_text("alice&#64;example.com") == "a***@example.com");
  BOOST_TEST(mask_free_text("alice&#x40;example.com") == "a***@example.com");
}

BOOST_AUTO_TEST_CASE(free_text_masks_phones_split_by_dots) {
  BOOST_TEST(mask_free_text("call 138.1234.5678 now") == "call ***5678 now");
}

BOOST_AUTO_TEST_CASE(free_text_masks_phones_split_by_slashes) {
  BOOST_TEST(mask_free_text("to 138/1234/5678") == "to ***5678");
}

BOOST_AUTO_TEST_CASE(free_text_masks_phones_split_by_form_spaces) {
  BOOST_TEST(mask_free_text("to 138+1234+5678") == "to ***5678");
  BOOST_TEST(mask_free_text("to 138 - 1234 - 5678") == "to ***5678");
}

BOOST_AUTO_TEST_CASE(free_text_masks_phones_glued_to_letters) {
  BOOST_TEST(mask_free_text("to 8613812345678x refused") == "to ***5678x refused");
  BOOST_TEST(mask_free_text("to x8613812345678 refused") == "to x***5678 refused");
  // Past E.164's fifteen digits: a card number, or two numbers run together.
  BOOST_TEST(mask_free_text("card 4111 1111 1111 1111") == "card ***1111");
}

BOOST_AUTO_TEST_CASE(free_text_keeps_addresses_times_and_ids_readable) {
  BOOST_TEST(mask_free_text("no route to 192.168.100.200 at 2026-09-07T10:00:00Z") ==
             "no route to 192.168.100.200 at 2026-09-07T10:00:00Z");
  BOOST_TEST(mask_free_text("since 2016-09-13T20:49:03.000000Z, 12:00:00.1234567") ==
             "since 2016-09-13T20:49:03.000000Z, 12:00:00.1234567");
  BOOST_TEST(mask_free_text("rid: 61076919-303049b3-32283a08") ==
             "rid: 61076919-303049b3-32283a08");
  BOOST_TEST(mask_free_text("id 550e8400-e29b-41d4-a716-446655440000") ==
             "id 550e8400-e29b-41d4-a716-446655440000");
  // Hex letters glued to a number do not make it an identifier.
  BOOST_TEST(mask_free_text("to 8613812345678abc") == "to ***5678abc");
  BOOST_TEST(mask_free_text("to 138-1234-5678-abcd") == "to ***5678-abcd");
  BOOST_TEST(mask_free_text("from 10.0.0.1 8613812345678") == "from 10.0.0.1 ***5678");
  BOOST_TEST(mask_free_text("1.2.3.4.5.6.7") == "***4567"); // not an address
}

BOOST_AUTO_TEST_CASE(free_text_masks_credentials_by_their_prefix) {
  // Too short for a random-looking run, but the prefix names the kind: a cut key is a key.
  BOOST_TEST(mask_free_text("key sk_live_51HxYz rejected") == "key *** rejected");
  BOOST_TEST(mask_free_text("sk_test_4eC39HqLyjWDarjtT1zdp7dc") == "***");
  BOOST_TEST(mask_free_text("token xoxb-1234-abcd invalid") == "token *** invalid");
  BOOST_TEST(mask_free_text("AKIAIOSFODNN7EXAMPLE denied") == "*** denied");
}

BOOST_AUTO_TEST_CASE(free_text_masks_jwts) {
  BOOST_TEST(mask_free_text("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1LTEyMyJ9.c2ln expired") ==
             "jwt *** expired");
  BOOST_TEST(mask_free_text("Authorization%3A%20Bearer%20abc.def") == "Authorization: Bearer ***");
}

BOOST_AUTO_TEST_CASE(free_text_masks_twilio_sids_and_auth_tokens) {
  BOOST_TEST(mask_free_text("account AC0123456789abcdef0123456789abcdef auth token "
                            "0123456789abcdef0123456789abcdef refused") ==
             "account *** auth token *** refused");
  BOOST_TEST(mask_free_text("AuthToken=0123456789abcdef") == "AuthToken=***");
}

BOOST_AUTO_TEST_CASE(free_text_is_masked_before_it_is_cut) {
  // A secret and a phone number across the cut: neither's start may stay in clear.
  const std::string filler(185, 'a');
  const auto secret = mask_free_text(filler + " sk_live_51HxYzAbCdEfGhIjKlMnOpQrStUvWxYz", 200);
  BOOST_TEST(secret == filler + " ***");
  const auto phone = mask_free_text(filler + " +8613812345678 more text", 196);
  BOOST_TEST(phone.find("86138") == std::string::npos, phone);
  BOOST_TEST(phone.size() <= 196u);
  const auto email = mask_free_text(std::string(190, 'b') + " alice@example.com", 200);
  BOOST_TEST(email.find("alice") == std::string::npos, email);
}

BOOST_AUTO_TEST_CASE(free_text_undoes_four_layers_of_percent_encoding) {
  BOOST_TEST(mask_free_text("alice%25252540example.com") == "a***@example.com");
}

BOOST_AUTO_TEST_CASE(free_text_is_printable_utf8) {
  BOOST_TEST(mask_free_text(std::string("a\0b\nc\x7f", 6)) == "a?b?c?");
  BOOST_TEST(mask_free_text("caf\xC3\xA9 \xC3 \xE2\x82") == "caf\xC3\xA9 ? ??");
  BOOST_TEST(mask_free_text("\xED\xA0\x80") == "???"); // a UTF-16 surrogate is not UTF-8
  BOOST_TEST(mask_free_text("\xF0\x9F\x93\xA8 sent") == "\xF0\x9F\x93\xA8 sent");
}

BOOST_AUTO_TEST_CASE(free_text_is_cut_on_a_utf8_boundary) {
  BOOST_TEST(mask_free_text(std::string(512, 'a')) == std::string(512, 'a'));
  BOOST_TEST(mask_free_text(std::string(513, 'a')) == std::string(509, 'a') + "...");
  // 'é' is two bytes: a cut inside it moves back to the character's start.
  std::string accents;
  for (int i = 0; i < 300; ++i)
    accents += "\xC3\xA9";
  const auto cut = mask_free_text(accents);
  BOOST_TEST(cut.size() <= 512u);
  BOOST_TEST(cut == accents.substr(0, 508) + "...");
  BOOST_TEST(mask_free_text("abcdef", 5) == "ab...");
  BOOST_TEST(mask_free_text("abcdef", 2) == "ab");
}

BOOST_AUTO_TEST_SUITE_END()
