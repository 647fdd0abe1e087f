#include "domain/time.hpp"
#include "providers/failure_class.hpp"
#include "providers/simulated_provider.hpp"

#include <optional>
#include <string>

#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace herald::providers;
using namespace std::chrono_literals;

namespace {

std::string name(call_outcome outcome) {
  return std::string{to_string(outcome)};
}

struct http_row {
  long status;
  call_outcome expected;
  bool keeps_retry_after;
};

struct transport_row {
  CURLcode code;
  call_outcome expected;
};

std::chrono::system_clock::time_point at(const char* rfc3339) {
  return *domain::parse_rfc3339(rfc3339);
}

} // namespace

BOOST_AUTO_TEST_SUITE(failure_class_tests)

// The golden table: every HTTP answer class herald distinguishes.
BOOST_AUTO_TEST_CASE(http_status_table) {
  const http_row table[] = {
      {200, call_outcome::success, false},   {201, call_outcome::success, false},
      {202, call_outcome::success, false},   {204, call_outcome::success, false},
      {299, call_outcome::success, false},   {100, call_outcome::permanent, false},
      {301, call_outcome::permanent, false}, {302, call_outcome::permanent, false},
      {303, call_outcome::permanent, false}, {307, call_outcome::permanent, false},
      {308, call_outcome::permanent, false}, {400, call_outcome::permanent, false},
      {401, call_outcome::permanent, false}, {403, call_outcome::permanent, false},
      {404, call_outcome::permanent, false}, {405, call_outcome::permanent, false},
      {408, call_outcome::retryable, true},  {409, call_outcome::permanent, false},
      {410, call_outcome::permanent, false}, {413, call_outcome::permanent, false},
      {422, call_outcome::permanent, false}, {429, call_outcome::throttled, true},
      {499, call_outcome::permanent, false}, {500, call_outcome::retryable, true},
      {502, call_outcome::retryable, true},  {503, call_outcome::retryable, true},
      {504, call_outcome::retryable, true},  {599, call_outcome::retryable, true},
      {0, call_outcome::permanent, false},   {600, call_outcome::permanent, false},
  };
  for (const auto& row : table) {
    const auto result = classify_http(row.status, 7s, "body");
    BOOST_TEST(name(result.outcome) == name(row.expected), "HTTP " << row.status);
    BOOST_TEST(result.retry_after.has_value() == row.keeps_retry_after, "HTTP " << row.status);
    if (row.keeps_retry_after)
      BOOST_TEST(result.retry_after->count() == 7000);
  }
}

BOOST_AUTO_TEST_CASE(http_details) {
  BOOST_TEST(classify_http(410, std::nullopt, "gone").detail == "endpoint gone (410): disabled");
  BOOST_TEST(classify_http(404, std::nullopt, "no such hook").detail ==
             "endpoint refused (404): no such hook");
  BOOST_TEST(classify_http(302, std::nullopt, "").detail == "redirect not followed (302)");
  BOOST_TEST(classify_http(503, std::nullopt, "").detail == "endpoint unavailable (503)");
  BOOST_TEST(classify_http(429, std::nullopt, "").retry_after.has_value() == false);
  // Excerpts are cut and stripped of control characters (they end up in logs and the store).
  const auto long_body = std::string(1000, 'x');
  const auto cut = classify_http(500, std::nullopt, long_body).detail;
  BOOST_TEST(cut.size() < 250u);
  BOOST_TEST(cut.substr(cut.size() - 3) == "...");
  BOOST_TEST(classify_http(400, std::nullopt, "a\r\nb\x1b").detail ==
             "endpoint refused (400): a??b?");
}

BOOST_AUTO_TEST_CASE(http_details_are_masked_before_they_are_cut) {
  // The key straddles the excerpt's end: cut first, its start would be too short to look like
  // a key and stay in clear.
  const auto body = std::string(180, 'a') + " Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdo";
  const auto detail = classify_http(400, std::nullopt, body).detail;
  BOOST_TEST(detail == "endpoint refused (400): " + std::string(180, 'a') + " ***");
  const auto phone = classify_http(503, std::nullopt, "To=%2B8613812345678").detail;
  BOOST_TEST(phone == "endpoint unavailable (503): To=***5678");
}

