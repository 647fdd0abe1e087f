#include "domain/deadline_queue.hpp"

#include <set>
#include <vector>

#include <boost/test/unit_test.hpp>

using herald::domain::deadline_queue;

namespace {

// A manual clock: time points are plain numbers of milliseconds.
using requests = deadline_queue<int, int>;

std::vector<int> expire_at(requests& queue, int now) {
  std::vector<int> expired;
  queue.expire(now, [&](int request) { expired.push_back(request); });
  return expired;
}

} // namespace

BOOST_AUTO_TEST_SUITE(deadline_queue_tests)

BOOST_AUTO_TEST_CASE(an_empty_queue_needs_no_timer) {
  requests queue;
  BOOST_TEST(!queue.next().has_value());
  BOOST_TEST(expire_at(queue, 1'000).empty());
}

BOOST_AUTO_TEST_CASE(requests_expire_in_order_each_at_its_own_deadline) {
  requests queue;
  queue.push(100, 1);
  queue.push(150, 2);
  queue.push(150, 3);
  BOOST_TEST(queue.next().value() == 100);
  BOOST_TEST(expire_at(queue, 99).empty());
  BOOST_TEST(expire_at(queue, 100) == std::vector<int>{1});
  BOOST_TEST(queue.next().value() == 150);
  BOOST_TEST(expire_at(queue, 200) == (std::vector<int>{2, 3}));
  BOOST_TEST(queue.empty());
}

BOOST_AUTO_TEST_CASE(answered_requests_at_the_front_are_forgotten_not_expired) {
  requests queue;
  for (int request = 1; request <= 4; ++request)
    queue.push(request * 10, request);
  const std::set<int> answered{1, 2, 4};
  const auto is_answered = [&](int request) { return answered.count(request) > 0; };
  queue.forget_front(is_answered);
  // 3 is still open, so the timer is armed for it; 4 waits behind it although answered.
  BOOST_TEST(queue.next().value() == 30);
  BOOST_TEST(expire_at(queue, 30) == std::vector<int>{3});
  queue.forget_front(is_answered);
  BOOST_TEST(queue.empty());
}

BOOST_AUTO_TEST_CASE(an_expiry_may_answer_and_push_other_requests) {
  requests queue;
  queue.push(10, 1);
  queue.push(10, 2);
  queue.push(20, 3);
  std::set<int> answered;
  std::vector<int> expired;
  // Expiring 1 answers 2 (the same key's waiters fail together) and makes request 4.
  queue.expire(15, [&](int request) {
    expired.push_back(request);
    if (request == 1) {
      answered.insert(2);
      queue.forget_front([&](int r) { return answered.count(r) > 0; });
      queue.push(40, 4);
    }
  });
  BOOST_TEST(expired == std::vector<int>{1});
  BOOST_TEST(queue.next().value() == 20);
  BOOST_TEST(expire_at(queue, 40) == (std::vector<int>{3, 4}));
}

BOOST_AUTO_TEST_SUITE_END()
