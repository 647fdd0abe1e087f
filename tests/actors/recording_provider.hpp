#pragma once

// A provider_adapter standing for the outside world in actor tests: it records every call and
// answers from a script, either inline inside send() or later, when the test releases held
// calls. Every answer runs on the test thread, so the deterministic scheduler sees it.

#include "providers/provider.hpp"

#include <cstddef>
#include <deque>
#include <functional>
#include <limits>
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
    calls.push_back(request);
    if (on_send)
      on_send(request);
    if (holding_)
      held_.push_back(std::move(done));
    else
      done(next_result());
  }

private:
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
};

} // namespace herald::test
