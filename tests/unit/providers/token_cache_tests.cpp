#include "providers/token_cache.hpp"

#include <atomic>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace herald::providers;
using herald::call_outcome;
using namespace std::chrono_literals;

namespace {

/// A token endpoint the test answers by hand: fetches wait until answer() is called.
struct manual_endpoint {
  std::vector<std::function<void(std::variant<issued_token, token_failure>)>> pending;
  int issued = 0;

  token_cache::fetcher fetcher() {
    return [this](auto done) { pending.push_back(std::move(done)); };
  }
  void answer(std::chrono::seconds lifetime = 7200s) {
    auto all = std::move(pending);
    pending.clear();
    for (auto& done : all)
      done(issued_token{"token-" + std::to_string(++issued), lifetime});
  }
  void refuse() {
    auto all = std::move(pending);
    pending.clear();
    for (auto& done : all)
      done(token_failure{{call_outcome::retryable, "invalid appsecret", std::nullopt}, true});
  }
};

struct fake_clock {
  std::chrono::steady_clock::time_point now{};
  token_cache::clock_fn fn() {
    return [this] { return now; };
  }
};

std::string token_of(const token_or_failure& answer) {
  const auto* token = std::get_if<std::string>(&answer);
  return token == nullptr ? "<failure>" : *token;
}

/// A cache over a manual endpoint and clock, remembering the last answer it gave.
struct cache_fixture {
  manual_endpoint endpoint;
  fake_clock clock;
  token_cache cache{endpoint.fetcher(), std::chrono::seconds{300}, clock.fn()};
  std::string last;

  void get() {
    cache.get([this](token_or_failure answer) { last = token_of(answer); });
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(token_cache_tests)

BOOST_FIXTURE_TEST_CASE(a_thousand_waiting_sends_cause_one_fetch, cache_fixture) {
  std::vector<std::string> got;
  for (int i = 0; i < 1000; ++i)
    cache.get([&](token_or_failure answer) { got.push_back(token_of(answer)); });
  BOOST_TEST(endpoint.pending.size() == 1u);
  BOOST_TEST(got.empty());
  endpoint.answer();
  BOOST_TEST(got.size() == 1000u);
  BOOST_TEST((got.front() == "token-1" && got.back() == "token-1"));
  cache.get([&](token_or_failure answer) { got.push_back(token_of(answer)); });
  BOOST_TEST(got.back() == "token-1"); // cached: answered inline, no fetch
  BOOST_TEST(cache.fetches() == 1u);
}

BOOST_FIXTURE_TEST_CASE(a_token_is_refreshed_the_margin_before_it_expires, cache_fixture) {
  get();
  endpoint.answer(7200s);
  clock.now += 6899s;
  get();
  BOOST_TEST(last == "token-1");
  BOOST_TEST(endpoint.pending.empty());
  clock.now += 1s; // 7200 - 300
  get();
  BOOST_TEST(endpoint.pending.size() == 1u);
  endpoint.answer();
  BOOST_TEST(last == "token-2");
}

BOOST_FIXTURE_TEST_CASE(only_the_current_token_is_invalidated, cache_fixture) {
  get();
  endpoint.answer();
  cache.invalidate("token-1");
  get();
  endpoint.answer();
  BOOST_TEST(last == "token-2");
  // Late refusals of the old token (sends that used it before the refresh) change nothing.
  cache.invalidate("token-1");
  cache.invalidate("token-1");
  get();
  BOOST_TEST(endpoint.pending.empty());
  BOOST_TEST(last == "token-2");
  BOOST_TEST(cache.fetches() == 2u);
}

BOOST_FIXTURE_TEST_CASE(a_refused_fetch_answers_every_waiter_and_is_held_for_a_while,
                        cache_fixture) {
  int failures = 0;
  for (int i = 0; i < 3; ++i)
    cache.get([&](token_or_failure answer) {
      if (auto* failure = std::get_if<token_failure>(&answer))
        failures += failure->config_error ? 1 : 0;
    });
  endpoint.refuse();
  BOOST_TEST(failures == 3);
  clock.now += 4999ms; // within the hold: answered at once, the endpoint not asked again
  get();
  BOOST_TEST(last == "<failure>");
  BOOST_TEST(endpoint.pending.empty());
  clock.now += 1ms;
  get();
  BOOST_TEST(endpoint.pending.size() == 1u);
  endpoint.answer();
  BOOST_TEST(last == "token-1");
}

BOOST_FIXTURE_TEST_CASE(a_short_lived_token_is_used_for_half_its_life, cache_fixture) {
  get();
  endpoint.answer(300s); // WeChat's stable_token may live just 300 s: within the margin
  clock.now += 149s;
  get();
  BOOST_TEST(endpoint.pending.empty());
  clock.now += 1s;
  get();
  BOOST_TEST(endpoint.pending.size() == 1u);
}

// expires_in comes from the provider's answer: any positive 64-bit number reads. A lifetime
// beyond what the clock can add (2^63 ns is 292 years) must still leave the token usable, not
// wrap around into the past (a fetch per send) or overflow (undefined behaviour).
BOOST_AUTO_TEST_CASE(an_absurdly_long_lifetime_keeps_the_token_without_overflowing) {
  for (const auto lifetime : {std::chrono::seconds{10'000'000'000LL},
                              std::chrono::seconds{std::numeric_limits<std::int64_t>::max()}}) {
    manual_endpoint endpoint;
    token_cache cache{endpoint.fetcher()};
    std::string last;
    cache.get([&](token_or_failure answer) { last = token_of(answer); });
    endpoint.answer(lifetime);
    BOOST_TEST(last == "token-1");
    cache.get([&](token_or_failure answer) { last = token_of(answer); });
    BOOST_TEST(endpoint.pending.empty()); // still valid: answered without a fetch
    BOOST_TEST(cache.fetches() == 1u);
  }
}

BOOST_AUTO_TEST_CASE(a_fetcher_that_throws_is_a_retryable_failure) {
  token_cache cache{[](auto) { throw std::runtime_error("no memory"); }};
  std::optional<call_outcome> outcome;
  cache.get([&](token_or_failure answer) {
    if (auto* failure = std::get_if<token_failure>(&answer))
      outcome = failure->result.outcome;
  });
  BOOST_TEST((outcome == call_outcome::retryable));
}

BOOST_AUTO_TEST_CASE(concurrent_gets_from_many_threads_share_one_fetch) {
  std::atomic<int> fetches{0};
  std::function<void(std::variant<issued_token, token_failure>)> answer_later;
  std::mutex answer_mutex;
  token_cache cache{[&](auto done) {
    ++fetches;
    std::lock_guard<std::mutex> guard{answer_mutex};
    answer_later = std::move(done);
  }};
  std::atomic<int> answered{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 125; ++i)
        cache.get([&](token_or_failure) { ++answered; });
    });
  for (auto& thread : threads)
    thread.join();
  BOOST_TEST(fetches.load() == 1);
  {
    std::lock_guard<std::mutex> guard{answer_mutex};
    answer_later(issued_token{"t", 7200s});
  }
  BOOST_TEST(answered.load() == 1000);
}

BOOST_AUTO_TEST_SUITE_END()
