#pragma once

#include "domain/policy.hpp"
#include "domain/time.hpp"
#include "domain/validation.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace herald::domain {

/// Longest locale tag a user may have (RFC 5646 recommends supporting 35 characters).
inline constexpr std::size_t max_locale_length = 35;

/// Whether `tag` looks like a BCP 47 language tag: `[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*`, at most
/// max_locale_length characters ("zh-CN", "en", "sr-Latn-RS"). Not checked against a registry.
bool is_plausible_locale(std::string_view tag);

/// Whether a time zone name names a zone herald can load (the caller's tz database).
using time_zone_lookup = std::function<bool(const std::string& name)>;

/// Checks a decoded user change (PUT/PATCH /v1/users/{user_id}, PUT .../dnd) against the
/// installation; the first problem found, each a 422 naming its field:
/// - `unknown_channel`: a contacts key or opted-out channel that is not a configured channel;
/// - `invalid_contact`: an address longer than the recipient limit or with control characters;
/// - `invalid_time_zone`: a time zone `known_time_zone` does not know (empty: the default);
/// - `invalid_locale`: a locale that is not is_plausible_locale (empty: none);
/// - `mandatory_category`: `verification` among the opted-out categories;
/// - `invalid_until`: a do-not-disturb end that is not after `now`.
std::optional<validation_error> check_user_patch(const user_patch& patch,
                                                 const routing_rules& rules,
                                                 const time_zone_lookup& known_time_zone,
                                                 timestamp now);

} // namespace herald::domain
