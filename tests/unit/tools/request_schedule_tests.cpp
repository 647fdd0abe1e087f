#include "tools/request_schedule.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::tools;
using std::chrono::nanoseconds;

BOOST_AUTO_TEST_SUITE(request_schedule_tests)

BOOST_AUTO_TEST_CASE(request_i_is_due_i_over_rate_after_the_start) {
  open_loop_schedule schedule(500);
  BOOST_TEST(schedule.due(0).count() == 0);
  BOOST_TEST(schedule.due(1).count() == 2'000'000);
  BOOST_TEST(schedule.due(499).count() == 998'000'000);
  BOOST_TEST(schedule.due(500).count() == 1'000'000'000);

  // A rate that does not divide a second: each time rounds on its own, so nothing accumulates.
  open_loop_schedule thirds(3);
  BOOST_TEST(thirds.due(1).count() == 333'333'333);
  BOOST_TEST(thirds.due(2).count() == 666'666'667);
  BOOST_TEST(thirds.due(3).count() == 1'000'000'000);
  BOOST_TEST(thirds.due(30'000'000).count() == 10'000'000'000'000'000LL);
  BOOST_TEST(thirds.due(30'000'001).count() == 10'000'000'333'333'333LL);
}

BOOST_AUTO_TEST_CASE(a_request_taken_after_its_time_starts_late) {
  open_loop_schedule schedule(1000);                     // 1 ms apart
  BOOST_TEST(!schedule.late(5, nanoseconds(0)));         // taken early: waits for its time
  BOOST_TEST(!schedule.late(5, nanoseconds(5'000'000))); // taken on time
  BOOST_TEST(schedule.late(5, nanoseconds(5'000'001)));  // no connection was free at 5 ms
  BOOST_TEST(!schedule.late(6, nanoseconds(5'000'001)));
}

BOOST_AUTO_TEST_CASE(requests_group_events_in_order) {
  auto batches = request_groups(2503, 1000);
  BOOST_REQUIRE(batches.size() == 3u);
  BOOST_TEST(batches[0].first == 0u);
  BOOST_TEST(batches[0].second == 1000u);
  BOOST_TEST(batches[1].first == 1000u);
  BOOST_TEST(batches[2].first == 2000u);
  BOOST_TEST(batches[2].second == 2503u);

  auto singles = request_groups(4, 1);
  BOOST_REQUIRE(singles.size() == 4u);
  BOOST_TEST(singles[3].first == 3u);
  BOOST_TEST(singles[3].second == 4u);

  BOOST_TEST(request_groups(0, 10).empty());
  auto exact = request_groups(20, 10);
  BOOST_REQUIRE(exact.size() == 2u);
  BOOST_TEST(exact[1].second == 20u);
}

BOOST_AUTO_TEST_SUITE_END()
