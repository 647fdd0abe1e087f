#pragma once

#include "providers/provider.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>

namespace herald::providers {

class delay_scheduler;

/// Fault profile of a simulated provider.
struct simulated_profile {
  std::chrono::milliseconds latency{0};
  double retryable_failure_rate = 0.0; ///< share of calls answered "busy, try again"
  double permanent_failure_rate = 0.0; ///< share of calls answered "bad recipient"
  std::uint64_t seed = 1;              ///< fixed, so a load test's faults are repeatable
};

/// A provider that answers by its profile and never leaves the process; for running herald
/// without real providers and for load tests. With zero latency it answers inline.
class simulated_provider final : public provider_adapter {
public:
  simulated_provider(simulated_profile profile, std::shared_ptr<delay_scheduler> delays);

  void send(provider_request request, provider_callback done) override;

private:
  provider_result decide(const provider_request& request);

  simulated_profile profile_;
  std::shared_ptr<delay_scheduler> delays_;
  std::mutex mutex_; ///< guards rng_: send() may be called from several threads
  std::mt19937_64 rng_;
};

/// Runs callbacks after a delay on one background thread; simulated latency uses it so no
/// actor thread ever waits.
class delay_scheduler {
public:
  delay_scheduler();
  ~delay_scheduler();
  delay_scheduler(const delay_scheduler&) = delete;
  delay_scheduler& operator=(const delay_scheduler&) = delete;

  void after(std::chrono::milliseconds delay, std::function<void()> what);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace herald::providers
