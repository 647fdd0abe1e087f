#pragma once

// Calling a provider adapter in tests: numbered requests, its answers collected from the thread
// it calls back on (waited for with a bound), and golden error tables checked row by row.
// Header-only: the shared test-support library does not link the providers.

#include "providers/provider.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

namespace herald::test {

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
  bool wait_for(std::size_t count, std::chrono::milliseconds bound = std::chrono::seconds{20}) {
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

/// Request `n` of a test: task-<n> with provider request id hrq_<n>, "Order shipped".
inline providers::provider_request numbered_request(int n, const std::string& channel,
                                                    const std::string& recipient) {
  providers::provider_request r;
  r.task_id = "task-" + std::to_string(n);
  r.channel = channel;
  r.recipient = recipient;
  r.provider_request_id = "hrq_" + std::to_string(n);
  r.title = "Order shipped";
  r.body = "Order " + std::to_string(n) + " is on its way";
  return r;
}

/// What `adapter` answers `request`, waited for (bounded).
inline providers::provider_result send_and_wait(providers::provider_adapter& adapter,
                                                providers::provider_request request) {
  provider_answers got;
  adapter.send(std::move(request), got.collect());
  BOOST_REQUIRE(got.wait_for(1));
  return got.results.front();
}

/// Checks that `send()`, whose answer the fake holds back, is outcome unknown, and only once
/// `timeout` has passed.
template <class Send>
void check_unanswered_times_out(Send send, std::chrono::milliseconds timeout) {
  const auto started = std::chrono::steady_clock::now();
  const providers::provider_result result = send();
  BOOST_TEST((result.outcome == call_outcome::timeout), result.detail);
  BOOST_TEST((std::chrono::steady_clock::now() - started >= timeout));
}

/// One row of an adapter's golden error table: what its fake answers, and how herald classes
/// that answer.
template <class Fault> struct golden_row {
  Fault fault;
  call_outcome outcome;
  std::string detail; ///< how the result's detail starts
  bool config_error;  ///< counted in herald_provider_config_errors_total
  std::optional<std::chrono::milliseconds> retry_after;
};

/// Checks the rows in order: `script(fault)` makes the fake answer the next send so,
/// `send(n)` sends request n and returns its result, and `config_errors(k)` says whether the
/// channel's herald_provider_config_errors_total reads k.
template <class Fault, class Script, class Send, class ConfigErrors>
void check_golden_table(const std::vector<golden_row<Fault>>& table, Script script, Send send,
                        ConfigErrors config_errors) {
  int n = 1;
  int config_errors_so_far = 0;
  for (const auto& row : table) {
    script(row.fault);
    const auto result = send(n++);
    BOOST_TEST_CONTEXT(row.detail) {
      BOOST_TEST(to_string(result.outcome) == to_string(row.outcome));
      BOOST_TEST(result.detail.find(row.detail) == 0u, result.detail);
      BOOST_TEST((result.retry_after == row.retry_after));
      config_errors_so_far += row.config_error ? 1 : 0;
      if (config_errors_so_far > 0)
        BOOST_TEST(config_errors(config_errors_so_far));
    }
  }
}

} // namespace herald::test
