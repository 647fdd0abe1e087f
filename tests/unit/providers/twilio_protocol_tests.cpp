#include "providers/twilio_protocol.hpp"

#include <cstdint>
#include <random>
#include <string>

#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace herald::providers;
using namespace std::chrono_literals;

namespace {

// The parameters of the signature vectors in twilio-python's tests
// (tests/unit/test_request_validator.py).
const std::string signed_url = "https://mycompany.com/myapp.php?foo=1&bar=2";
const name_values signed_params = {{"CallSid", "CA1234567890ABCDE"},
                                   {"Digits", "1234"},
                                   {"From", "+14158675309"},
                                   {"To", "+18005551212"},
                                   {"Caller", "+14158675309"}};

} // namespace

BOOST_AUTO_TEST_SUITE(twilio_protocol_tests)

// Expected values from Python's urllib.parse.quote with the unreserved set.
BOOST_AUTO_TEST_CASE(form_encode_golden) {
  BOOST_TEST(form_encode({{"To", "+15551234567"},
                          {"Body", "Hi there & welcome \xE2\x9C\x93"},
                          {"a b", "c=d~*"}}) ==
             "To=%2B15551234567&Body=Hi%20there%20%26%20welcome%20%E2%9C%93&a%20b=c%3Dd~%2A");
  BOOST_TEST(form_encode({}) == "");
  BOOST_TEST(form_encode({{"Empty", ""}}) == "Empty=");
}

BOOST_AUTO_TEST_CASE(form_decode_golden) {
  const auto params = form_decode("MessageSid=SM123&MessageStatus=delivered&Body=Hi+there%21"
                                  "&Empty=&NoEquals&&To=%2b1%20(555)&Eq=a=b");
  BOOST_REQUIRE(params.has_value());
  const name_values expected = {{"MessageSid", "SM123"},
                                {"MessageStatus", "delivered"},
                                {"Body", "Hi there!"},
                                {"Empty", ""},
                                {"NoEquals", ""},
                                {"To", "+1 (555)"},
                                {"Eq", "a=b"}};
  BOOST_TEST((*params == expected));
  BOOST_TEST(form_decode("")->empty());
  BOOST_TEST((*form_decode("a=1&a=2") == name_values{{"a", "1"}, {"a", "2"}}));
}

BOOST_AUTO_TEST_CASE(malformed_percent_escapes_are_refused) {
  for (const char* bad : {"a=%", "a=%4", "a=%zz", "%G1=x", "a=1&b=%2", "a=%%41"})
    BOOST_TEST(!form_decode(bad).has_value(), "accepted " << bad);
}

BOOST_AUTO_TEST_CASE(form_round_trip_of_every_byte) {
  std::string all_bytes;
  for (int byte = 0; byte < 256; ++byte)
    all_bytes.push_back(static_cast<char>(byte));
  const name_values params = {{all_bytes, all_bytes}, {"", "x"}, {"y", ""}};
  const auto decoded = form_decode(form_encode(params));
  BOOST_REQUIRE(decoded.has_value());
  BOOST_TEST((*decoded == name_values{{all_bytes, all_bytes}, {"", "x"}, {"y", ""}}));
}

// Known answers from twilio-python's RequestValidator tests (auth token "12345").
BOOST_AUTO_TEST_CASE(signature_known_answers) {
  BOOST_TEST(twilio_signature("12345", signed_url, signed_params) ==
             "RSOYDt4T1cUTdK1PDd93/VVr8B8=");
  // Repeated names: sorted by name, then by value.
  const name_values repeated = {
      {"Sid", "CA123"}, {"SidAccount", "AC123"}, {"Digits", "5678"}, {"Digits", "1234"}};
  BOOST_TEST(twilio_signature("12345", signed_url, repeated) == "IK+Dwps556ElfBT0I3Rgjkr1wJU=");
}

