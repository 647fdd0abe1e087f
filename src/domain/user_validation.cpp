#include "domain/user_validation.hpp"

#include <algorithm>
#include <cctype>

namespace herald::domain {

namespace {

validation_error unprocessable(std::string code, std::string message, std::string field) {
  return validation_error{422, std::move(code), std::move(message), std::move(field)};
}

bool is_alpha(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0;
}

bool is_alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

std::optional<validation_error> check_contacts(const std::map<std::string, std::string>& contacts,
                                               const routing_rules& rules) {
  for (const auto& [channel, address] : contacts) {
    if (rules.channels.count(channel) == 0) {
      // Named back only when it could be a channel name: not a control character, not a page.
      if (has_control_chars(channel) || channel.size() > 64)
        return unprocessable("unknown_channel", "a contacts key is not a channel", "contacts");
      return unprocessable("unknown_channel", "unknown channel '" + channel + "'",
                           "contacts." + channel);
    }
    const std::string field = "contacts." + channel;
    if (rules.user_addressed.count(channel) != 0 && !address.empty())
      return unprocessable("invalid_contact",
                           field + ": an inapp channel reaches the user by their user_id", field);
    if (address.empty())
      continue; // removes the channel's contact
    if (address.size() > rules.limits.max_recipient_length)
      return unprocessable("invalid_contact",
                           field + " is longer than " +
                               std::to_string(rules.limits.max_recipient_length) + " bytes",
                           field);
    if (has_control_chars(address))
      return unprocessable("invalid_contact", field + " contains control characters", field);
  }
  return std::nullopt;
}

} // namespace

bool is_plausible_locale(std::string_view tag) {
  if (tag.empty() || tag.size() > max_locale_length)
    return false;
  bool first = true;
  while (true) {
    const auto subtag = tag.substr(0, tag.find('-'));
    if (first) {
      if (subtag.size() < 2 || subtag.size() > 8 ||
          !std::all_of(subtag.begin(), subtag.end(), is_alpha))
        return false;
    } else if (subtag.empty() || subtag.size() > 8 ||
               !std::all_of(subtag.begin(), subtag.end(), is_alnum)) {
      return false;
    }
    first = false;
    if (subtag.size() == tag.size())
      return true;
    tag.remove_prefix(subtag.size() + 1);
  }
}

std::optional<validation_error> check_user_patch(const user_patch& patch,
                                                 const routing_rules& rules,
                                                 const time_zone_lookup& known_time_zone,
                                                 timestamp now) {
  if (patch.contacts)
    if (auto error = check_contacts(*patch.contacts, rules))
      return error;
  if (patch.time_zone && !patch.time_zone->empty() && !known_time_zone(*patch.time_zone))
    return unprocessable("invalid_time_zone",
                         "time_zone must name an IANA time zone, e.g. Asia/Shanghai", "time_zone");
  if (patch.locale && !patch.locale->empty() && !is_plausible_locale(*patch.locale))
    return unprocessable("invalid_locale",
                         "locale must be a BCP 47 language tag of at most " +
                             std::to_string(max_locale_length) + " characters, e.g. zh-CN",
                         "locale");
  if (patch.opted_out_channels)
    for (const auto& channel : *patch.opted_out_channels)
      if (rules.channels.count(channel) == 0)
        return unprocessable("unknown_channel", "unknown channel '" + channel + "'",
                             "opted_out_channels");
  if (patch.opted_out_categories && patch.opted_out_categories->count(category::verification))
    return unprocessable("mandatory_category",
                         "verification messages cannot be opted out of: a user asked for them",
                         "opted_out_categories");
  if (patch.dnd == user_patch::dnd_change::set && patch.dnd_until && *patch.dnd_until <= now)
    return unprocessable("invalid_until", "until must be in the future", "until");
  return std::nullopt;
}

} // namespace herald::domain
