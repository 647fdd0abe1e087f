#pragma once

#include "domain/message.hpp"
#include "domain/quiet_hours.hpp"
#include "domain/time.hpp"
#include "domain/time_zone.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace herald::domain {

/// A user's do-not-disturb: while it holds, every task but verification is suppressed.
/// `until` empty: until lifted.
struct do_not_disturb {
  std::optional<timestamp> until;
};

/// What herald knows of one user of one tenant (PUT /v1/users/{user_id}).
struct user_profile {
  std::string tenant;
  std::string user_id;
  std::map<std::string, std::string> contacts; ///< channel -> address, used when `to` omits it
  std::string time_zone;                       ///< IANA name; empty: the installation's default
  std::string locale;                          ///< BCP 47 tag, e.g. "zh-CN"; empty: none
  std::set<std::string> opted_out_channels;
  std::set<category> opted_out_categories; ///< never `verification`
  std::optional<do_not_disturb> dnd;
  timestamp updated_at;
};

/// A change to a user: PUT replaces (fields not given are emptied, DND kept), PATCH changes
/// only what it gives (contacts merged key by key; an empty address removes one).
struct user_patch {
  bool replace = false;
  std::optional<std::map<std::string, std::string>> contacts;
  std::optional<std::string> time_zone;
  std::optional<std::string> locale;
  std::optional<std::set<std::string>> opted_out_channels;
  std::optional<std::set<category>> opted_out_categories;
  enum class dnd_change { keep, set, lift } dnd = dnd_change::keep;
  std::optional<timestamp> dnd_until; ///< with dnd_change::set
};

/// `patch` applied to `current` (nullopt: a user not stored yet), stamped `now`.
user_profile apply_patch(std::optional<user_profile> current, const std::string& tenant,
                         const std::string& user_id, const user_patch& patch, timestamp now);

/// Why policy stopped or delayed a task; recorded on the task as its machine-readable reason.
enum class policy_reason {
  dnd,               ///< the user's do-not-disturb holds
  channel_opted_out, ///< the user turned this channel off
  category_opted_out,
  quiet_hours,            ///< inside the user's quiet hours
  frequency_cap,          ///< the user had as many of these as a cap allows
  no_contact,             ///< neither the request nor the user names an address for the channel
  read_before_escalation, ///< an escalation step: a task of its message was READ before it was due
};
std::string_view to_string(policy_reason reason);
std::optional<policy_reason> parse_policy_reason(std::string_view text);

/// A frequency cap: at most `limit` tasks of `category` per user per `period` (calendar hour or
/// day of the user's wall clock), across channels or on one `channel`.
struct frequency_cap {
  enum class period { hour, day };
  domain::category category = domain::category::marketing;
  std::optional<std::string> channel; ///< empty: every channel together
  period per = period::day;
  std::uint32_t limit = 0;
  /// Counter name in the database, e.g. "marketing/day" or "marketing/sms/day".
  std::string counter() const;
};
std::string_view to_string(frequency_cap::period period);

/// The installation's policy (config "policy").
struct policy_rules {
  domain::quiet_hours quiet_hours;                          ///< default 22:00–08:00
  std::set<category> quiet_categories{category::marketing}; ///< which categories it holds
  std::vector<frequency_cap> caps;
  std::string default_time_zone = "UTC"; ///< for users without one
  /// Whether any cap counts tasks of `cat` (then a claim locks and counts per user).
  bool capped(category cat) const;
};

/// One task as policy sees it: its category, channel and when it would be sent.
struct policy_subject {
  domain::category category = domain::category::transactional;
  std::string channel;
  timestamp send_at;                  ///< the later of now and the message's own send_at
  std::optional<timestamp> expire_at; ///< deferred to or past it: suppressed instead
  bool has_address = true;            ///< the request or the user's contacts give one
  when_held quiet = when_held::defer;
  when_held over_cap = when_held::drop;
};

/// What policy decided for one task.
struct policy_verdict {
  enum class kind { send, suppress } decision = kind::send;
  std::optional<policy_reason> reason; ///< with suppress, and with a deferred send
  timestamp send_at;                   ///< when to send (later than asked: deferred)
  /// Cap counters the task uses, by counter name and window start: the claim adds one to
  /// each when it admits the task.
  std::vector<std::pair<std::string, timestamp>> counted;
  bool deferred(timestamp asked) const { return decision == kind::send && send_at > asked; }
};

/// How many tasks a counter has admitted in the window starting at `window_start`.
using cap_usage = std::function<std::uint32_t(const std::string& counter, timestamp window_start)>;

/// Decides one task, in this order: block list (DND) → preferences (opted-out channels and
/// categories) → category rules (verification passes the first two and quiet hours) → quiet
/// hours → frequency caps. `user` may be null (no stored preferences); `zone` is the user's.
/// Deterministic: time comes only from `subject.send_at`.
policy_verdict decide(const policy_subject& subject, const user_profile* user,
                      const time_zone& zone, const policy_rules& rules, const cap_usage& used);

/// The window of `period` of `zone`'s wall clock that `at` falls in: [start, end).
std::pair<timestamp, timestamp> cap_window(frequency_cap::period period, timestamp at,
                                           const time_zone& zone);

} // namespace herald::domain
