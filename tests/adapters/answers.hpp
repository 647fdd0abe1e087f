#pragma once

// Provider answers as the adapters' threads deliver them, waited for with a bound.

#include "providers/provider.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace herald::test {

/// Collects provider answers from the adapter's thread; waits for them with a bound.
struct answers {
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<providers::provider_result> results;

  providers::provider_callback collect() {
    return [this](providers::provider_result result) {
      std::lock_guard<std::mutex> guard{mutex};
      results.push_back(std::move(result));
      arrived.notify_all();
    };
  }
  bool wait_for(std::size_t count, std::chrono::milliseconds bound = std::chrono::seconds{20}) {
    std::unique_lock<std::mutex> lock{mutex};
    return arrived.wait_for(lock, bound, [&] { return results.size() >= count; });
  }
  std::size_t count(call_outcome outcome) {
    std::lock_guard<std::mutex> guard{mutex};
    std::size_t n = 0;
    for (const auto& r : results)
      n += r.outcome == outcome ? 1 : 0;
    return n;
  }
};

} // namespace herald::test
