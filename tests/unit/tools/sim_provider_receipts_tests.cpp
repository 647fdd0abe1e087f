#include "tools/sim_provider_receipts.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::tools;
using std::chrono::milliseconds;
namespace json = boost::json;

namespace {

receipt_profile profile() {
  receipt_profile p;
  p.delay = milliseconds(100);
  return p;
}

std::vector<receipt_plan> plans(const receipt_profile& p, std::size_t count,
                                std::uint64_t seed = 42, bool answer_sent = true) {
  std::mt19937_64 random(seed);
  std::vector<receipt_plan> out;
  for (std::size_t i = 0; i < count; ++i)
    out.push_back(plan_receipts(p, answer_sent, random));
  return out;
}

/// A plan as comparable text: outcome, read, then each copy.
std::string describe(const receipt_plan& plan) {
  std::string text = plan.outcome + (plan.read ? "+read" : "");
  for (const auto& copy : plan.copies)
    text += " " + copy.status + "@" + std::to_string(copy.after.count()) + "/" +
            std::string(to_string(copy.naming));
  return text;
}

std::size_t copies_of(const receipt_plan& plan, const std::string& status) {
  return static_cast<std::size_t>(
      std::count_if(plan.copies.begin(), plan.copies.end(),
                    [&](const receipt_copy& c) { return c.status == status; }));
}

} // namespace

BOOST_AUTO_TEST_SUITE(receipt_plan_tests)

BOOST_AUTO_TEST_CASE(a_faithful_provider_sends_one_delivered_receipt_after_the_delay) {
  for (const auto& plan : plans(profile(), 50)) {
    BOOST_TEST(plan.outcome == "delivered");
    BOOST_TEST(!plan.read);
    BOOST_TEST(plan.receipts == 1u);
    BOOST_TEST(plan.dropped == 0u);
    BOOST_TEST(plan.duplicated == 0u);
    BOOST_REQUIRE_EQUAL(plan.copies.size(), 1u);
    BOOST_TEST(plan.copies[0].status == "delivered");
    BOOST_TEST(plan.copies[0].after.count() == 100);
    BOOST_TEST(plan.copies[0].occurred.count() == 100);
    BOOST_TEST(plan.outcome_after.count() == 100);
  }
}

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_plans_and_another_seed_others) {
  auto p = profile();
  p.drop_rate = 0.2;
  p.duplicate_rate = 0.3;
  p.undelivered_rate = 0.1;
  p.read_rate = 0.5;
  p.reorder = milliseconds(80);
  auto first = plans(p, 200, 7);
  auto again = plans(p, 200, 7);
  auto other = plans(p, 200, 8);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    BOOST_TEST(describe(first[i]) == describe(again[i]));
    differ += describe(first[i]) != describe(other[i]);
  }
  BOOST_TEST(differ > 100u);
}

BOOST_AUTO_TEST_CASE(every_receipt_dropped_leaves_only_the_truth) {
  auto p = profile();
  p.drop_rate = 1;
  p.read_rate = 1;
  for (const auto& plan : plans(p, 20)) {
    BOOST_TEST(plan.copies.empty());
    BOOST_TEST(plan.receipts == 2u);
    BOOST_TEST(plan.dropped == 2u);
    BOOST_TEST(plan.read); // the user still read it; herald must find out by asking
  }
}

BOOST_AUTO_TEST_CASE(a_duplicated_receipt_is_sent_two_or_three_times_alike) {
  auto p = profile();
  p.duplicate_rate = 1;
  std::set<std::size_t> counts;
  for (const auto& plan : plans(p, 100)) {
    BOOST_TEST(plan.duplicated == 1u);
    counts.insert(plan.copies.size());
    for (const auto& copy : plan.copies) {
      BOOST_TEST(copy.status == "delivered");
      BOOST_TEST(copy.occurred.count() == 100); // copies of one receipt tell one moment
      BOOST_CHECK(copy.naming == plan.copies.front().naming);
    }
  }
  BOOST_CHECK(counts == (std::set<std::size_t>{2, 3}));
}

