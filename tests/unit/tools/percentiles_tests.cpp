#include "tools/percentiles.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::tools;

BOOST_AUTO_TEST_SUITE(percentiles_tests)

BOOST_AUTO_TEST_CASE(nearest_rank_on_one_to_a_hundred) {
  std::vector<double> values;
  for (int i = 100; i >= 1; --i) // unsorted on purpose
    values.push_back(i);
  BOOST_TEST(percentile(values, 50) == 50.0);
  BOOST_TEST(percentile(values, 99) == 99.0);
  BOOST_TEST(percentile(values, 99.5) == 100.0);
  BOOST_TEST(percentile(values, 100) == 100.0);
  BOOST_TEST(percentile(values, 0) == 1.0);
  BOOST_TEST(percentile(values, 1) == 1.0);
}

BOOST_AUTO_TEST_CASE(small_and_empty_inputs) {
  BOOST_TEST(percentile({}, 50) == 0.0);
  BOOST_TEST(percentile({7}, 50) == 7.0);
  BOOST_TEST(percentile({7}, 99) == 7.0);
  BOOST_TEST(percentile({1, 2}, 50) == 1.0);
  BOOST_TEST(percentile({1, 2}, 51) == 2.0);
  BOOST_TEST(percentile({3, 1, 2}, 99) == 3.0);
}

BOOST_AUTO_TEST_CASE(summary_of_latencies) {
  std::vector<double> values(1000, 1.0);
  values[17] = 250.0;          // one outlier: max, not p99
  for (int i = 0; i < 20; ++i) // 2% slow: p99
    values[100 + i] = 40.0;
  auto summary = summarize_latencies(values);
  BOOST_TEST(summary.count == 1000u);
  BOOST_TEST(summary.p50 == 1.0);
  BOOST_TEST(summary.p99 == 40.0);
  BOOST_TEST(summary.max == 250.0);

  // p999 of 1000 values is the 999th: the outlier above it stays the max only.
  BOOST_TEST(summary.p999 == 40.0);

  std::vector<double> many(2000, 1.0);
  many[5] = 300.0; // the 2000th: max
  many[6] = 90.0;  // the 1999th: above p999 (the 1998th)
  many[7] = 70.0;  // the 1998th: p999
  many[8] = 50.0;
  auto tail = summarize_latencies(many);
  BOOST_TEST(tail.p99 == 1.0);
  BOOST_TEST(tail.p999 == 70.0);
  BOOST_TEST(tail.max == 300.0);

  auto empty = summarize_latencies({});
  BOOST_TEST(empty.count == 0u);
  BOOST_TEST(empty.max == 0.0);
  BOOST_TEST(empty.p999 == 0.0);
}

BOOST_AUTO_TEST_SUITE_END()
