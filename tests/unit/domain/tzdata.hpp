#pragma once

// Zones of the system's IANA database (tzdata) and UTC instants, for table tests of time.

#include "domain/time.hpp"
#include "domain/time_zone.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include <boost/test/unit_test.hpp>

namespace herald::test {

/// The zone `name` read from /usr/share/zoneinfo; fails the test if it is missing or broken.
inline domain::time_zone zone(const std::string& name) {
  std::ifstream file("/usr/share/zoneinfo/" + name, std::ios::binary);
  BOOST_TEST_REQUIRE(file.good(), "tzdata has no " << name);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  auto parsed = domain::time_zone::from_tzif(bytes.str());
  if (auto* error = std::get_if<std::string>(&parsed))
    BOOST_FAIL(name << ": " << *error);
  return std::get<domain::time_zone>(parsed);
}

/// An RFC 3339 instant; fails the test if it does not parse.
inline domain::timestamp utc(const std::string& text) {
  auto t = domain::parse_rfc3339(text);
  BOOST_TEST_REQUIRE(t.has_value(), text);
  return *t;
}

} // namespace herald::test