BOOST_AUTO_TEST_CASE(undelivered_messages_are_never_read) {
  auto p = profile();
  p.undelivered_rate = 1;
  p.read_rate = 1;
  for (const auto& plan : plans(p, 20)) {
    BOOST_TEST(plan.outcome == "undelivered");
    BOOST_TEST(!plan.read);
    BOOST_TEST(describe(plan).find("read@") == std::string::npos);
    BOOST_TEST(copies_of(plan, "undelivered") == 1u);
  }
}

BOOST_AUTO_TEST_CASE(a_read_follows_delivered_by_one_delay_unless_reordered) {
  auto p = profile();
  p.read_rate = 1;
  for (const auto& plan : plans(p, 20)) {
    BOOST_REQUIRE_EQUAL(plan.copies.size(), 2u);
    BOOST_TEST(plan.copies[0].status == "delivered");
    BOOST_TEST(plan.copies[1].status == "read");
    BOOST_TEST(plan.copies[1].after.count() == 200);
    BOOST_TEST(plan.read_after.count() == 200);
  }
  // With jitter larger than the gap, some reads are posted before their delivered receipt;
  // copies stay sorted by posting time and keep the moment they happened.
  p.reorder = milliseconds(500);
  p.duplicate_rate = 0.5;
  std::size_t read_first = 0;
  for (const auto& plan : plans(p, 200)) {
    BOOST_TEST(std::is_sorted(
        plan.copies.begin(), plan.copies.end(),
        [](const receipt_copy& a, const receipt_copy& b) { return a.after < b.after; }));
    for (const auto& copy : plan.copies) {
      BOOST_CHECK(copy.after >= copy.occurred);
      BOOST_CHECK(copy.after <= copy.occurred + p.reorder);
    }
    read_first += plan.copies.front().status == "read";
  }
  BOOST_TEST(read_first > 10u);
}

BOOST_AUTO_TEST_CASE(rates_hold_over_many_plans) {
  auto p = profile();
  p.drop_rate = 0.1;
  p.duplicate_rate = 0.1;
  p.undelivered_rate = 0.2;
  std::size_t dropped = 0, duplicated = 0, undelivered = 0;
  const std::size_t n = 20000;
  for (const auto& plan : plans(p, n)) {
    dropped += plan.dropped;
    duplicated += plan.duplicated;
    undelivered += plan.outcome == "undelivered";
  }
  BOOST_TEST(dropped > n * 0.09);
  BOOST_TEST(dropped < n * 0.11);
  // Duplication is drawn for receipts that are not dropped.
  BOOST_TEST(duplicated > n * 0.9 * 0.09);
  BOOST_TEST(duplicated < n * 0.9 * 0.11);
  BOOST_TEST(undelivered > n * 0.19);
  BOOST_TEST(undelivered < n * 0.21);
}

BOOST_AUTO_TEST_CASE(receipts_name_either_id_but_only_known_ones) {
  std::map<receipt_naming, std::size_t> namings;
  for (const auto& plan : plans(profile(), 400))
    ++namings[plan.copies.at(0).naming];
  BOOST_TEST(namings[receipt_naming::both] > 150u);
  BOOST_TEST(namings[receipt_naming::request_id] > 60u);
  BOOST_TEST(namings[receipt_naming::message_id] > 60u);
  // After a timed-out answer herald never learnt the message id.
  for (const auto& plan : plans(profile(), 400, 42, false))
    BOOST_CHECK(plan.copies.at(0).naming == receipt_naming::request_id);
}

