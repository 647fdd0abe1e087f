#include "providers/push_protocol.hpp"

#include <random>
#include <string>

#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace herald::providers;
using namespace std::chrono_literals;

namespace {

/// An FCM error body: a google.rpc.Status with an FcmError detail when `fcm_code` is not empty.
std::string fcm_error(int code, const std::string& status, const std::string& fcm_code) {
  std::string body = R"({"error":{"code":)" + std::to_string(code) +
                     R"(,"message":"text","status":")" + status + R"(")";
  if (!fcm_code.empty())
    body += R"(,"details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError",)"
            R"("errorCode":")" +
            fcm_code + R"("}])";
  return body + "}}";
}

struct class_row {
  long http_status;
  const char* code; ///< FcmError errorCode (or rpc status) / APNs reason
  call_outcome outcome;
  bool token_invalid;
  bool config_error;
};

void check(const classified_answer& answer, const class_row& row) {
  BOOST_TEST(to_string(answer.result.outcome) == to_string(row.outcome));
  BOOST_TEST(answer.token_invalid == row.token_invalid);
  BOOST_TEST(answer.config_error == row.config_error);
  BOOST_TEST(!answer.quota_exhausted);
  BOOST_TEST(answer.result.retry_after.has_value() == (row.outcome != call_outcome::permanent));
}

constexpr auto retryable = call_outcome::retryable, permanent = call_outcome::permanent,
               throttled = call_outcome::throttled;

} // namespace

BOOST_AUTO_TEST_SUITE(push_protocol_tests)

BOOST_AUTO_TEST_CASE(fcm_send_body_golden) {
  BOOST_TEST(fcm_send_body("bk3RNwTe3H0:CI2k_HHwgIpoDKCIZvvDMExUdFQ3P1", "Order \"42\"", "Shipped",
                           {{"task_id", "tsk_1"}, {"kind", "order"}}) ==
             R"({"message":{"token":"bk3RNwTe3H0:CI2k_HHwgIpoDKCIZvvDMExUdFQ3P1",)"
             R"("notification":{"title":"Order \"42\"","body":"Shipped"},)"
             R"("data":{"task_id":"tsk_1","kind":"order"}}})");
  BOOST_TEST(fcm_send_body("t", "a", "b") ==
             R"({"message":{"token":"t","notification":{"title":"a","body":"b"}}})");
}

// The golden table of FCM answers: the FcmError's errorCode first, error.status otherwise.
BOOST_AUTO_TEST_CASE(fcm_answer_table) {
  const class_row table[] = {
      {404, "UNREGISTERED", permanent, false, false},
      {400, "INVALID_ARGUMENT", permanent, false, false},
      {403, "SENDER_ID_MISMATCH", permanent, false, true},
      {401, "THIRD_PARTY_AUTH_ERROR", permanent, false, true},
      {429, "QUOTA_EXCEEDED", throttled, false, false},
      {503, "UNAVAILABLE", retryable, false, false},
      {500, "INTERNAL", retryable, false, false},
      {400, "UNSPECIFIED_ERROR", permanent, false, false}, // unknown: by HTTP status
      {500, "SOMETHING_NEW", retryable, false, false},
  };
  for (const auto& r : table) {
    BOOST_TEST_CONTEXT(r.code) {
      const auto answer = classify_fcm_answer(r.http_status, fcm_error(0, "IGNORED", r.code), 6s);
      check(answer, r);
      BOOST_TEST(answer.result.detail == "fcm " + std::string{r.code} + " (HTTP " +
                                             std::to_string(r.http_status) + "): text");
    }
  }
  // Without an FcmError detail, error.status classes the answer.
  const class_row by_status[] = {
      {401, "UNAUTHENTICATED", retryable, true, false},
      {403, "PERMISSION_DENIED", permanent, false, true},
      {404, "NOT_FOUND", permanent, false, false},
      {503, "UNAVAILABLE", retryable, false, false},
  };
  for (const auto& r : by_status) {
    BOOST_TEST_CONTEXT(r.code) {
      check(classify_fcm_answer(r.http_status, fcm_error(r.http_status, r.code, ""), 6s), r);
    }
  }
}

