// What the installation allows in a user change: configured channels, bounded clean addresses,
// known zones, BCP 47-like locales, no opting out of verification, a DND end in the future.
#include "domain/user_validation.hpp"

#include <chrono>
#include <map>
#include <string>

#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace std::chrono_literals;

namespace {

using contact_map = std::map<std::string, std::string>;

struct installation {
  installation() { rules.channels = {"sms", "email", "app"}; }

  std::optional<domain::validation_error> check(const domain::user_patch& patch) const {
    return domain::check_user_patch(
        patch, rules, [](const std::string& name) { return name == "Asia/Shanghai"; }, now);
  }

  domain::routing_rules rules;
  domain::timestamp now = *domain::parse_rfc3339("2026-12-01T10:00:00Z");
};

void expect_refused(const std::optional<domain::validation_error>& failure, const std::string& code,
                    const std::string& field) {
  BOOST_REQUIRE(failure.has_value());
  BOOST_TEST(failure->status == 422);
  BOOST_TEST(failure->code == code);
  BOOST_TEST(failure->field == field);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(user_validation_tests, installation)

BOOST_AUTO_TEST_CASE(a_sound_change_passes) {
  domain::user_patch patch;
  patch.contacts = contact_map{{"sms", "+8613800000000"}, {"email", ""}};
  patch.time_zone = "Asia/Shanghai";
  patch.locale = "zh-Hans-CN";
  patch.opted_out_channels = {{"email"}};
  patch.opted_out_categories = {{domain::category::marketing}};
  patch.dnd = domain::user_patch::dnd_change::set;
  patch.dnd_until = now + 1h;
  BOOST_TEST(!check(patch).has_value());
  domain::user_patch cleared; // empty zone and locale: the defaults
  cleared.time_zone = "";
  cleared.locale = "";
  BOOST_TEST(!check(cleared).has_value());
}

BOOST_AUTO_TEST_CASE(channels_must_be_configured) {
  domain::user_patch contacts;
  contacts.contacts = contact_map{{"fax", "+1"}};
  expect_refused(check(contacts), "unknown_channel", "contacts.fax");
  domain::user_patch opted_out;
  opted_out.opted_out_channels = {{"sms", "pager"}};
  expect_refused(check(opted_out), "unknown_channel", "opted_out_channels");
}

BOOST_AUTO_TEST_CASE(addresses_are_bounded_and_clean) {
  domain::user_patch too_long;
  too_long.contacts =
      contact_map{{"email", std::string(rules.limits.max_recipient_length + 1, 'a')}};
  expect_refused(check(too_long), "invalid_contact", "contacts.email");
  domain::user_patch control;
  control.contacts = contact_map{{"sms", "+86138\n00000000"}};
  expect_refused(check(control), "invalid_contact", "contacts.sms");
  domain::user_patch longest;
  longest.contacts = contact_map{{"email", std::string(rules.limits.max_recipient_length, 'a')}};
  BOOST_TEST(!check(longest).has_value());
}

BOOST_AUTO_TEST_CASE(zones_must_be_known_and_locales_plausible) {
  domain::user_patch zone;
  zone.time_zone = "Mars/Olympus_Mons";
  expect_refused(check(zone), "invalid_time_zone", "time_zone");
  for (const std::string good : {"en", "zh-CN", "sr-Latn-RS", "de-CH-1996", "ABCDEFGH"})
    BOOST_TEST(domain::is_plausible_locale(good), good);
  for (const std::string bad :
       {"", "e", "en_US", "en-", "-en", "en--US", "123", "abcdefghi", "en-abcdefghi", "zh-CN "})
    BOOST_TEST(!domain::is_plausible_locale(bad), bad);
  const std::string subtags = "aa-bbbbbbbb-bbbbbbbb-bbbbbbbb-";
  BOOST_TEST(domain::is_plausible_locale(subtags + "ccccc"));   // 35 characters
  BOOST_TEST(!domain::is_plausible_locale(subtags + "cccccc")); // 36
  domain::user_patch locale;
  locale.locale = "en_US";
  expect_refused(check(locale), "invalid_locale", "locale");
}

BOOST_AUTO_TEST_CASE(verification_cannot_be_opted_out_of) {
  domain::user_patch patch;
  patch.opted_out_categories = {{domain::category::marketing, domain::category::verification}};
  expect_refused(check(patch), "mandatory_category", "opted_out_categories");
}

BOOST_AUTO_TEST_CASE(dnd_must_end_in_the_future) {
  domain::user_patch patch;
  patch.dnd = domain::user_patch::dnd_change::set;
  patch.dnd_until = now;
  expect_refused(check(patch), "invalid_until", "until");
  patch.dnd_until.reset(); // until lifted
  BOOST_TEST(!check(patch).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
