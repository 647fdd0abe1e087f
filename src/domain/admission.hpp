#pragma once

#include "domain/message.hpp"
#include "domain/policy.hpp"
#include "domain/time.hpp"
#include "domain/time_zone.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace herald::domain {

/// One distinct task of a claim: its message, itself, and its route's choices.
struct claim_slot {
  const message_record* message = nullptr;
  const task_record* task = nullptr;
  when_held in_quiet_hours = when_held::defer;
  when_held over_cap = when_held::drop;
};

/// When `message` asked to be sent: when it was accepted, or its later send_at.
timestamp asked_time(const message_record& message);

/// What policy judges a claim's new tasks with: the installation's rules, the users' stored
/// profiles and what their cap counters admitted before this claim (read by the store inside
/// the claim's transaction). Counts what it admits, so the tasks of one claim share the caps.
class admission {
public:
  /// The zone named `name` (an IANA name); nullptr when there is none by that name.
  using zone_finder = std::function<std::shared_ptr<const time_zone>(const std::string& name)>;

  admission(const policy_rules& rules, zone_finder zones);

  void add_user(user_profile user);
  /// Counter `counter` of the user had admitted `used` tasks in the window starting then.
  void add_usage(const std::string& tenant, const std::string& user_id, const std::string& counter,
                 timestamp window_start, std::uint32_t used);

  const user_profile* user(const std::string& tenant, const std::string& user_id) const;
  bool knows_users() const { return !users_.empty(); }
  const policy_rules& rules() const { return *rules_; }

  /// Decides `slot`, to be sent no earlier than `step_time` when it is an escalation step, and
  /// counts it against its caps when it is admitted.
  policy_verdict decide(const claim_slot& slot, const std::optional<timestamp>& step_time);

private:
  // The user's zone, else the installation's default; UTC if neither loads (a zone removed
  // from the tz database after it was stored).
  std::shared_ptr<const time_zone> zone_of(const user_profile* user) const;

  using counter_key = std::tuple<std::string, std::string, std::string, timestamp>;

  const policy_rules* rules_; // outlives the admission (the store's claim policy)
  zone_finder zones_;
  std::map<std::pair<std::string, std::string>, user_profile> users_; // (tenant, user)
  std::map<counter_key, std::uint32_t> used_; // (tenant, user, counter, window) -> admitted
};

/// What a claim writes for one new task: policy's verdict (none: sent as asked) and, for an
/// escalation step, when it is due.
struct admitted_task {
  std::optional<policy_verdict> verdict;
  std::optional<timestamp> step_time;
};

/// Judges the slots `stored` leaves out (those not stored yet), in slot order, each counted
/// against its caps before the next is judged. `policy` null: nothing but the address is
/// checked (a task without one is suppressed, there is no one to send it to).
///
/// An escalation step waits its delay after the route's own tasks go: policy deferring them
/// (quiet hours, a cap) moves the step by as much, so the user still has the delay to read.
/// Steps must come after their message's other tasks in slot order. `stored` has one flag per
/// slot (std::invalid_argument otherwise).
std::vector<admitted_task> admit(const std::vector<claim_slot>& slots,
                                 const std::vector<bool>& stored, admission* policy);

/// Whether a task its claim creates may go to its channel at once, taken in the claim
/// (domain::claim_places): sent as asked (policy neither suppressed nor deferred it), due by
/// `now` and not expired, and no escalation step (a step's time is checked when it comes due).
bool goes_at_once(const claim_slot& slot, const admitted_task& admitted, timestamp now);

/// `plans` with each address `to` leaves out taken from the user's stored contacts, also for
/// the message's other channels (failover may use them). `to` wins over a contact.
void fill_contacts(std::vector<message_plan>& plans, const admission& policy);

} // namespace herald::domain
