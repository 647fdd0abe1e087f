#include "domain/keys.hpp"
#include "domain/message.hpp"

#include <algorithm>

namespace herald::domain {

task_record task_of(const message_key& key, const std::string& channel, std::string recipient,
                    const id_secret& secret) {
  const task_key of{key, channel};
  task_record task;
  task.id = task_id_for(of, secret);
  task.channel = channel;
  task.recipient = std::move(recipient);
  task.provider_request_id = provider_request_id_for(of, secret);
  return task;
}

delivery make_delivery(const message_record& message, const task_record& task) {
  delivery d;
  d.task_id = task.id;
  d.message_id = message.id;
  d.key = message.key;
  d.recipients = message.recipients;
  d.channel = task.channel;
  d.recipient = task.recipient;
  d.provider_request_id = task.provider_request_id;
  d.title = task.own_content ? task.own_content->title : message.title;
  d.body = task.own_content ? task.own_content->body : message.body;
  d.trace_id = message.trace_id;
  d.priority = message.priority;
  d.category = message.category;
  d.send_at = message.send_at;
  d.escalation = task.escalation;
  d.expire_at = message.expire_at;
  d.accepted_at = message.created_at;
  return d;
}

std::optional<message_plan> fallback_plan(const delivery& failed,
                                          const std::string& fallback_channel,
                                          const id_secret& secret, timestamp now) {
  auto recipient = failed.recipients.find(fallback_channel);
  if (recipient == failed.recipients.end() || recipient->second.empty())
    return std::nullopt;
  message_plan plan;
  auto& m = plan.message;
  m.id = failed.message_id;
  m.key = failed.key;
  m.recipients = failed.recipients;
  m.title = failed.title;
  m.body = failed.body;
  m.priority = failed.priority;
  m.category = failed.category;
  m.expire_at = failed.expire_at;
  m.trace_id = failed.trace_id;
  m.created_at = now; // only used if the message row were missing, which it never is
  auto task = task_of(failed.key, fallback_channel, recipient->second, secret);
  task.escalation = failed.escalation; // still sent only if nothing of the message was read
  // The fallback sends what the failed task was to send (its channel's own template text, if
  // it had one), stored on the task so a recovery sends the same as the first dispatch.
  task.own_content = content{failed.title, failed.body};
  plan.tasks.push_back(std::move(task));
  return plan;
}

std::vector<std::string> fallback_chain(const std::map<std::string, std::string>& fallback_of,
                                        const std::string& channel) {
  std::vector<std::string> chain;
  for (auto next = fallback_of.find(channel);
       next != fallback_of.end() && !next->second.empty() && next->second != channel &&
       std::find(chain.begin(), chain.end(), next->second) == chain.end();
       next = fallback_of.find(next->second))
    chain.push_back(next->second);
  return chain;
}

std::optional<message_plan> first_fallback_plan(const delivery& failed,
                                                const std::vector<std::string>& chain,
                                                const id_secret& secret, timestamp now) {
  for (const auto& channel : chain)
    if (auto plan = fallback_plan(failed, channel, secret, now))
      return plan;
  return std::nullopt;
}

} // namespace herald::domain