// THIRD_PARTY_AUTH_ERROR comes as 401 UNAUTHENTICATED: refreshing the OAuth token cannot help.
BOOST_AUTO_TEST_CASE(fcm_error_code_counts_before_the_rpc_status) {
  const auto answer = classify_fcm_answer(
      401, fcm_error(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"), std::nullopt);
  BOOST_TEST(!answer.token_invalid);
  BOOST_TEST(answer.config_error);
  // Details of other types are passed over.
  const auto bad_request = classify_fcm_answer(
      400,
      R"({"error":{"code":400,"message":"Invalid value","status":"INVALID_ARGUMENT",)"
      R"("details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[]},)"
      R"(7,{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":""}]}})",
      std::nullopt);
  BOOST_TEST(bad_request.result.detail == "fcm INVALID_ARGUMENT (HTTP 400): Invalid value");
}

BOOST_AUTO_TEST_CASE(fcm_success_names_the_message) {
  const auto sent = classify_fcm_answer(
      200, R"({"name":"projects/herald-demo/messages/0:1500415314455276%31bd1c9631bd1c96"})", 6s);
  BOOST_TEST(to_string(sent.result.outcome) == "success");
  BOOST_TEST(sent.result.detail ==
             "projects/herald-demo/messages/0:1500415314455276%31bd1c9631bd1c96");
  BOOST_TEST(!sent.result.retry_after.has_value());
  BOOST_TEST(classify_fcm_answer(200, "", 6s).result.detail == "");
  BOOST_TEST(to_string(classify_fcm_answer(200, "garbage", 6s).result.outcome) == "success");
}

BOOST_AUTO_TEST_CASE(fcm_answers_without_an_error_follow_classify_http) {
  const auto unavailable = classify_fcm_answer(503, "<html>Service Unavailable</html>", 6s);
  BOOST_TEST(to_string(unavailable.result.outcome) == "retryable");
  BOOST_TEST(unavailable.result.retry_after->count() == 6000);
  BOOST_TEST(unavailable.result.detail ==
             "endpoint unavailable (503): <html>Service Unavailable</html>");
  BOOST_TEST(to_string(classify_fcm_answer(400, R"({"error":"text"})", 6s).result.outcome) ==
             "permanent");
  BOOST_TEST(to_string(classify_fcm_answer(429, R"({"error":{}})", 6s).result.outcome) ==
             "throttled");
}

BOOST_AUTO_TEST_CASE(oauth_token_answers) {
  const auto token = parse_oauth_token_answer(
      R"({"access_token":"ya29.c.b0AXv0zTP","expires_in":3599,"token_type":"Bearer"})");
  BOOST_TEST(token.access_token == "ya29.c.b0AXv0zTP");
  BOOST_TEST(token.expires_in.count() == 3599);
  BOOST_TEST(token.error == "");
  const auto refused =
      parse_oauth_token_answer(R"({"error":"invalid_grant","error_description":"Invalid JWT)"
                               R"( Signature."})");
  BOOST_TEST(refused.access_token == "");
  BOOST_TEST(refused.error == "oauth error invalid_grant: Invalid JWT Signature.");
  BOOST_TEST(parse_oauth_token_answer("").error == "oauth token answer unreadable");
  BOOST_TEST(parse_oauth_token_answer(R"({"access_token":"t","expires_in":0})").error != "");
}

BOOST_AUTO_TEST_CASE(apns_payload_golden) {
  BOOST_TEST(apns_payload("Order \"42\"", "Shipped\n") ==
             R"({"aps":{"alert":{"title":"Order \"42\"","body":"Shipped\n"}}})");
}

// The golden table of APNs answers.
BOOST_AUTO_TEST_CASE(apns_answer_table) {
  const class_row table[] = {
      {400, "BadDeviceToken", permanent, false, false},
      {400, "DeviceTokenNotForTopic", permanent, false, false},
      {410, "Unregistered", permanent, false, false},
      {410, "ExpiredToken", permanent, false, false},
      {413, "PayloadTooLarge", permanent, false, false},
      {400, "BadTopic", permanent, false, true},
      {400, "TopicDisallowed", permanent, false, true},
      {400, "MissingTopic", permanent, false, true},
      {403, "BadCertificate", permanent, false, true},
      {403, "BadCertificateEnvironment", permanent, false, true},
      {403, "Forbidden", permanent, false, true},
      {403, "MissingProviderToken", permanent, false, true},
      {403, "ExpiredProviderToken", retryable, true, false},
      {403, "InvalidProviderToken", retryable, true, false},
      {429, "TooManyProviderTokenUpdates", throttled, false, false},
      {429, "TooManyRequests", retryable, false, false},
      {400, "IdleTimeout", retryable, false, false},
      {500, "InternalServerError", retryable, false, false},
      {503, "ServiceUnavailable", retryable, false, false},
      {503, "Shutdown", retryable, false, false},
      {400, "BadCollapseId", permanent, false, false}, // not in the table: by HTTP status
      {405, "MethodNotAllowed", permanent, false, false},
      {503, "SomethingNew", retryable, false, false},
  };
  for (const auto& r : table) {
    BOOST_TEST_CONTEXT(r.code) {
      const auto answer = classify_apns_answer(
          r.http_status, R"({"reason":")" + std::string{r.code} + R"("})", 2s, "ignored-id");
      check(answer, r);
      BOOST_TEST(answer.result.detail ==
                 "apns " + std::string{r.code} + " (HTTP " + std::to_string(r.http_status) + ")");
    }
  }
}

