#pragma once

// Collects what a provider adapter answers, from whatever thread it answers on. Header-only:
// only the test areas that link the providers use it.

#include "providers/provider.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

namespace herald::test {

/// Provider answers from the adapter's thread; waits for them with a bound.
struct provider_answers {
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

  /// Whether `count` answers came within `bound`.
  bool wait_for(std::size_t count,
                std::chrono::milliseconds bound = std::chrono::milliseconds{20000}) {
    std::unique_lock<std::mutex> lock{mutex};
    return arrived.wait_for(lock, bound, [&] { return results.size() >= count; });
  }

  std::size_t size() {
    std::lock_guard<std::mutex> guard{mutex};
    return results.size();
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
