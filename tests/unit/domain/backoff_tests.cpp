#include "domain/backoff.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::domain;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(backoff_tests)

BOOST_AUTO_TEST_CASE(default_policy_is_the_documented_schedule) {
  const retry_policy policy = default_retry_policy();
  BOOST_TEST(policy.schedule.size() == 5u);
  BOOST_TEST(
      (policy.schedule == std::vector<std::chrono::milliseconds>{1min, 5min, 30min, 2h, 6h}));
  BOOST_TEST(policy.jitter == 0.2);
  BOOST_TEST(policy.max_attempts == 6u);
}

BOOST_AUTO_TEST_CASE(middle_random_gives_the_scheduled_delay) {
  const retry_policy policy = default_retry_policy();
  const std::vector<std::chrono::milliseconds> expected = {1min, 5min, 30min, 2h, 6h};
  for (std::uint32_t made = 1; made <= 5; ++made) {
    const auto delay = policy.next_delay(made, 0.5);
    BOOST_REQUIRE(delay.has_value());
    BOOST_TEST(delay->count() == expected[made - 1].count(), "after " << made << " calls");
  }
}

BOOST_AUTO_TEST_CASE(exhausted_after_max_attempts) {
  const retry_policy policy = default_retry_policy();
  BOOST_TEST(policy.next_delay(5, 0.5).has_value());
  BOOST_TEST(!policy.next_delay(6, 0.5).has_value());
  BOOST_TEST(!policy.next_delay(7, 0.5).has_value());
}

BOOST_AUTO_TEST_CASE(jitter_spreads_both_ways) {
  const retry_policy policy = default_retry_policy();
  BOOST_TEST(policy.next_delay(1, 0.0)->count() == 48'000);   // 60 s * 0.8
  BOOST_TEST(policy.next_delay(1, 0.75)->count() == 66'000);  // 60 s * 1.1
  BOOST_TEST(policy.next_delay(2, 0.99)->count() == 358'800); // 300 s * 1.196
  for (double r = 0.0; r < 1.0; r += 0.01) {
    const auto delay = policy.next_delay(3, r);
    BOOST_TEST(delay->count() >= 1'440'000);
    BOOST_TEST(delay->count() <= 2'160'000);
  }
}

BOOST_AUTO_TEST_CASE(last_step_repeats) {
  retry_policy policy;
  policy.schedule = {1s, 10s};
  policy.jitter = 0;
  policy.max_attempts = 10;
  BOOST_TEST(policy.next_delay(1, 0.3)->count() == 1000);
  BOOST_TEST(policy.next_delay(2, 0.3)->count() == 10'000);
  BOOST_TEST(policy.next_delay(9, 0.3)->count() == 10'000);
  BOOST_TEST(!policy.next_delay(10, 0.3).has_value());
}

BOOST_AUTO_TEST_CASE(edge_inputs) {
  retry_policy policy = default_retry_policy();
  BOOST_TEST(policy.next_delay(0, 0.9)->count() == 0);       // nothing tried yet: no wait
  BOOST_TEST(policy.next_delay(1, 7.0)->count() == 72'000);  // random clamped to 1
  BOOST_TEST(policy.next_delay(1, -3.0)->count() == 48'000); // random clamped to 0

  retry_policy once = policy;
  once.max_attempts = 1;
  BOOST_TEST(!once.next_delay(1, 0.5).has_value());

  retry_policy empty = policy;
  empty.schedule.clear();
  BOOST_TEST(!empty.next_delay(1, 0.5).has_value());
}

BOOST_AUTO_TEST_CASE(delay_never_exceeds_the_cap) {
  // A policy built in code (config refuses such steps) still cannot make `now + delay`
  // overflow: the delay stops at max_retry_delay, jitter included.
  retry_policy policy;
  policy.schedule = {std::chrono::milliseconds{INT64_MAX}, max_retry_delay};
  policy.jitter = 0.5;
  policy.max_attempts = 10;
  BOOST_TEST(policy.next_delay(1, 0.5)->count() == max_retry_delay.count());
  BOOST_TEST(policy.next_delay(2, 0.99)->count() == max_retry_delay.count());
  BOOST_TEST(policy.next_delay(2, 0.0)->count() == max_retry_delay.count() / 2);
  BOOST_TEST(max_retry_delay.count() == 7 * 24 * 3600 * 1000);
}

BOOST_AUTO_TEST_SUITE_END()