BOOST_AUTO_TEST_CASE(apns_unregistered_names_since_when) {
  const auto answer = classify_apns_answer(
      410, R"({"reason":"Unregistered","timestamp":1473799743000})", std::nullopt, "id");
  BOOST_TEST(answer.result.detail ==
             "apns Unregistered (HTTP 410): inactive since 2016-09-13T20:49:03.000000Z");
  for (const char* odd : {R"({"reason":"Unregistered","timestamp":-5})",
                          R"({"reason":"Unregistered","timestamp":"1473799743000"})",
                          R"({"reason":"Unregistered","timestamp":9223372036854775807})"})
    BOOST_TEST(classify_apns_answer(410, odd, std::nullopt, "id").result.detail ==
               "apns Unregistered (HTTP 410)");
}

BOOST_AUTO_TEST_CASE(apns_success_is_named_by_apns_id) {
  const auto sent = classify_apns_answer(200, "", 2s, "eabeae54-14a8-11e5-b60b-1697f925ec7b");
  BOOST_TEST(to_string(sent.result.outcome) == "success");
  BOOST_TEST(sent.result.detail == "eabeae54-14a8-11e5-b60b-1697f925ec7b");
  BOOST_TEST(!sent.result.retry_after.has_value());
  BOOST_TEST(classify_apns_answer(200, "", 2s, "").result.detail == "");
  BOOST_TEST(classify_apns_answer(200, "", 2s, "bad id\n").result.detail == "");
}

BOOST_AUTO_TEST_CASE(apns_answers_without_a_reason_follow_classify_http) {
  BOOST_TEST(to_string(classify_apns_answer(503, "", 2s, "").result.outcome) == "retryable");
  BOOST_TEST(to_string(classify_apns_answer(429, "{}", 2s, "").result.outcome) == "throttled");
  BOOST_TEST(to_string(classify_apns_answer(403, R"({"reason":7})", 2s, "").result.outcome) ==
             "permanent");
}

BOOST_AUTO_TEST_CASE(random_and_truncated_input_never_throws) {
  const std::string fcm = fcm_error(404, "NOT_FOUND", "UNREGISTERED");
  const std::string apns = R"({"reason":"Unregistered","timestamp":1473799743000})";
  for (const long status : {200L, 400L, 401L, 404L, 410L, 429L, 503L}) {
    for (std::size_t size = 0; size <= fcm.size(); ++size)
      BOOST_CHECK_NO_THROW(classify_fcm_answer(status, fcm.substr(0, size), 1s));
    for (std::size_t size = 0; size <= apns.size(); ++size)
      BOOST_CHECK_NO_THROW(classify_apns_answer(status, apns.substr(0, size), 1s, "id"));
  }
  std::mt19937 random{20261202};
  const char symbols[] = "{}[]\":,errorcodetailsUNREGISTERED@type0129\x00\xff ";
  const std::string alphabet(symbols, sizeof symbols - 1);
  for (int round = 0; round < 20000; ++round) {
    std::string input = round % 2 == 0 ? fcm : std::string(random() % 80, ' ');
    for (int edits = 1 + static_cast<int>(random() % 4); edits > 0 && !input.empty(); --edits)
      input[random() % input.size()] = alphabet[random() % alphabet.size()];
    BOOST_CHECK_NO_THROW(classify_fcm_answer(400, input, std::nullopt));
    BOOST_CHECK_NO_THROW(classify_apns_answer(400, input, std::nullopt, input));
    BOOST_CHECK_NO_THROW(parse_oauth_token_answer(input));
  }
}

BOOST_AUTO_TEST_SUITE_END()
