#pragma once

#include "observability/metrics.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace herald::providers {

/// One provider call for one task.
struct provider_request {
  std::string task_id;
  std::string channel;
  std::string recipient;
  std::string provider_request_id; ///< the same on every attempt: providers may dedupe by it
  std::string title;
  std::string body;
  std::string trace_id;
  std::uint32_t attempt = 1; ///< 1-based
};

/// What a provider answered, already classified.
struct provider_result {
  call_outcome outcome = call_outcome::success;
  /// On success the provider's id for the message (receipts may name the task by it; kept on
  /// the task), the error otherwise.
  std::string detail;
  std::optional<std::chrono::milliseconds> retry_after; ///< a provider's explicit pause
};

/// Called exactly once per send(), on any thread.
using provider_callback = std::function<void(provider_result)>;

/// What a channel calls. Implementations never block the caller and never throw from send():
/// every failure comes back through the callback as a classified result.
class provider_adapter {
public:
  virtual ~provider_adapter() = default;

  /// Starts one call; `done` gets its result.
  virtual void send(provider_request request, provider_callback done) = 0;
};

} // namespace herald::providers
