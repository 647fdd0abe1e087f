#include "domain/rate_limit.hpp"

#include <cmath>

#include <boost/test/unit_test.hpp>

using namespace herald::domain;
using namespace std::chrono_literals;

namespace {

const timestamp start = from_unix_micros(1'800'000'000'000'000LL);

} // namespace

BOOST_AUTO_TEST_SUITE(rate_limit_tests)

BOOST_AUTO_TEST_CASE(starts_full_and_empties) {
  token_bucket bucket{10, 3, start};
  BOOST_TEST(bucket.available(start) == 3.0);
  BOOST_TEST(bucket.try_take(start));
  BOOST_TEST(bucket.try_take(start));
  BOOST_TEST(bucket.try_take(start));
  BOOST_TEST(!bucket.try_take(start));
  BOOST_TEST(bucket.available(start) == 0.0);
}

BOOST_AUTO_TEST_CASE(refills_continuously) {
  token_bucket bucket{4, 1, start};
  BOOST_TEST(bucket.try_take(start));
  BOOST_TEST(bucket.available(start + 125ms) == 0.5, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(!bucket.try_take(start + 249'999us));
  BOOST_TEST(bucket.try_take(start + 250ms));
  BOOST_TEST(!bucket.try_take(start + 250ms));
}

BOOST_AUTO_TEST_CASE(refill_is_capped_at_burst) {
  token_bucket bucket{100, 2, start};
  BOOST_TEST(bucket.try_take(start));
  BOOST_TEST(bucket.available(start + 1h) == 2.0);
  BOOST_TEST(bucket.try_take(start + 1h));
  BOOST_TEST(bucket.try_take(start + 1h));
  BOOST_TEST(!bucket.try_take(start + 1h));
}

BOOST_AUTO_TEST_CASE(wait_time_is_the_rounded_up_missing_fraction) {
  token_bucket bucket{4, 1, start};
  BOOST_TEST(bucket.wait_time(start).count() == 0);
  BOOST_TEST(bucket.try_take(start));
  BOOST_TEST(bucket.wait_time(start).count() == 250'000);
  BOOST_TEST(bucket.wait_time(start + 100ms).count() == 150'000);

  token_bucket slow{3, 1, start}; // 1/3 s is not a whole number of microseconds
  BOOST_TEST(slow.try_take(start));
  BOOST_TEST(slow.wait_time(start).count() == 333'334);
}

BOOST_AUTO_TEST_CASE(waiting_the_wait_time_is_enough) {
  for (double rate : {0.5, 3.0, 7.0, 1000.0, 12345.0}) {
    token_bucket bucket{rate, 1, start};
    timestamp now = start;
    for (int i = 0; i < 50; ++i) {
      BOOST_TEST(bucket.try_take(now), "rate " << rate << " take " << i);
      now += bucket.wait_time(now);
    }
  }
}

BOOST_AUTO_TEST_CASE(sustained_rate_matches_configuration) {
  token_bucket bucket{50, 5, start};
  int taken = 0;
  for (auto t = start; t < start + 10s; t += 1ms)
    taken += bucket.try_take(t) ? 1 : 0;
  // 5 from the initial burst, then 50 per second for 10 s (the last one may fall outside).
  BOOST_TEST(taken >= 504);
  BOOST_TEST(taken <= 505);
}

BOOST_AUTO_TEST_CASE(non_positive_rate_is_unlimited) {
  for (double rate : {0.0, -1.0}) {
    token_bucket bucket{rate, 1, start};
    for (int i = 0; i < 1000; ++i)
      BOOST_TEST_REQUIRE(bucket.try_take(start));
    BOOST_TEST(bucket.wait_time(start).count() == 0);
    BOOST_TEST(std::isinf(bucket.available(start)));
  }
}

BOOST_AUTO_TEST_CASE(time_going_backwards_adds_nothing) {
  token_bucket bucket{1, 1, start};
  BOOST_TEST(bucket.try_take(start));
  BOOST_TEST(!bucket.try_take(start - 10s));
  BOOST_TEST(bucket.wait_time(start).count() == 1'000'000);
}

BOOST_AUTO_TEST_CASE(burst_below_one_still_lets_one_through) {
  token_bucket bucket{1, 0.25, start};
  BOOST_TEST(bucket.try_take(start));
  BOOST_TEST(!bucket.try_take(start));
  BOOST_TEST(bucket.try_take(start + 1s));
}

// A cluster's third node joins: each node's share drops from 1/2 to 1/3 of the rate, and what
// a node had saved up never exceeds the new, smaller burst.
BOOST_AUTO_TEST_CASE(new_limits_keep_earned_tokens_up_to_the_new_burst) {
  token_bucket bucket{100, 10, start};
  bucket.set_limits(50, 4, start);
  BOOST_TEST(bucket.available(start) == 4.0);
  for (int i = 0; i < 4; ++i)
    BOOST_TEST(bucket.try_take(start));
  BOOST_TEST(!bucket.try_take(start));
  BOOST_TEST(bucket.available(start + 20ms) == 1.0, boost::test_tools::tolerance(1e-9));
  // Time before the change is paid at the old rate, after it at the new one.
  bucket.set_limits(200, 4, start + 20ms);
  BOOST_TEST(bucket.available(start + 25ms) == 2.0, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_SUITE_END()
