#include "tools/call_record.hpp"

#include <algorithm>

#include <boost/json.hpp>

namespace herald::tools {

namespace json = boost::json;

namespace {

constexpr call_outcome all_outcomes[] = {call_outcome::success, call_outcome::retryable,
                                         call_outcome::permanent, call_outcome::timeout};

} // namespace

bool is_processed(call_outcome outcome) {
  return outcome == call_outcome::success || outcome == call_outcome::timeout;
}

std::string to_json(const call_summary& summary) {
  json::object body;
  body["calls"] = summary.calls;
  body["distinct_ids"] = summary.distinct_ids;
  body["effective_deliveries"] = summary.effective_deliveries;
  json::array repeated;
  for (const auto& id : summary.ids_delivered_more_than_once)
    repeated.emplace_back(id);
  body["ids_delivered_more_than_once"] = std::move(repeated);
  body["duplicate_effective_deliveries"] = summary.duplicate_effective_deliveries;
  body["deduplicated"] = summary.deduplicated;
  body["calls_without_id"] = summary.calls_without_id;
  json::object endpoints;
  for (const auto& [endpoint, counts] : summary.by_endpoint)
    endpoints[endpoint] = json::object{{"calls", counts.calls},
                                       {"effective_deliveries", counts.effective_deliveries}};
  body["by_endpoint"] = std::move(endpoints);
  json::object outcomes;
  for (const auto& [name, count] : summary.outcomes)
    outcomes[name] = count;
  body["outcomes"] = std::move(outcomes);
  return json::serialize(body);
}

call_record::call_record(bool dedupe_by_id, std::size_t max_log_entries,
                         std::string message_id_prefix)
    : dedupe_by_id_(dedupe_by_id), max_log_entries_(max_log_entries),
      message_id_prefix_(std::move(message_id_prefix)) {}

call_decision call_record::record(const std::string& endpoint, const std::string& request_id,
                                  const std::string& attempt, call_outcome outcome,
                                  std::chrono::system_clock::time_point at) {
  std::lock_guard<std::mutex> lock(mutex_);
  call_decision decision;
  ++calls_;
  ++outcomes_[outcome];
  auto& endpoint_count = by_endpoint_[endpoint];
  ++endpoint_count.calls;

  id_state* state = nullptr;
  if (request_id.empty()) {
    ++calls_without_id_;
  } else {
    state = &ids_[request_id];
    ++state->calls;
  }

  if (is_processed(outcome)) {
    bool repeat = state && state->effective > 0;
    if (repeat && dedupe_by_id_) {
      decision.deduplicated = true;
      decision.provider_message_id = state->provider_message_id;
      ++deduplicated_;
    } else {
      decision.effective = true;
      decision.provider_message_id = message_id_prefix_ + std::to_string(next_message_id_++);
      ++effective_;
      ++endpoint_count.effective_deliveries;
      if (state) {
        if (state->effective++ == 0) {
          state->endpoint = endpoint;
          state->provider_message_id = decision.provider_message_id;
        }
      }
    }
  }

  if (max_log_entries_ > 0) {
    if (log_.size() >= max_log_entries_)
      log_.pop_front();
    log_.push_back(call_entry{endpoint, request_id, attempt, at, outcome, decision.effective,
                              decision.deduplicated, decision.provider_message_id});
  }
  return decision;
}

call_summary call_record::summary(std::size_t max_listed) const {
  std::lock_guard<std::mutex> lock(mutex_);
  call_summary summary;
  summary.calls = calls_;
  summary.calls_without_id = calls_without_id_;
  summary.distinct_ids = ids_.size();
  summary.effective_deliveries = effective_;
  summary.deduplicated = deduplicated_;
  summary.by_endpoint = by_endpoint_;
  for (auto outcome : all_outcomes) {
    auto found = outcomes_.find(outcome);
    summary.outcomes[std::string(to_string(outcome))] =
        found == outcomes_.end() ? 0 : found->second;
  }
  std::vector<std::string> repeated;
  for (const auto& [id, state] : ids_) {
    if (state.effective > 1) {
      summary.duplicate_effective_deliveries += state.effective - 1;
      repeated.push_back(id);
    }
  }
  std::sort(repeated.begin(), repeated.end());
  if (repeated.size() > max_listed)
    repeated.resize(max_listed);
  summary.ids_delivered_more_than_once = std::move(repeated);
  return summary;
}

std::vector<std::string>
call_record::delivered_ids(const std::optional<std::string>& endpoint) const {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ids.reserve(ids_.size());
    for (const auto& [id, state] : ids_)
      if (state.effective > 0 && (!endpoint || state.endpoint == *endpoint))
        ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::uint64_t call_record::deliveries_of(const std::string& request_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = ids_.find(request_id);
  return found == ids_.end() ? 0 : found->second.effective;
}

std::vector<call_entry> call_record::recent(std::size_t limit) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto count = std::min(limit, log_.size());
  return {log_.end() - static_cast<std::ptrdiff_t>(count), log_.end()};
}

void call_record::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_ = calls_without_id_ = effective_ = deduplicated_ = 0;
  ids_.clear();
  by_endpoint_.clear();
  outcomes_.clear();
  log_.clear();
}

} // namespace herald::tools
