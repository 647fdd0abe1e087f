#include "tools/api_answers.hpp"

#include <cctype>

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

/// A non-negative integer, else 0.
std::uint64_t count_value(const json::value* found) {
  if (!found)
    return 0;
  if (found->is_uint64())
    return found->get_uint64();
  if (found->is_int64() && found->get_int64() >= 0)
    return static_cast<std::uint64_t>(found->get_int64());
  return 0;
}

std::uint64_t count_field(const json::object& object, std::string_view key) {
  return count_value(object.if_contains(key));
}

/// One stats row; nullopt when a count is missing or not a number.
std::optional<stats_counts> stats_row(const json::value& value) {
  if (!value.is_object())
    return std::nullopt;
  const auto& row = value.get_object();
  auto* accepted = row.if_contains("accepted");
  if (!accepted || !accepted->is_number())
    return std::nullopt;
  stats_counts counts;
  counts.accepted = count_field(row, "accepted");
  for (const auto& state : all_task_states()) {
    std::string key;
    for (char c : state)
      key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    counts.states[state] = count_field(row, key);
  }
  return counts;
}

/// A single POST's answer body, or a batch item's result that has the same fields.
std::optional<accepted_answer> submit_answer_of(const json::value& value) {
  if (!value.is_object())
    return std::nullopt;
  const auto& object = value.get_object();
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

} // namespace

std::optional<herald_stats> parse_stats_answer(std::string_view body) {
  auto value = parse(body);
  if (!value || !value->is_object())
    return std::nullopt;
  const auto& object = value->get_object();
  auto* channels = object.if_contains("channels");
  auto* total = object.if_contains("total");
  if (!channels || !channels->is_array() || !total)
    return std::nullopt;
  herald_stats stats;
  auto total_row = stats_row(*total);
  if (!total_row)
    return std::nullopt;
  stats.total = *total_row;
  for (const auto& item : channels->get_array()) {
    auto row = stats_row(item);
    auto name = item.is_object() ? string_field(item.get_object(), "channel") : std::string();
    if (!row || name.empty())
      return std::nullopt;
    stats.channels[name] = *row;
  }
  return stats;
}

std::optional<provider_receipt_stats> parse_provider_stats(std::string_view body) {
  auto value = parse(body);
  if (!value || !value->is_object())
    return std::nullopt;
  const auto& object = value->get_object();
  auto* requests = object.if_contains("requests");
  if (!requests || !requests->is_object())
    return std::nullopt;
  provider_receipt_stats stats;
  const auto& r = requests->get_object();
  stats.requests = count_field(r, "accepted");
  stats.without_receipt = count_field(r, "without_receipt");
  stats.receipts_pending = count_field(r, "receipts_pending");
  if (auto* statuses = r.if_contains("statuses"); statuses && statuses->is_object())
    for (const auto& [status, n] : statuses->get_object())
      stats.statuses[std::string(status)] = count_value(&n);
  auto* receipts = object.if_contains("receipts");
  if (receipts && receipts->is_object()) {
    const auto& c = receipts->get_object();
    stats.posting = true;
    stats.planned = count_field(c, "planned");
    stats.dropped = count_field(c, "dropped");
    stats.duplicated = count_field(c, "duplicated");
    stats.acknowledged = count_field(c, "acknowledged");
    stats.failed = count_field(c, "failed");
    stats.max_lag_ms = count_field(c, "max_lag_ms");
  }
  return stats;
}

std::optional<accepted_answer> parse_submit_answer(std::string_view body) {
  auto value = parse(body);
  if (!value)
    return std::nullopt;
  return submit_answer_of(*value);
}

std::optional<std::vector<batch_item_result>> parse_batch_answer(std::string_view body,
                                                                 std::size_t items) {
  auto value = parse(body);
  if (!value || !value->is_object())
    return std::nullopt;
  auto* results = value->get_object().if_contains("results");
  if (!results || !results->is_array() || results->get_array().size() != items)
    return std::nullopt;
  std::vector<batch_item_result> parsed;
  parsed.reserve(items);
  for (const auto& item : results->get_array()) {
    auto* status = item.is_object() ? item.get_object().if_contains("status") : nullptr;
    auto code = count_value(status);
    if (!status || !status->is_number() || code < 100 || code > 599)
      return std::nullopt;
    batch_item_result result;
    result.status = static_cast<int>(code);
    if (result.status >= 200 && result.status < 300) {
      result.answer = submit_answer_of(item);
    } else if (auto* error = item.get_object().if_contains("error"); error && error->is_object()) {
      result.error_code = string_field(error->get_object(), "code");
    }
    parsed.push_back(std::move(result));
  }
  return parsed;
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
    parsed.policy_reason = string_field(task, "policy_reason");
    parsed.attempts = static_cast<std::int64_t>(count_field(task, "attempts"));
    parsed.status_questions = static_cast<std::int64_t>(count_field(task, "status_questions"));
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
