#pragma once

// A provider_adapter standing for the outside world in actor tests: it records every call and
// answers from a script, either inline inside send() or later, when the test releases held
// calls. Every answer runs on the test thread, so the deterministic scheduler sees it.
// With answers_status on it also has a status API: it answers from a script of its own, or
// else from its memory (found "accepted" for a request id it was called with, not_found
// otherwise) — the memory a real provider keeps across herald's crashes.

#include "providers/provider.hpp"

#include <cstddef>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace herald::test {

class recording_provider final : public providers::provider_adapter {
public:
  static providers::provider_result success() {
    return {call_outcome::success, "provider-message-id", std::nullopt};
  }
  static providers::provider_result retryable() {
    return {call_outcome::retryable, "busy, try again", std::nullopt};
  }
  static providers::provider_result permanent() {
    return {call_outcome::permanent, "no such recipient", std::nullopt};
  }

  /// Runs inside send(), before anything is answered: lets a test look at the database at
  /// the moment of the call.
  std::function<void(const providers::provider_request&)> on_send;

  /// Every call in order.
  std::vector<providers::provider_request> calls;

  /// Whether the provider has a status API.
  bool answers_status = false;

  /// Every status query in order.
  std::vector<providers::provider_status_query> queries;

  static providers::status_answer found(providers::provider_status status,
                                        std::string message_id = {}) {
    return {providers::status_answer::kind::found, status, std::move(message_id), {}};
  }
  static providers::status_answer not_found() {
    return {
        providers::status_answer::kind::not_found, providers::provider_status::accepted, {}, "404"};
  }
  static providers::status_answer unknown() {
    return {providers::status_answer::kind::unknown,
            providers::provider_status::accepted,
            {},
            "status query timed out"};
  }

  /// Answers the next status queries in order; once used up, the provider answers from memory.
  void script_status(std::vector<providers::status_answer> answers) {
    for (auto& answer : answers)
      status_script_.push_back(std::move(answer));
  }

  /// Answers every status query for this provider request id so (after the script).
  void answer_status_for(const std::string& provider_request_id, providers::status_answer answer) {
    status_by_id_[provider_request_id] = std::move(answer);
  }

  /// While holding, status queries wait for release_status() instead of being answered inline.
  void hold_status(bool on) { holding_status_ = on; }

  std::size_t held_status() const { return held_status_.size(); }

  /// Answers every held status query, oldest first.
  void release_status() {
    while (!held_status_.empty()) {
      auto next = std::move(held_status_.front());
      held_status_.pop_front();
      next();
    }
  }

  std::size_t queries_for(const std::string& task_id) const {
    std::size_t n = 0;
    for (const auto& query : queries)
      n += query.task_id == task_id ? 1 : 0;
    return n;
  }

  /// Answers the next calls in order; once the script is used up, calls succeed.
  void script(std::vector<providers::provider_result> results) {
    for (auto& result : results)
      script_.push_back(std::move(result));
  }

  /// While holding, calls wait for release() instead of being answered inside send().
  void hold(bool on) { holding_ = on; }

  std::size_t held() const { return held_.size(); }

  /// Answers up to `n` held calls, oldest first; returns how many were answered.
  std::size_t release(std::size_t n = std::numeric_limits<std::size_t>::max()) {
    std::size_t answered = 0;
    while (answered < n && !held_.empty()) {
      auto done = std::move(held_.front());
      held_.pop_front();
      done(next_result());
      ++answered;
    }
    return answered;
  }

  /// Forgets held calls without answering them (a provider that never answers).
  void drop_held() { held_.clear(); }

  std::size_t calls_for(const std::string& task_id) const {
    std::size_t n = 0;
    for (const auto& call : calls)
      n += call.task_id == task_id ? 1 : 0;
    return n;
  }

  void send(providers::provider_request request, providers::provider_callback done) override {
    remembered_.insert(request.provider_request_id);
    calls.push_back(request);
    if (on_send)
      on_send(request);
    if (holding_)
      held_.push_back(std::move(done));
    else
      done(next_result());
  }

  bool can_query_status() const override { return answers_status; }

  void query_status(providers::provider_status_query query,
                    providers::status_callback done) override {
    if (!answers_status) {
      provider_adapter::query_status(std::move(query), std::move(done));
      return;
    }
    queries.push_back(query);
    auto answer = next_status(query);
    if (holding_status_)
      held_status_.push_back([done = std::move(done), answer]() mutable { done(answer); });
    else
      done(std::move(answer));
  }

private:
  providers::status_answer next_status(const providers::provider_status_query& query) {
    if (!status_script_.empty()) {
      auto answer = std::move(status_script_.front());
      status_script_.pop_front();
      return answer;
    }
    if (auto it = status_by_id_.find(query.provider_request_id); it != status_by_id_.end())
      return it->second;
    return remembered_.count(query.provider_request_id) != 0
               ? found(providers::provider_status::accepted)
               : not_found();
  }

  providers::provider_result next_result() {
    if (script_.empty())
      return success();
    auto result = std::move(script_.front());
    script_.pop_front();
    return result;
  }

  std::deque<providers::provider_result> script_;
  std::deque<providers::provider_callback> held_;
  bool holding_ = false;
  std::set<std::string> remembered_; ///< request ids of every call: the status API's memory
  std::deque<providers::status_answer> status_script_;
  std::map<std::string, providers::status_answer> status_by_id_;
  std::deque<std::function<void()>> held_status_;
  bool holding_status_ = false;
};

} // namespace herald::test
