// Time zones read from the system's IANA database (tzdata), and quiet hours on top of them.
// Expected instants are those `zdump -v` prints for the same zones.
#include "domain/quiet_hours.hpp"
#include "domain/time_zone.hpp"
#include "tzdata.hpp"

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace herald::domain;
using herald::test::utc;
using herald::test::zone;
using namespace std::chrono_literals;

namespace {

/// The wall clock "YYYY-MM-DDTHH:MM:SS" as local seconds.
local_seconds wall(const std::string& text) {
  return std::chrono::duration_cast<std::chrono::seconds>(utc(text + "Z").time_since_epoch())
      .count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(time_zone_tests)

BOOST_AUTO_TEST_CASE(offsets_change_at_the_recorded_instants) {
  struct row {
    const char* zone;
    const char* at;
    long hours_east_in_minutes;
  };
  for (const auto& [name, at, minutes] : std::vector<row>{
           {"Europe/Paris", "2026-03-29T00:59:59Z", 60},
           {"Europe/Paris", "2026-03-29T01:00:00Z", 120},
           {"Europe/Paris", "2026-10-25T00:59:59Z", 120},
           {"Europe/Paris", "2026-10-25T01:00:00Z", 60},
           {"America/New_York", "2026-03-08T06:59:59Z", -300},
           {"America/New_York", "2026-03-08T07:00:00Z", -240},
           {"America/New_York", "2026-11-01T06:00:00Z", -300},
           {"Australia/Sydney", "2026-04-04T15:59:59Z", 660},
           {"Australia/Sydney", "2026-04-04T16:00:00Z", 600},
           {"Australia/Sydney", "2026-10-03T16:00:00Z", 660},
           {"Asia/Shanghai", "2026-07-01T00:00:00Z", 480},
           {"Asia/Kolkata", "2026-07-01T00:00:00Z", 330},
           {"UTC", "2026-07-01T00:00:00Z", 0},
           // Past the last recorded change (2037): the zone's POSIX rule continues them.
           {"Europe/Paris", "2040-03-25T00:59:59Z", 60},
           {"Europe/Paris", "2040-03-25T01:00:00Z", 120},
           {"America/New_York", "2045-06-01T12:00:00Z", -240},
           {"America/New_York", "2045-12-01T12:00:00Z", -300},
           {"Australia/Sydney", "2045-01-15T00:00:00Z", 660},
           {"Australia/Sydney", "2045-07-15T00:00:00Z", 600},
       })
    BOOST_TEST(zone(name).utc_offset_at(utc(at)).count() == minutes * 60, name << " at " << at);
}

BOOST_AUTO_TEST_CASE(a_wall_clock_time_maps_back_to_its_instant) {
  const auto paris = zone("Europe/Paris");
  BOOST_TEST((paris.from_local(wall("2026-07-01T08:00:00")) == utc("2026-07-01T06:00:00Z")));
  // Skipped by spring forward (02:00 -> 03:00): the instant the clocks jump past it.
  BOOST_TEST((paris.from_local(wall("2026-03-29T02:30:00")) == utc("2026-03-29T01:00:00Z")));
  // Shown twice by fall back (03:00 -> 02:00): the first time.
  BOOST_TEST((paris.from_local(wall("2026-10-25T02:30:00")) == utc("2026-10-25T00:30:00Z")));
  BOOST_TEST(paris.to_local(utc("2026-10-25T01:30:00Z")) == wall("2026-10-25T02:30:00"));
}

BOOST_AUTO_TEST_CASE(broken_files_are_refused) {
  BOOST_TEST(std::holds_alternative<std::string>(time_zone::from_tzif("")));
  BOOST_TEST(std::holds_alternative<std::string>(time_zone::from_tzif("not a zone file at all")));
  std::ifstream file("/usr/share/zoneinfo/Europe/Paris", std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  const std::string whole = bytes.str();
  for (std::size_t cut : {std::size_t{10}, std::size_t{44}, std::size_t{100}, whole.size() / 2})
    BOOST_TEST(std::holds_alternative<std::string>(time_zone::from_tzif(whole.substr(0, cut))),
               "cut at " << cut);
  // The rule in the footer: refused when it is not a POSIX TZ string with dates.
  const std::string body = whole.substr(0, whole.rfind('\n', whole.size() - 2) + 1);
  for (const char* rule : {"CET-1CEST,M13.5.0,M10.5.0/3", "CET-1CEST,M3.6.0,M10.5.0", "CET-30",
                           "CET", "CET-1CEST", "CET-1CEST,M3.5.0", "C-1", "<+03-3"})
    BOOST_TEST(std::holds_alternative<std::string>(time_zone::from_tzif(body + rule + "\n")), rule);
  auto tehran_like = time_zone::from_tzif(body + "<+0330>-3:30\n");
  BOOST_TEST_REQUIRE(std::holds_alternative<time_zone>(tehran_like));
  BOOST_TEST(std::get<time_zone>(tehran_like).utc_offset_at(utc("2050-01-01T00:00:00Z")).count() ==
             12600);
  // Damaged copies (counts, offsets, footer rules) are refused or read, never read past the end
  // (run under the sanitizers) and never give offsets outside ±26 h.
  std::mt19937 random(7);
  for (int round = 0; round < 3000; ++round) {
    std::string damaged = whole;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i)
      damaged[random() % damaged.size()] = static_cast<char>(random() % 256);
    auto parsed = time_zone::from_tzif(damaged);
    if (auto* read = std::get_if<time_zone>(&parsed))
      for (const char* at :
           {"1900-01-01T00:00:00Z", "2026-07-01T00:00:00Z", "2100-01-01T00:00:00Z"})
        BOOST_TEST(std::abs(read->utc_offset_at(utc(at)).count()) <= 26 * 3600);
  }
}

BOOST_AUTO_TEST_CASE(quiet_hours_end_on_the_users_wall_clock) {
  const quiet_hours night{22h, 8h};
  struct row {
    const char* zone;
    const char* now;
    const char* until; // "" = not quiet
  };
  for (const auto& [name, now, until] : std::vector<row>{
           {"Europe/Paris", "2026-07-01T10:00:00Z", ""},                     // 12:00 local
           {"Europe/Paris", "2026-07-01T21:00:00Z", "2026-07-02T06:00:00Z"}, // 23:00 local
           {"Europe/Paris", "2026-07-01T19:59:59Z", ""},                     // 21:59:59
           {"Europe/Paris", "2026-07-01T20:00:00Z", "2026-07-02T06:00:00Z"}, // 22:00 sharp
           {"Europe/Paris", "2026-07-02T05:59:59Z", "2026-07-02T06:00:00Z"}, // 07:59:59
           {"Europe/Paris", "2026-07-02T06:00:00Z", ""},                     // 08:00 sharp
           // The night daylight saving starts is an hour shorter, the night it ends longer.
           {"Europe/Paris", "2026-03-28T22:00:00Z", "2026-03-29T06:00:00Z"},
           {"Europe/Paris", "2026-10-24T21:00:00Z", "2026-10-25T07:00:00Z"},
           {"America/New_York", "2026-03-08T04:00:00Z", "2026-03-08T12:00:00Z"},
           {"Australia/Sydney", "2026-04-04T12:00:00Z", "2026-04-04T22:00:00Z"},
           // Across the end of a year and of a month, and where no daylight saving exists.
           {"Asia/Shanghai", "2026-12-31T15:30:00Z", "2027-01-01T00:00:00Z"},
           {"Asia/Shanghai", "2026-02-28T16:00:00Z", "2026-03-01T00:00:00Z"},
           {"Asia/Kolkata", "2026-07-01T17:00:00Z", "2026-07-02T02:30:00Z"}, // 22:30 local
       }) {
    const auto got = quiet_until(utc(now), zone(name), night);
    if (std::string(until).empty())
      BOOST_TEST(!got.has_value(), name << " at " << now);
    else
      BOOST_TEST((got == utc(until)), name << " at " << now);
  }
}

BOOST_AUTO_TEST_CASE(a_window_ending_in_a_repeated_hour_ends_after_now) {
  // 01:10 EST is the second pass through 01:00-02:00 (EDT first): 01:30 is still ahead, at EST.
  BOOST_TEST((quiet_until(utc("2026-11-01T06:10:00Z"), zone("America/New_York"),
                          quiet_hours{22h, 1h + 30min}) == utc("2026-11-01T06:30:00Z")));
  // 02:15 CET, second pass through 02:00-03:00: the window's 02:30 end is at CET too.
  BOOST_TEST((quiet_until(utc("2026-10-25T01:15:00Z"), zone("Europe/Paris"),
                          quiet_hours{0h, 2h + 30min}) == utc("2026-10-25T01:30:00Z")));
  // First pass: the first 02:30.
  BOOST_TEST((quiet_until(utc("2026-10-25T00:15:00Z"), zone("Europe/Paris"),
                          quiet_hours{0h, 2h + 30min}) == utc("2026-10-25T00:30:00Z")));
  const auto paris = zone("Europe/Paris");
  BOOST_TEST((paris.from_local(wall("2026-10-25T02:30:00"), time_zone::occurrence::later) ==
              utc("2026-10-25T01:30:00Z")));
}

BOOST_AUTO_TEST_CASE(leap_second_zones_are_refused) {
  std::ifstream file("/usr/share/zoneinfo/right/Europe/Paris", std::ios::binary);
  if (!file.good())
    return; // tzdata without the right/ zones (tzdata-legacy): nothing to refuse
  std::ostringstream bytes;
  bytes << file.rdbuf();
  BOOST_TEST(std::holds_alternative<std::string>(time_zone::from_tzif(bytes.str())));
}

BOOST_AUTO_TEST_CASE(a_window_within_one_day_and_an_empty_one) {
  const auto shanghai = zone("Asia/Shanghai");
  const quiet_hours lunch{12h, 14h};
  BOOST_TEST((quiet_until(utc("2026-07-01T05:00:00Z"), shanghai, lunch) ==
              utc("2026-07-01T06:00:00Z"))); // 13:00 local
  BOOST_TEST(!quiet_until(utc("2026-07-01T07:00:00Z"), shanghai, lunch).has_value());
  BOOST_TEST(!quiet_until(utc("2026-07-01T15:00:00Z"), shanghai, quiet_hours{8h, 8h}).has_value());
  BOOST_TEST((quiet_until(utc("2026-07-01T23:00:00Z"), time_zone::fixed(0s), quiet_hours{}) ==
              utc("2026-07-02T08:00:00Z")));
}

BOOST_AUTO_TEST_SUITE_END()