BOOST_AUTO_TEST_CASE(the_body_follows_the_callback_contract) {
  auto at = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  auto both = json::parse(receipt_body("hrq_1", "sim-1", receipt_naming::both, "read", at));
  BOOST_TEST(both.at("type").as_string() == "herald.receipt");
  const auto& data = both.at("data").as_object();
  BOOST_TEST(data.at("provider_request_id").as_string() == "hrq_1");
  BOOST_TEST(data.at("provider_message_id").as_string() == "sim-1");
  BOOST_TEST(data.at("status").as_string() == "read");
  BOOST_TEST(data.at("occurred_at").as_string() == "2027-01-15T08:00:00.000000Z");
  BOOST_TEST(data.contains("detail"));

  auto request_only =
      json::parse(receipt_body("hrq_1", "sim-1", receipt_naming::request_id, "delivered", at));
  BOOST_TEST(!request_only.at("data").as_object().contains("provider_message_id"));
  auto message_only =
      json::parse(receipt_body("hrq_1", "sim-1", receipt_naming::message_id, "delivered", at));
  BOOST_TEST(!message_only.at("data").as_object().contains("provider_request_id"));
  BOOST_TEST(message_only.at("data").at("provider_message_id").as_string() == "sim-1");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(delivery_book_tests)

BOOST_AUTO_TEST_CASE(status_moves_from_accepted_to_the_outcome_then_read) {
  using sys = std::chrono::system_clock;
  auto t0 = sys::time_point(std::chrono::seconds(1000));
  delivery_book book;
  delivery_truth truth;
  truth.accepted_at = t0;
  truth.outcome_at = t0 + milliseconds(100);
  truth.read_at = t0 + milliseconds(200);
  BOOST_TEST(book.add("a", truth));
  truth.read_at.reset();
  truth.outcome = "undelivered";
  BOOST_TEST(book.add("b", truth));
  BOOST_TEST(!book.add("a", truth)); // the first decision stands

  BOOST_TEST(!book.status_of("nobody", t0).has_value());
  BOOST_TEST(*book.status_of("a", t0) == "accepted");
  BOOST_TEST(*book.status_of("a", t0 + milliseconds(100)) == "delivered");
  BOOST_TEST(*book.status_of("a", t0 + milliseconds(250)) == "read");
  BOOST_TEST(*book.status_of("b", t0 + milliseconds(50)) == "accepted");
  BOOST_TEST(*book.status_of("b", t0 + milliseconds(5000)) == "undelivered");

  auto tally = book.tally(t0 + milliseconds(150));
  BOOST_TEST(tally.requests == 2u);
  BOOST_TEST(tally.statuses.at("delivered") == 1u);
  BOOST_TEST(tally.statuses.at("undelivered") == 1u);
  BOOST_TEST(tally.statuses.at("read") == 0u);
}

BOOST_AUTO_TEST_CASE(without_receipt_counts_requests_nothing_reached) {
  delivery_book book;
  delivery_truth truth;
  truth.receipts_outstanding = 2;
  book.add("two-copies", truth);
  book.add("one-copy", delivery_truth{truth.accepted_at, "", "delivered", {}, {}, 1, 0});
  truth.receipts_outstanding = 0;
  book.add("dropped", truth);
  auto now = std::chrono::system_clock::now();
  BOOST_TEST(book.tally(now).without_receipt == 1u);
  BOOST_TEST(book.tally(now).receipts_pending == 2u);

  book.receipt_finished("two-copies", false); // one copy given up, the other still pending
  book.receipt_finished("one-copy", false);
  BOOST_TEST(book.tally(now).without_receipt == 2u);
  book.receipt_finished("two-copies", true);
  book.receipt_finished("unknown", true); // forgotten by a reset: ignored
  auto tally = book.tally(now);
  BOOST_TEST(tally.without_receipt == 2u);
  BOOST_TEST(tally.receipts_pending == 0u);
  book.reset();
  BOOST_TEST(book.tally(now).requests == 0u);
  BOOST_TEST(!book.contains("dropped"));
}

BOOST_AUTO_TEST_SUITE_END()
