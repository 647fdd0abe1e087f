#include "domain/time.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::domain;
using namespace std::chrono_literals;

namespace {

std::int64_t micros_of(std::string_view text) {
  const auto parsed = parse_rfc3339(text);
  BOOST_REQUIRE_MESSAGE(parsed.has_value(), "did not parse: " << text);
  return to_unix_micros(*parsed);
}

} // namespace

BOOST_AUTO_TEST_SUITE(time_tests)

BOOST_AUTO_TEST_CASE(parses_utc) {
  BOOST_TEST(micros_of("1970-01-01T00:00:00Z") == 0);
  // date -u -d 2026-12-02T10:00:00Z +%s -> 1796205600
  BOOST_TEST(micros_of("2026-12-02T10:00:00Z") == 1796205600LL * 1'000'000);
  BOOST_TEST(micros_of("2000-02-29T23:59:59Z") == 951868799LL * 1'000'000);
  BOOST_TEST(micros_of("1969-12-31T23:59:59Z") == -1'000'000);
  BOOST_TEST(micros_of("2026-12-02t10:00:00z") == 1796205600LL * 1'000'000);
}

BOOST_AUTO_TEST_CASE(parses_fractions_to_microseconds) {
  BOOST_TEST(micros_of("1970-01-01T00:00:00.5Z") == 500'000);
  BOOST_TEST(micros_of("1970-01-01T00:00:00.000001Z") == 1);
  BOOST_TEST(micros_of("1970-01-01T00:00:00.123456Z") == 123'456);
  // Beyond microseconds the digits are truncated, not rounded.
  BOOST_TEST(micros_of("1970-01-01T00:00:00.123456789Z") == 123'456);
  BOOST_TEST(micros_of("1970-01-01T00:00:01.999999999Z") == 1'999'999);
}

BOOST_AUTO_TEST_CASE(applies_offsets) {
  const std::int64_t utc = micros_of("2026-12-02T10:00:00Z");
  BOOST_TEST(micros_of("2026-12-02T11:00:00+01:00") == utc);
  BOOST_TEST(micros_of("2026-12-02T18:00:00+08:00") == utc);
  BOOST_TEST(micros_of("2026-12-02T04:30:00-05:30") == utc);
  BOOST_TEST(micros_of("2026-12-02T10:00:00+00:00") == utc);
  BOOST_TEST(micros_of("2026-12-02T10:00:00-00:00") == utc);
  // The offset may carry the instant into another day.
  BOOST_TEST(micros_of("2026-12-03T01:00:00+15:00") == utc);
}

BOOST_AUTO_TEST_CASE(rejects_malformed_text) {
  for (const char* text : {
           "",
           "2026-12-02",
           "2026-12-02 10:00:00Z",            // missing T
           "2026-12-02T10:00:00",             // missing offset
           "2026-13-02T10:00:00Z",            // month 13
           "2026-00-02T10:00:00Z",            // month 0
           "2026-02-29T10:00:00Z",            // not a leap year
           "2026-04-31T10:00:00Z",            // April has 30 days
           "2026-12-00T10:00:00Z",            // day 0
           "2026-12-02T24:00:00Z",            // hour 24
           "2026-12-02T10:60:00Z",            // minute 60
           "2026-12-02T10:00:60Z",            // leap seconds are refused
           "2026-12-02T10:00:00ZZ",           // trailing junk
           "2026-12-02T10:00:00Z ",           // trailing space
           " 2026-12-02T10:00:00Z",           // leading space
           "2026-12-02T10:00:00.Z",           // empty fraction
           "2026-12-02T10:00:00.1234567890Z", // ten fraction digits
           "2026-12-02T10:00:00+0100",        // offset without colon
           "2026-12-02T10:00:00+01",          // short offset
           "2026-12-02T10:00:00+24:00",       // offset hour 24
           "2026-12-02T10:00:00+01:60",       // offset minute 60
           "26-12-02T10:00:00Z",              // two-digit year
           "2026-1-02T10:00:00Z",             // one-digit month
           "2026-12-02T10:0:00Z",             // one-digit minute
           "+2026-12-02T10:00:00Z",           // signed year
           "2026-12-02T10:00:00+01:00x",
           "２026-12-02T10:00:00Z", // non-ASCII digit
       })
    BOOST_TEST(!parse_rfc3339(text).has_value(), "accepted '" << text << "'");
}

BOOST_AUTO_TEST_CASE(accepts_leap_day_and_month_ends) {
  BOOST_TEST(parse_rfc3339("2024-02-29T00:00:00Z").has_value());
  BOOST_TEST(parse_rfc3339("2000-02-29T00:00:00Z").has_value());
  BOOST_TEST(!parse_rfc3339("1900-02-29T00:00:00Z").has_value());
  BOOST_TEST(parse_rfc3339("2026-12-31T23:59:59.999999Z").has_value());
}

BOOST_AUTO_TEST_CASE(formats_utc_with_microseconds) {
  BOOST_TEST(format_rfc3339(from_unix_micros(0)) == "1970-01-01T00:00:00.000000Z");
  BOOST_TEST(format_rfc3339(from_unix_micros(1796205600LL * 1'000'000 + 42)) ==
             "2026-12-02T10:00:00.000042Z");
  BOOST_TEST(format_rfc3339(from_unix_micros(-1)) == "1969-12-31T23:59:59.999999Z");
  BOOST_TEST(format_rfc3339(from_unix_micros(951868799LL * 1'000'000)) ==
             "2000-02-29T23:59:59.000000Z");
}

BOOST_AUTO_TEST_CASE(format_truncates_below_microseconds) {
  const timestamp at = from_unix_micros(5) + std::chrono::duration_cast<timestamp::duration>(
                                                 std::chrono::nanoseconds{999});
  BOOST_TEST(format_rfc3339(at) == "1970-01-01T00:00:00.000005Z");
}

BOOST_AUTO_TEST_CASE(format_and_parse_round_trip) {
  // Odd-sized steps (just under 331 days) from the earliest instant a timestamp can hold to the
  // end of 2200, the last year parse_rfc3339 takes, through every month, leap days and the epoch.
  const std::int64_t first = to_unix_micros(timestamp::min()) + 1'000'000;
  const std::int64_t last = micros_of("2200-12-31T23:59:59Z");
  for (std::int64_t micros = first; micros < last; micros += 86'399'999'937LL * 331) {
    const std::string text = format_rfc3339(from_unix_micros(micros));
    const auto parsed = parse_rfc3339(text);
    BOOST_REQUIRE_MESSAGE(parsed.has_value(), text);
    BOOST_TEST(to_unix_micros(*parsed) == micros, text);
  }
}

BOOST_AUTO_TEST_CASE(refuses_instants_a_timestamp_cannot_hold) {
  // With 64-bit nanoseconds (libstdc++) year 1 and year 9999 are out of range; with a coarser
  // system_clock they parse. Either way they never wrap around.
  const bool wide =
      std::chrono::duration_cast<std::chrono::seconds>(timestamp::max().time_since_epoch())
          .count() > 8100LL * 366 * 86'400;
  BOOST_TEST(parse_rfc3339("0001-01-01T00:00:00Z").has_value() == wide);
  BOOST_TEST(parse_rfc3339("9999-12-31T23:59:59.999999Z").has_value() == wide);
  BOOST_TEST(micros_of("2200-01-01T00:00:00Z") == 7'258'118'400LL * 1'000'000);
  // Policy adds days and windows to what it is given: refused well before the 2262 limit.
  BOOST_TEST(parse_rfc3339("2200-12-31T23:59:59Z").has_value());
  BOOST_TEST(!parse_rfc3339("2201-01-01T00:00:00Z").has_value());
  BOOST_TEST(!parse_rfc3339("2262-04-11T23:00:00Z").has_value());
  BOOST_TEST(micros_of("1700-01-01T00:00:00Z") == -8'520'336'000LL * 1'000'000);
}

BOOST_AUTO_TEST_CASE(unix_micros_round_trip) {
  for (std::int64_t micros : {0LL, 1LL, -1LL, 1796205600123456LL, -8520336000000000LL})
    BOOST_TEST(to_unix_micros(from_unix_micros(micros)) == micros);
}

BOOST_AUTO_TEST_CASE(manual_clock_moves_only_when_told) {
  manual_clock clock{from_unix_micros(1000)};
  BOOST_TEST(to_unix_micros(clock.now()) == 1000);
  clock.advance(5s);
  BOOST_TEST(to_unix_micros(clock.now()) == 5'001'000);
  clock.set(from_unix_micros(7));
  BOOST_TEST(to_unix_micros(clock.now()) == 7);
}

BOOST_AUTO_TEST_SUITE_END()
