#include "domain/policy.hpp"

#include <algorithm>
#include <array>

namespace herald::domain {

user_profile apply_patch(std::optional<user_profile> current, const std::string& tenant,
                         const std::string& user_id, const user_patch& patch, timestamp now) {
  user_profile user;
  if (current && !patch.replace)
    user = std::move(*current);
  else if (current)
    user.dnd = current->dnd; // DND has its own resource: a PUT of the profile keeps it
  user.tenant = tenant;
  user.user_id = user_id;
  if (patch.contacts) {
    if (patch.replace)
      user.contacts.clear();
    for (const auto& [channel, address] : *patch.contacts) {
      if (address.empty())
        user.contacts.erase(channel);
      else
        user.contacts[channel] = address;
    }
  }
  if (patch.time_zone)
    user.time_zone = *patch.time_zone;
  if (patch.locale)
    user.locale = *patch.locale;
  if (patch.opted_out_channels)
    user.opted_out_channels = *patch.opted_out_channels;
  if (patch.opted_out_categories)
    user.opted_out_categories = *patch.opted_out_categories;
  if (patch.dnd == user_patch::dnd_change::set)
    user.dnd = do_not_disturb{patch.dnd_until};
  else if (patch.dnd == user_patch::dnd_change::lift)
    user.dnd.reset();
  user.updated_at = now;
  return user;
}

namespace {

constexpr std::array<std::pair<policy_reason, std::string_view>, 7> reason_names{{
    {policy_reason::dnd, "dnd"},
    {policy_reason::channel_opted_out, "channel_opted_out"},
    {policy_reason::category_opted_out, "category_opted_out"},
    {policy_reason::quiet_hours, "quiet_hours"},
    {policy_reason::frequency_cap, "frequency_cap"},
    {policy_reason::no_contact, "no_contact"},
    {policy_reason::read_before_escalation, "read_before_escalation"},
}};

} // namespace

std::string_view to_string(policy_reason reason) {
  for (const auto& [value, name] : reason_names)
    if (value == reason)
      return name;
  return "unknown";
}

std::optional<policy_reason> parse_policy_reason(std::string_view text) {
  for (const auto& [value, name] : reason_names)
    if (name == text)
      return value;
  return std::nullopt;
}

std::string_view to_string(frequency_cap::period period) {
  return period == frequency_cap::period::hour ? "hour" : "day";
}

std::string frequency_cap::counter() const {
  std::string name{to_string(category)};
  if (channel)
    name += "/" + *channel;
  name += "/";
  name += to_string(per);
  return name;
}

bool policy_rules::capped(category cat) const {
  return std::any_of(caps.begin(), caps.end(),
                     [cat](const frequency_cap& cap) { return cap.category == cat; });
}

std::pair<timestamp, timestamp> cap_window(frequency_cap::period period, timestamp at,
                                           const time_zone& zone) {
  const std::int64_t length = period == frequency_cap::period::hour ? 3'600 : 86'400;
  const local_seconds local = zone.to_local(at);
  const local_seconds start = local - ((local % length) + length) % length;
  // Both ends at their first pass, so windows never overlap: a repeated wall-clock hour
  // (fall-back) is one window from its first pass to the end of its second.
  return {zone.from_local(start, time_zone::occurrence::earlier),
          zone.from_local(start + length, time_zone::occurrence::earlier)};
}

namespace {

policy_verdict suppressed(policy_reason reason, timestamp at) {
  return policy_verdict{policy_verdict::kind::suppress, reason, at, {}};
}

bool applies(const frequency_cap& cap, const policy_subject& subject) {
  return cap.category == subject.category && (!cap.channel || *cap.channel == subject.channel);
}

// Gives up deferring after this many moves (quiet hours and full windows taking turns): a
// cap that is always full would otherwise defer forever.
constexpr int max_deferrals = 32;

} // namespace

policy_verdict decide(const policy_subject& subject, const user_profile* user,
                      const time_zone& zone, const policy_rules& rules, const cap_usage& used) {
  const bool verification = subject.category == category::verification;
  const timestamp asked = subject.send_at;
  if (user && !verification) {
    if (user->dnd && (!user->dnd->until || asked < *user->dnd->until))
      return suppressed(policy_reason::dnd, asked);
    if (user->opted_out_channels.count(subject.channel) != 0)
      return suppressed(policy_reason::channel_opted_out, asked);
    if (user->opted_out_categories.count(subject.category) != 0)
      return suppressed(policy_reason::category_opted_out, asked);
  }
  if (!subject.has_address)
    return suppressed(policy_reason::no_contact, asked);
  const bool keeps_quiet = !verification && rules.quiet_categories.count(subject.category) != 0;

  policy_verdict verdict{policy_verdict::kind::send, std::nullopt, asked, {}};
  for (int move = 0; move <= max_deferrals; ++move) {
    if (keeps_quiet) {
      if (auto until = quiet_until(verdict.send_at, zone, rules.quiet_hours)) {
        if (subject.quiet == when_held::drop)
          return suppressed(policy_reason::quiet_hours, asked);
        verdict.send_at = *until;
        verdict.reason = policy_reason::quiet_hours;
      }
    }
    std::optional<timestamp> room_from; // when every full window has ended
    verdict.counted.clear();
    for (const auto& cap : rules.caps) {
      if (!applies(cap, subject))
        continue;
      const auto [start, end] = cap_window(cap.per, verdict.send_at, zone);
      const auto counter = cap.counter();
      if (used(counter, start) >= cap.limit)
        room_from = std::max(room_from.value_or(end), end);
      else
        verdict.counted.emplace_back(counter, start);
    }
    if (!room_from) {
      if (verdict.reason && subject.expire_at && verdict.send_at >= *subject.expire_at)
        return suppressed(*verdict.reason, asked); // deferred past its expiry: never sent
      return verdict;
    }
    if (subject.over_cap == when_held::drop)
      return suppressed(policy_reason::frequency_cap, asked);
    verdict.send_at = *room_from;
    verdict.reason = policy_reason::frequency_cap;
  }
  return suppressed(policy_reason::frequency_cap, asked);
}

} // namespace herald::domain