BOOST_AUTO_TEST_CASE(signature_verification) {
  const std::string good = "RSOYDt4T1cUTdK1PDd93/VVr8B8=";
  BOOST_TEST(verify_twilio_signature("12345", signed_url, signed_params, good));
  auto reordered = signed_params;
  std::swap(reordered.front(), reordered.back());
  BOOST_TEST(verify_twilio_signature("12345", signed_url, reordered, good));
  auto changed = signed_params;
  changed[1].second = "9999";
  BOOST_TEST(!verify_twilio_signature("12345", signed_url, changed, good));
  auto extra = signed_params;
  extra.emplace_back("ErrorCode", "");
  BOOST_TEST(!verify_twilio_signature("12345", signed_url, extra, good));
  BOOST_TEST(!verify_twilio_signature("12346", signed_url, signed_params, good));
  BOOST_TEST(!verify_twilio_signature("12345", signed_url + "&baz=3", signed_params, good));
  BOOST_TEST(!verify_twilio_signature("12345", signed_url, signed_params, good.substr(1)));
  BOOST_TEST(!verify_twilio_signature("12345", signed_url, signed_params, ""));
}

// Expected values from Python's urllib.parse.quote with the unreserved set.
BOOST_AUTO_TEST_CASE(message_create_body_golden) {
  twilio_message message{"+15557654321", "+15551234567", "Your code is 1234",
                         "https://herald.example.com/v1/receipts/twilio?channel=sms"};
  BOOST_TEST(message_create_body(message) ==
             "To=%2B15551234567&From=%2B15557654321&Body=Your%20code%20is%201234"
             "&StatusCallback=https%3A%2F%2Fherald.example.com%2Fv1%2Freceipts%2Ftwilio%3F"
             "channel%3Dsms");
  message.sender = "MG0123456789abcdef0123456789abcdef";
  message.status_callback_url.clear();
  BOOST_TEST(message_create_body(message) ==
             "To=%2B15551234567&MessagingServiceSid=MG0123456789abcdef0123456789abcdef"
             "&Body=Your%20code%20is%201234");
  // Not a Messaging Service SID: too short, another prefix, not hex.
  for (const char* sender : {"MG0123", "MGx123456789abcdef0123456789abcdef",
                             "PN0123456789abcdef0123456789abcdef", "HeraldAlerts"}) {
    message.sender = sender;
    BOOST_TEST(message_create_body(message).find("&From=") != std::string::npos, sender);
  }
}

// The golden table: every class of create answer herald distinguishes.
BOOST_AUTO_TEST_CASE(create_answer_table) {
  struct row {
    long http_status;
    std::int64_t code;
    call_outcome outcome;
    bool config_error;
  };
  constexpr auto retryable = call_outcome::retryable, permanent = call_outcome::permanent,
                 throttled = call_outcome::throttled;
  const row table[] = {
      {400, 21211, permanent, false}, // invalid To
      {400, 21610, permanent, false}, // unsubscribed (STOP)
      {400, 21614, permanent, false}, // To is not a mobile number
      {400, 21408, permanent, false}, // region not enabled
      {400, 21606, permanent, true},  // From not usable
      {400, 21659, permanent, true},  // From not a Twilio number
      {400, 21601, permanent, true},  // From not SMS-capable
      {401, 20003, permanent, true},  // authentication
      {401, 20005, permanent, true},  // any code with 401
      {429, 20429, throttled, false}, // too many requests
      {400, 21611, throttled, false}, // From's queue full
      {400, 30001, retryable, false}, // queue overflow
      {400, 99999, permanent, false}, // unknown 4xx code
      {404, 20404, permanent, false},
      {429, 99999, throttled, false}, // unknown code, by HTTP status
      {500, 20500, retryable, false},
      {503, 99999, retryable, false},
  };
  for (const auto& r : table) {
    const auto body = R"({"code":)" + std::to_string(r.code) +
                      R"(,"message":"text","more_info":"https://www.twilio.com/docs/errors/)" +
                      std::to_string(r.code) + R"(","status":)" + std::to_string(r.http_status) +
                      "}";
    const auto answer = classify_twilio_answer(r.http_status, body, 4s);
    BOOST_TEST_CONTEXT("HTTP " << r.http_status << " code " << r.code) {
      BOOST_TEST(to_string(answer.result.outcome) == to_string(r.outcome));
      BOOST_TEST(answer.config_error == r.config_error);
      BOOST_TEST(!answer.token_invalid);
      BOOST_TEST(!answer.quota_exhausted);
      BOOST_TEST(answer.result.retry_after.has_value() == (r.outcome != permanent));
      BOOST_TEST(answer.result.detail == "twilio error " + std::to_string(r.code) + " (HTTP " +
                                             std::to_string(r.http_status) + "): text");
    }
  }
}

