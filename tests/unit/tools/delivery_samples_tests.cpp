#include "tools/delivery_samples.hpp"

#include <string>

#include <boost/test/unit_test.hpp>

using namespace herald::tools;

namespace {

provider_sample at(double at_s, double calls, double successes, double retry_queue = 0) {
  provider_sample sample;
  sample.at_s = at_s;
  sample.calls = calls;
  sample.successes = successes;
  sample.retry_queue_depth = retry_queue;
  return sample;
}

} // namespace

BOOST_AUTO_TEST_SUITE(delivery_samples_tests)

BOOST_AUTO_TEST_CASE(a_metrics_answer_becomes_a_sample) {
  std::string text = "# HELP herald_provider_calls_total Provider calls by outcome\n"
                     "# TYPE herald_provider_calls_total counter\n"
                     "herald_provider_calls_total{channel=\"app\",outcome=\"success\"} 30\n"
                     "herald_provider_calls_total{channel=\"sms\",outcome=\"retryable\"} 4\n"
                     "herald_provider_calls_total{channel=\"sms\",outcome=\"success\"} 25\n"
                     "herald_retry_queue_depth 3\n";
  auto sample = read_provider_sample(text, 1.5);
  BOOST_TEST(sample.at_s == 1.5);
  BOOST_TEST(sample.has_counter);
  BOOST_TEST(sample.calls == 59.0);
  BOOST_TEST(sample.successes == 55.0);
  BOOST_TEST(sample.retry_queue_depth == 3.0);

  // Before herald's first call the family is not on /metrics at all: zero calls.
  auto idle = read_provider_sample("herald_retry_queue_depth 0\n", 0);
  BOOST_TEST(!idle.has_counter);
  BOOST_TEST(idle.calls == 0.0);
  BOOST_TEST(idle.successes == 0.0);
}

BOOST_AUTO_TEST_CASE(rate_counts_to_the_first_sample_with_the_final_count) {
  auto baseline = at(-0.1, 100, 90); // an earlier run's calls
  std::vector<provider_sample> samples{at(0.25, 100, 90),  at(0.5, 150, 130), at(1.0, 400, 370),
                                       at(1.25, 500, 490), at(1.5, 505, 490), at(1.75, 505, 490)};
  auto figures = delivery_from_samples(baseline, samples);
  BOOST_TEST(figures.calls == 405.0);
  BOOST_TEST(figures.delivered == 400.0);
  // The last success was seen at 1.25 s; the retryable calls after it do not stretch the time.
  BOOST_TEST(figures.last_at_s == 1.25);
  BOOST_TEST(figures.per_s == 320.0);
}

BOOST_AUTO_TEST_CASE(no_delivery_gives_no_rate) {
  auto baseline = at(0, 10, 10);
  auto figures = delivery_from_samples(baseline, {at(0.25, 12, 10), at(0.5, 14, 10)});
  BOOST_TEST(figures.delivered == 0.0);
  BOOST_TEST(figures.calls == 4.0);
  BOOST_TEST(figures.last_at_s == 0.0);
  BOOST_TEST(figures.per_s == 0.0);
  BOOST_TEST(delivery_from_samples(baseline, {}).delivered == 0.0);
}

BOOST_AUTO_TEST_CASE(a_restarted_herald_gives_no_figures) {
  auto baseline = at(0, 100, 100);
  // Killed after 150 calls; the new process counted 30 by the end.
  std::vector<provider_sample> samples{at(1, 150, 150), at(2, 10, 10), at(3, 30, 30)};
  auto figures = delivery_from_samples(baseline, samples);
  BOOST_TEST(figures.counter_reset);
  BOOST_TEST(figures.delivered == 0.0);
  BOOST_TEST(figures.per_s == 0.0);
  // Restarted before the first reading: below the baseline.
  BOOST_TEST(delivery_from_samples(baseline, {at(1, 20, 20)}).counter_reset);
  BOOST_TEST(!delivery_from_samples(baseline, {at(1, 120, 110)}).counter_reset);
  // Quiet counts from when the new process's count stopped, not from an old equal reading.
  std::vector<provider_sample> again{at(1, 30, 30), at(2, 150, 150), at(3, 10, 10), at(4, 30, 30),
                                     at(5, 30, 30)};
  BOOST_TEST(!deliveries_settled(baseline, again, 1000, 0, 2));
  again.push_back(at(6, 30, 30));
  BOOST_TEST(deliveries_settled(baseline, again, 1000, 0, 2));
}

