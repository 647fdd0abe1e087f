#include "domain/api_key.hpp"
#include "providers/webhook_signature.hpp"

#include <string>

#include <boost/test/unit_test.hpp>

using namespace herald::providers;

BOOST_AUTO_TEST_SUITE(webhook_signature_tests)

// The known-answer vector of the Standard Webhooks reference libraries' tests.
BOOST_AUTO_TEST_CASE(known_answer_vector_of_the_standard) {
  const auto key = decode_webhook_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  BOOST_REQUIRE(key.has_value());
  BOOST_TEST(key->size() == 24u);
  BOOST_TEST(
      sign_webhook(*key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})") ==
      "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

BOOST_AUTO_TEST_CASE(every_part_of_the_content_is_signed) {
  const auto key = *decode_webhook_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  const auto reference = sign_webhook(key, "msg_1", 1614265330, "{}");
  BOOST_TEST(sign_webhook(key, "msg_2", 1614265330, "{}") != reference);
  BOOST_TEST(sign_webhook(key, "msg_1", 1614265331, "{}") != reference);
  BOOST_TEST(sign_webhook(key, "msg_1", 1614265330, "{ }") != reference);
  BOOST_TEST(sign_webhook(key + "x", "msg_1", 1614265330, "{}") != reference);
  BOOST_TEST(sign_webhook(key, "msg_1", 1614265330, "{}") == reference);
}

BOOST_AUTO_TEST_CASE(secrets_with_padding_decode_to_the_exact_bytes) {
  BOOST_TEST(*decode_webhook_secret("whsec_YQ==") == "a");
  BOOST_TEST(*decode_webhook_secret("whsec_YWI=") == "ab");
  BOOST_TEST(*decode_webhook_secret("whsec_YWJj") == "abc");
  const std::string binary("\x00\xff\x10", 3);
  BOOST_TEST(*decode_webhook_secret("whsec_" + base64_encode(binary)) == binary);
}

BOOST_AUTO_TEST_CASE(malformed_secrets_are_refused) {
  for (const char* bad :
       {"", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", // not a multiple of 4
        "whsec_MfKQ9r8GKYqrTwjUPD8I LPZIo2LaLaSw", "whsec_ MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "whsec_Y===", "whsec_Y=Q=", "whsec_====", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa-_"})
    BOOST_TEST(!decode_webhook_secret(bad).has_value(), "accepted " << bad);
}

BOOST_AUTO_TEST_CASE(base64_round_trip) {
  BOOST_TEST(base64_encode("") == "");
  BOOST_TEST(base64_encode("a") == "YQ==");
  BOOST_TEST(base64_encode("abcd") == "YWJjZA==");
}

// RFC 2202 §3, test case 2.
BOOST_AUTO_TEST_CASE(hmac_sha1_known_answer) {
  BOOST_TEST(herald::domain::to_hex(hmac_sha1("Jefe", "what do ya want for nothing?")) ==
             "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
}

BOOST_AUTO_TEST_CASE(signatures_match_only_when_equal) {
  BOOST_TEST(same_signature("abc", "abc"));
  BOOST_TEST(!same_signature("abc", "abd"));
  BOOST_TEST(!same_signature("abc", "ab"));
  BOOST_TEST(!same_signature("abc", "abcd"));
  BOOST_TEST(!same_signature("abc", ""));
  BOOST_TEST(same_signature("", ""));
}

BOOST_AUTO_TEST_SUITE_END()
