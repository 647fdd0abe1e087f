// domain::claim_places: the places a channel offers and the store writer takes.
#include "domain/claim_places.hpp"

#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>

using herald::domain::claim_places;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(claim_places_tests)

BOOST_AUTO_TEST_CASE(an_offer_is_taken_up_to_what_is_open_and_reports_what_was_taken) {
  claim_places places("node-a/0000000000000001", 60s);
  BOOST_TEST(places.take(5).places == 0u); // nothing offered yet
  const auto epoch = places.begin_epoch();
  BOOST_TEST(places.offer(4) == 0u);
  BOOST_TEST(places.take(3).places == 3u);
  BOOST_TEST(places.take(3).places == 1u);
  BOOST_TEST(places.take(1).places == 0u);
  BOOST_TEST(places.take(1).epoch == epoch);
  // The next offer replaces this one and tells the channel the 4 it must expect back.
  BOOST_TEST(places.offer(2) == 4u);
  BOOST_TEST(places.offer(0) == 0u); // withdrawn untouched
  BOOST_TEST(places.take(1).places == 0u);
  BOOST_TEST(places.lease_owner() == "node-a/0000000000000001");
  BOOST_TEST(places.lease().count() == 60000);
}

BOOST_AUTO_TEST_CASE(places_taken_from_many_threads_are_never_more_than_offered) {
  claim_places places("n", 1s);
  places.offer(1000);
  std::vector<std::thread> takers;
  std::vector<std::size_t> got(4, 0);
  for (std::size_t t = 0; t < got.size(); ++t)
    takers.emplace_back([&places, &got, t] {
      for (int i = 0; i < 400; ++i)
        got[t] += places.take(1).places;
    });
  for (auto& taker : takers)
    taker.join();
  std::size_t total = 0;
  for (auto g : got)
    total += g;
  BOOST_TEST(total == 1000u);
  BOOST_TEST(places.offer(0) == 1000u);
}

BOOST_AUTO_TEST_CASE(a_new_epoch_starts_closed_and_an_old_one_cannot_close_it) {
  claim_places places("n", 1s);
  const auto first = places.begin_epoch();
  places.offer(3);
  BOOST_TEST(places.take(1).places == 1u);
  const auto second = places.begin_epoch(); // a restarted channel
  BOOST_TEST(second != first);
  BOOST_TEST(places.take(1).places == 0u); // nothing open in the new epoch yet
  BOOST_TEST(places.offer(2) == 0u);       // the first epoch's take is not counted here
  places.close(first);                     // the predecessor stops late: no effect
  const auto taken = places.take(5);
  BOOST_TEST(taken.places == 2u);
  BOOST_TEST(taken.epoch == second);
  places.offer(2);
  places.close(second);
  BOOST_TEST(places.take(1).places == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