BOOST_AUTO_TEST_CASE(transport_table) {
  const transport_row table[] = {
      // never reached the endpoint: retryable
      {CURLE_COULDNT_RESOLVE_HOST, call_outcome::retryable},
      {CURLE_COULDNT_RESOLVE_PROXY, call_outcome::retryable},
      {CURLE_COULDNT_CONNECT, call_outcome::retryable},
      {CURLE_SSL_CONNECT_ERROR, call_outcome::retryable},
      {CURLE_PEER_FAILED_VERIFICATION, call_outcome::retryable},
      {CURLE_SEND_ERROR, call_outcome::retryable},
      {CURLE_OUT_OF_MEMORY, call_outcome::retryable},
      // sent, outcome unknown: timeout
      {CURLE_OPERATION_TIMEDOUT, call_outcome::timeout},
      {CURLE_RECV_ERROR, call_outcome::timeout},
      {CURLE_GOT_NOTHING, call_outcome::timeout},
      {CURLE_PARTIAL_FILE, call_outcome::timeout},
      {CURLE_WEIRD_SERVER_REPLY, call_outcome::timeout},
      {CURLE_HTTP2_STREAM, call_outcome::timeout},
      {CURLE_OK, call_outcome::timeout},
      {CURLE_ABORTED_BY_CALLBACK, call_outcome::timeout},
      // configuration
      {CURLE_URL_MALFORMAT, call_outcome::permanent},
      {CURLE_UNSUPPORTED_PROTOCOL, call_outcome::permanent},
  };
  for (const auto& row : table) {
    const auto result = classify_transport(row.code);
    BOOST_TEST(name(result.outcome) == name(row.expected), "curl code " << row.code);
    BOOST_TEST(!result.retry_after.has_value());
    BOOST_TEST(!result.detail.empty());
  }
  BOOST_TEST(classify_transport(CURLE_COULDNT_CONNECT, "Connection refused").detail ==
             "not delivered (curl 7: Connection refused)");
}

// The simulated adapter's answers are already classified; they belong to the same table.
BOOST_AUTO_TEST_CASE(simulated_provider_outcomes) {
  struct sim_row {
    double retryable_rate;
    double permanent_rate;
    call_outcome expected;
  };
  const sim_row table[] = {{0.0, 0.0, call_outcome::success},
                           {1.0, 0.0, call_outcome::retryable},
                           {0.0, 1.0, call_outcome::permanent}};
  for (const auto& row : table) {
    simulated_profile profile;
    profile.retryable_failure_rate = row.retryable_rate;
    profile.permanent_failure_rate = row.permanent_rate;
    simulated_provider provider{profile, nullptr}; // zero latency: answers inline
    std::optional<provider_result> got;
    provider_request request;
    request.provider_request_id = "p-1";
    provider.send(request, [&](provider_result result) { got = std::move(result); });
    BOOST_REQUIRE(got.has_value());
    BOOST_TEST(name(got->outcome) == name(row.expected));
    BOOST_TEST(!got->retry_after.has_value());
  }
}

BOOST_AUTO_TEST_CASE(retry_after_delta_seconds) {
  const auto now = at("2026-12-02T10:00:00Z");
  BOOST_TEST(parse_retry_after("7", now)->count() == 7000);
  BOOST_TEST(parse_retry_after("0", now)->count() == 0);
  BOOST_TEST(parse_retry_after(" 120 ", now)->count() == 120000);
  BOOST_TEST(parse_retry_after("86400", now)->count() == max_retry_after.count());
  BOOST_TEST(parse_retry_after("999999999999999999999", now)->count() == max_retry_after.count());
  for (const char* bad : {"", " ", "-1", "1.5", "7s", "+7", "seven", "0x10"})
    BOOST_TEST(!parse_retry_after(bad, now).has_value(), "accepted '" << bad << "'");
}

BOOST_AUTO_TEST_CASE(retry_after_http_date) {
  const auto now = at("1994-11-06T08:49:00Z");
  BOOST_TEST(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now)->count() == 37000);
  BOOST_TEST(
      parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", at("1994-11-06T08:49:36.5Z"))->count() ==
      500);
  BOOST_TEST(parse_retry_after("Mon, 07 Nov 1994 08:49:00 GMT", now)->count() == 86400000);
  // In the past: no wait.
  BOOST_TEST(parse_retry_after("Sat, 05 Nov 1994 08:49:37 GMT", now)->count() == 0);
  // Far future: capped.
  BOOST_TEST(parse_retry_after("Fri, 01 Jan 2100 00:00:00 GMT", now)->count() ==
             max_retry_after.count());
  for (const char* bad :
       {"Sun, 06 Nov 1994 08:49:37 UTC", "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nox 1994 08:49:37 GMT",
        "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT", "1994-11-06T08:49:37Z"})
    BOOST_TEST(!parse_retry_after(bad, now).has_value(), "accepted '" << bad << "'");
}

BOOST_AUTO_TEST_SUITE_END()
