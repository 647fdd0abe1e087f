#include "domain/admission.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace herald::domain {

timestamp asked_time(const message_record& message) {
  return std::max(message.created_at, message.send_at.value_or(message.created_at));
}

admission::admission(const policy_rules& rules, zone_finder zones)
    : rules_(&rules), zones_(std::move(zones)) {}

void admission::add_user(user_profile user) {
  auto key = std::make_pair(user.tenant, user.user_id);
  users_.insert_or_assign(std::move(key), std::move(user));
}

void admission::add_usage(const std::string& tenant, const std::string& user_id,
                          const std::string& counter, timestamp window_start, std::uint32_t used) {
  used_[{tenant, user_id, counter, window_start}] = used;
}

const user_profile* admission::user(const std::string& tenant, const std::string& user_id) const {
  auto found = users_.find({tenant, user_id});
  return found != users_.end() ? &found->second : nullptr;
}

std::shared_ptr<const time_zone> admission::zone_of(const user_profile* user) const {
  if (user != nullptr && !user->time_zone.empty())
    if (auto zone = zones_(user->time_zone))
      return zone;
  if (auto zone = zones_(rules_->default_time_zone))
    return zone;
  return std::make_shared<const time_zone>(time_zone::fixed({}));
}

policy_verdict admission::decide(const claim_slot& slot,
                                 const std::optional<timestamp>& step_time) {
  const auto& m = *slot.message;
  const auto* profile = user(m.key.tenant, m.key.user_id);
  policy_subject subject;
  subject.category = m.category;
  subject.channel = slot.task->channel;
  subject.send_at = std::max(asked_time(m), step_time.value_or(m.created_at));
  subject.expire_at = m.expire_at;
  subject.has_address = !slot.task->recipient.empty();
  subject.quiet = slot.in_quiet_hours;
  subject.over_cap = slot.over_cap;
  const auto used = [&](const std::string& counter, timestamp start) {
    auto found = used_.find({m.key.tenant, m.key.user_id, counter, start});
    return found != used_.end() ? found->second : 0U;
  };
  auto verdict = domain::decide(subject, profile, *zone_of(profile), *rules_, used);
  for (const auto& [counter, start] : verdict.counted)
    ++used_[{m.key.tenant, m.key.user_id, counter, start}];
  return verdict;
}

bool goes_at_once(const claim_slot& slot, const admitted_task& admitted, timestamp now) {
  if (slot.task->escalation || admitted.step_time)
    return false;
  if (const auto& verdict = admitted.verdict;
      verdict && (verdict->decision == policy_verdict::kind::suppress || verdict->reason))
    return false;
  const auto& message = *slot.message;
  return (!message.send_at || *message.send_at <= now) &&
         (!message.expire_at || *message.expire_at > now);
}

std::vector<admitted_task> admit(const std::vector<claim_slot>& slots,
                                 const std::vector<bool>& stored, admission* policy) {
  if (stored.size() != slots.size())
    throw std::invalid_argument("admit: one stored flag per slot");
  std::vector<admitted_task> admitted(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (stored[i])
      continue;
    const auto& s = slots[i];
    if (s.task->escalation && s.task->not_before) {
      timestamp::duration held{0};
      for (std::size_t j = 0; j < i; ++j) {
        const auto& verdict = admitted[j].verdict;
        if (slots[j].message == s.message && !slots[j].task->escalation && verdict &&
            verdict->decision == policy_verdict::kind::send)
          held = std::max(held, verdict->send_at - asked_time(*s.message));
      }
      admitted[i].step_time = *s.task->not_before + held;
    }
    if (policy != nullptr)
      admitted[i].verdict = policy->decide(s, admitted[i].step_time);
    else if (s.task->recipient.empty())
      admitted[i].verdict = policy_verdict{
          policy_verdict::kind::suppress, policy_reason::no_contact, s.message->created_at, {}};
  }
  return admitted;
}

void fill_contacts(std::vector<message_plan>& plans, const admission& policy) {
  for (auto& plan : plans) {
    const auto* user = policy.user(plan.message.key.tenant, plan.message.key.user_id);
    if (user == nullptr)
      continue;
    for (const auto& [channel, address] : user->contacts)
      plan.message.recipients.emplace(channel, address);
    for (auto& task : plan.tasks)
      if (task.recipient.empty())
        if (auto found = user->contacts.find(task.channel); found != user->contacts.end())
          task.recipient = found->second;
  }
}

} // namespace herald::domain