BOOST_AUTO_TEST_CASE(created_messages_are_named_by_their_sid) {
  const auto created = classify_twilio_answer(
      201,
      R"({"sid":"SM1f0e8ae6ade43cb3c0ce4525424e404f","status":"queued","error_code":null,)"
      R"("to":"+15551234567","body":"hi"})",
      4s);
  BOOST_TEST(to_string(created.result.outcome) == "success");
  BOOST_TEST(created.result.detail == "SM1f0e8ae6ade43cb3c0ce4525424e404f");
  BOOST_TEST(!created.result.retry_after.has_value());
  // Created, but the answer names no sid: still created.
  for (const char* body : {"", "{", R"({"status":"queued"})", R"({"sid":7})"}) {
    const auto answer = classify_twilio_answer(201, body, 4s);
    BOOST_TEST(to_string(answer.result.outcome) == "success", body);
    BOOST_TEST(answer.result.detail == "", body);
  }
}

BOOST_AUTO_TEST_CASE(error_details_are_masked) {
  const auto answer = classify_twilio_answer(
      400,
      R"({"code":21211,"message":"The 'To' number +15551234567 is not a valid phone number.",)"
      R"("status":400})",
      std::nullopt);
  BOOST_TEST(answer.result.detail ==
             "twilio error 21211 (HTTP 400): The 'To' number ***4567 is not a valid phone number.");
}

BOOST_AUTO_TEST_CASE(answers_without_a_code_follow_classify_http) {
  BOOST_TEST(to_string(classify_twilio_answer(502, "<html>", 4s).result.outcome) == "retryable");
  BOOST_TEST(to_string(classify_twilio_answer(429, "", 4s).result.outcome) == "throttled");
  BOOST_TEST(classify_twilio_answer(429, "", 4s).result.retry_after->count() == 4000);
  const auto refused = classify_twilio_answer(400, R"({"message":"no code"})", 4s);
  BOOST_TEST(to_string(refused.result.outcome) == "permanent");
  BOOST_TEST(refused.result.detail == R"(endpoint refused (400): {"message":"no code"})");
}

BOOST_AUTO_TEST_CASE(status_callback_table) {
  struct row {
    const char* twilio_status;
    provider_status status;
    const char* detail;
  };
  const row table[] = {
      {"queued", provider_status::accepted, ""},
      {"accepted", provider_status::accepted, ""},
      {"scheduled", provider_status::accepted, ""},
      {"sending", provider_status::sent, ""},
      {"sent", provider_status::sent, ""},
      {"delivered", provider_status::delivered, ""},
      {"read", provider_status::read, ""},
      {"undelivered", provider_status::undelivered, "undelivered (twilio error 30003)"},
      {"failed", provider_status::undelivered, "failed (twilio error 30003)"},
      {"canceled", provider_status::undelivered, "canceled (twilio error 30003)"},
  };
  for (const auto& r : table) {
    const auto update = parse_status_callback({{"AccountSid", "AC1"},
                                               {"MessageSid", "SM1f0e8ae6ade43cb3c0ce4525424e404f"},
                                               {"MessageStatus", r.twilio_status},
                                               {"ErrorCode", "30003"}});
    BOOST_REQUIRE_MESSAGE(update.has_value(), r.twilio_status);
    BOOST_TEST(update->message_sid == "SM1f0e8ae6ade43cb3c0ce4525424e404f");
    BOOST_TEST(to_string(update->status) == to_string(r.status), r.twilio_status);
    BOOST_TEST(update->detail == r.detail, r.twilio_status);
  }
  const auto without_code = parse_status_callback(
      {{"MessageSid", "SM1"}, {"MessageStatus", "failed"}, {"ErrorCode", "not a code"}});
  BOOST_TEST(without_code->detail == "failed");
}

