#include "tools/api_answers.hpp"

#include <boost/json.hpp>

namespace herald::tools {

namespace json = boost::json;

namespace {

std::optional<json::value> parse(std::string_view body) {
  boost::system::error_code ec;
  auto value = json::parse(body, ec);
  if (ec)
    return std::nullopt;
  return value;
}

std::string string_field(const json::object& object, std::string_view key) {
  auto* found = object.if_contains(key);
  return found && found->is_string() ? std::string(found->get_string()) : std::string();
}

std::uint64_t count_field(const json::object& object, std::string_view key) {
  auto* found = object.if_contains(key);
  if (!found)
    return 0;
  if (found->is_uint64())
    return found->get_uint64();
  if (found->is_int64() && found->get_int64() >= 0)
    return static_cast<std::uint64_t>(found->get_int64());
  return 0;
}

} // namespace

std::optional<accepted_answer> parse_submit_answer(std::string_view body) {
  auto value = parse(body);
  if (!value || !value->is_object())
    return std::nullopt;
  const auto& object = value->get_object();
  accepted_answer answer;
  answer.message_id = string_field(object, "message_id");
  auto* tasks = object.if_contains("tasks");
  if (answer.message_id.empty() || !tasks || !tasks->is_array())
    return std::nullopt;
  for (const auto& item : tasks->get_array()) {
    if (!item.is_object())
      return std::nullopt;
    const auto& task = item.get_object();
    answered_task parsed{string_field(task, "task_id"), string_field(task, "channel"), false};
    if (auto* duplicate = task.if_contains("duplicate"); duplicate && duplicate->is_bool())
      parsed.duplicate = duplicate->get_bool();
    if (parsed.task_id.empty())
      return std::nullopt;
    answer.tasks.push_back(std::move(parsed));
  }
  return answer;
}

std::optional<observed_message> parse_message_view(std::string_view body) {
  auto value = parse(body);
  if (!value || !value->is_object())
    return std::nullopt;
  auto* tasks = value->get_object().if_contains("tasks");
  if (!tasks || !tasks->is_array())
    return std::nullopt;
  observed_message message;
  message.found = true;
  for (const auto& item : tasks->get_array()) {
    if (!item.is_object())
      return std::nullopt;
    const auto& task = item.get_object();
    observed_task parsed;
    parsed.task_id = string_field(task, "task_id");
    parsed.channel = string_field(task, "channel");
    parsed.status = string_field(task, "status");
    parsed.provider_request_id = string_field(task, "provider_request_id");
    parsed.attempts = static_cast<std::int64_t>(count_field(task, "attempts"));
    if (parsed.task_id.empty())
      return std::nullopt;
    message.tasks.push_back(std::move(parsed));
  }
  return message;
}

std::optional<provider_observation> parse_provider_records(std::string_view summary,
                                                           std::string_view ids) {
  auto summary_value = parse(summary);
  auto ids_value = parse(ids);
  if (!summary_value || !summary_value->is_object() || !ids_value || !ids_value->is_object())
    return std::nullopt;
  const auto& s = summary_value->get_object();
  provider_observation observation;
  observation.calls = count_field(s, "calls");
  observation.effective_deliveries = count_field(s, "effective_deliveries");
  observation.duplicate_effective_deliveries = count_field(s, "duplicate_effective_deliveries");
  if (auto* repeated = s.if_contains("ids_delivered_more_than_once");
      repeated && repeated->is_array())
    for (const auto& id : repeated->get_array())
      if (id.is_string())
        observation.ids_delivered_more_than_once.emplace_back(id.get_string());
  auto* list = ids_value->get_object().if_contains("ids");
  if (!list || !list->is_array())
    return std::nullopt;
  for (const auto& id : list->get_array())
    if (id.is_string())
      observation.delivered_ids.emplace(id.get_string());
  return observation;
}

} // namespace herald::tools