BOOST_AUTO_TEST_CASE(the_wait_ends_when_all_tasks_were_delivered) {
  auto baseline = at(0, 100, 100);
  BOOST_TEST(!deliveries_settled(baseline, {at(1, 140, 139)}, 40, 1, 2));
  BOOST_TEST(deliveries_settled(baseline, {at(1, 140, 140)}, 40, 1, 2));
  BOOST_TEST(!deliveries_settled(baseline, {}, 40, 1, 2));
}

BOOST_AUTO_TEST_CASE(the_wait_ends_when_calls_went_quiet_with_no_retry_waiting) {
  auto baseline = at(0, 0, 0);
  // Calls stopped at 1.0 s, two tasks failed for good: quiet from 1.0 s.
  std::vector<provider_sample> quiet{at(0.5, 10, 10), at(1.0, 20, 18), at(2.0, 20, 18),
                                     at(3.0, 20, 18)};
  BOOST_TEST(deliveries_settled(baseline, quiet, 20, 1.0, 2.0));
  BOOST_TEST(!deliveries_settled(baseline, quiet, 20, 1.0, 2.5));
  // Quiet counts from the end of the submissions at the earliest.
  BOOST_TEST(!deliveries_settled(baseline, quiet, 20, 1.5, 2.0));
  // A task waiting for its retry is a delivery yet to come.
  auto waiting = quiet;
  waiting.back().retry_queue_depth = 2;
  BOOST_TEST(!deliveries_settled(baseline, waiting, 20, 1.0, 2.0));
  // Calls that keep coming (retryable ones too) are not quiet.
  std::vector<provider_sample> busy{at(1.0, 20, 18), at(2.0, 21, 18), at(3.0, 22, 18)};
  BOOST_TEST(!deliveries_settled(baseline, busy, 20, 1.0, 2.0));
}

BOOST_AUTO_TEST_CASE(one_node_sums_to_its_own_reading) {
  node_sample_sum sum(1);
  BOOST_TEST(!sum.add({std::nullopt}, 0.25)); // no answer: no sample, as before
  auto sample = sum.add({at(0, 10, 8, 2)}, 0.5);
  BOOST_REQUIRE(sample);
  BOOST_TEST(sample->at_s == 0.5);
  BOOST_TEST(sample->calls == 10.0);
  BOOST_TEST(sample->successes == 8.0);
  BOOST_TEST(sample->retry_queue_depth == 2.0);
  BOOST_TEST(!sample->counter_reset);
  BOOST_TEST(sum.add({at(0, 3, 3)}, 0.75)->counter_reset); // restarted
}

BOOST_AUTO_TEST_CASE(nodes_are_summed_and_a_silent_node_keeps_its_calls) {
  node_sample_sum sum(3);
  auto first = sum.add({at(0, 10, 10, 1), at(0, 20, 15, 2), std::nullopt}, 0.25);
  BOOST_REQUIRE(first);
  BOOST_TEST(first->calls == 30.0);
  BOOST_TEST(first->successes == 25.0);
  BOOST_TEST(first->retry_queue_depth == 3.0);

  // Node 1 killed: its calls stay counted, its retry queue is gone; node 2 comes up.
  auto second = sum.add({at(0, 14, 12, 0), std::nullopt, at(0, 5, 5, 0)}, 0.5);
  BOOST_REQUIRE(second);
  BOOST_TEST(second->calls == 39.0);
  BOOST_TEST(second->successes == 32.0);
  BOOST_TEST(second->retry_queue_depth == 0.0);
  BOOST_TEST(!second->counter_reset);
  BOOST_TEST(!sum.add({std::nullopt, std::nullopt, std::nullopt}, 0.75));

  // Node 1 back, counting from 0: the sum need not go down, the sample says it restarted.
  auto third = sum.add({at(0, 40, 40, 0), at(0, 1, 1, 0), at(0, 9, 9, 0)}, 1.0);
  BOOST_REQUIRE(third);
  BOOST_TEST(third->calls == 50.0);
  BOOST_TEST(third->counter_reset);
  auto figures = delivery_from_samples(*first, {*second, *third});
  BOOST_TEST(figures.counter_reset);
  BOOST_TEST(figures.delivered == 0.0);
  BOOST_TEST(!delivery_from_samples(*first, {*second}).counter_reset);
}

BOOST_AUTO_TEST_SUITE_END()