BOOST_AUTO_TEST_CASE(status_callbacks_that_name_no_outbound_status) {
  const name_values unreadable[] = {
      {{"MessageStatus", "delivered"}},
      {{"MessageSid", ""}, {"MessageStatus", "delivered"}},
      {{"MessageSid", "SM 1"}, {"MessageStatus", "delivered"}},
      {{"MessageSid", "SM1"}},
      {{"MessageSid", "SM1"}, {"MessageStatus", "received"}},
      {{"MessageSid", "SM1"}, {"MessageStatus", "receiving"}},
      {{"MessageSid", "SM1"}, {"MessageStatus", "Delivered"}},
      {},
  };
  for (const auto& params : unreadable)
    BOOST_TEST(!parse_status_callback(params).has_value());
}

BOOST_AUTO_TEST_CASE(message_resource_answers) {
  const auto delivered = parse_message_resource(
      200, R"({"sid":"SM1","status":"delivered","error_code":null,"error_message":null})");
  BOOST_TEST(to_string(delivered.result) == "found");
  BOOST_TEST(to_string(delivered.status) == "delivered");
  BOOST_TEST(delivered.message_id == "SM1");
  BOOST_TEST(delivered.detail == "");

  const auto failed =
      parse_message_resource(200, R"({"sid":"SM2","status":"undelivered","error_code":30003,)"
                                  R"("error_message":"Unreachable destination handset"})");
  BOOST_TEST(to_string(failed.status) == "undelivered");
  BOOST_TEST(failed.detail == "undelivered (twilio error 30003): Unreachable destination handset");

  BOOST_TEST(to_string(parse_message_resource(200, R"({"sid":"SM3","status":"sending"})").status) ==
             "sent");
  BOOST_TEST(to_string(parse_message_resource(404, R"({"code":20404})").result) == "not_found");
  for (const auto& [status, body] : {std::pair<long, std::string>{500, "{}"},
                                     {401, R"({"code":20003})"},
                                     {200, "not json"},
                                     {200, R"({"status":"delivered"})"},
                                     {200, R"({"sid":"SM1","status":"received"})"}}) {
    const auto answer = parse_message_resource(status, body);
    BOOST_TEST(to_string(answer.result) == "unknown", body);
    BOOST_TEST(!answer.detail.empty());
  }
}

BOOST_AUTO_TEST_CASE(random_and_truncated_input_never_throws) {
  const std::string created = R"({"sid":"SM1","status":"queued","code":21211,"error_code":1})";
  for (std::size_t size = 0; size <= created.size(); ++size)
    for (const long status : {200L, 201L, 400L, 404L, 429L, 503L}) {
      BOOST_CHECK_NO_THROW(classify_twilio_answer(status, created.substr(0, size), 1s));
      BOOST_CHECK_NO_THROW(parse_message_resource(status, created.substr(0, size)));
    }
  std::mt19937 random{20261202};
  const char symbols[] = "%+&=abcSM019AF{}\":,\x00\xff ";
  const std::string alphabet(symbols, sizeof symbols - 1);
  for (int round = 0; round < 20000; ++round) {
    std::string input(random() % 80, ' ');
    for (auto& c : input)
      c = alphabet[random() % alphabet.size()];
    BOOST_CHECK_NO_THROW(form_decode(input));
    BOOST_CHECK_NO_THROW(classify_twilio_answer(400, input, std::nullopt));
    BOOST_CHECK_NO_THROW(parse_message_resource(200, input));
    if (const auto params = form_decode(input))
      BOOST_CHECK_NO_THROW(parse_status_callback(*params));
  }
}

BOOST_AUTO_TEST_SUITE_END()
