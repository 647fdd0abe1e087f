#pragma once

// What every task_store backend must do with the seals of signed pushes (migration 0011),
// written once and expanded by HERALD_PUSH_SEAL_CONTRACT() into a SQLite and a PostgreSQL suite.
// A second connection to the same database stands for a restarted process or another node.

#include "domain/push_seal.hpp"
#include "persistence/task_store.hpp"
#include "store_backends.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>

namespace herald::test::push_seal_contract {

constexpr std::int64_t signed_at = 1'790'000'000; // unix seconds
constexpr std::chrono::seconds window{300};

inline domain::timestamp at_second(std::int64_t seconds) {
  return domain::from_unix_micros(seconds * 1'000'000);
}

inline domain::push_seal seal(std::string_view method, std::string_view body,
                              const std::string& nonce = "nonce-1",
                              std::int64_t timestamp = signed_at) {
  return domain::seal_push("wechat", timestamp, nonce, method, body, window);
}

const std::string delivered = "<xml><Status><![CDATA[success]]></Status></xml>";
const std::string forged = "<xml><Status><![CDATA[failed:user block]]></Status></xml>";

/// The store's verdicts on `seals` as of `now`, one word each: "admitted" or "refused".
inline std::string verdicts(persistence::task_store& store,
                            const std::vector<domain::push_seal>& seals,
                            domain::timestamp now = at_second(signed_at)) {
  std::string words;
  for (const bool admitted : store.admit_pushes(seals, now)) {
    if (!words.empty())
      words += ' ';
    words += admitted ? "admitted" : "refused";
  }
  return words;
}

// The first request under a signature is admitted, and again (WeChat repeats a push it got no
// answer to); another request under it is not, the handshake's query on a POST included.
inline void a_signature_carries_only_the_request_it_came_with(store_backend& backend) {
  auto store = backend.open_store();
  BOOST_TEST(verdicts(*store, {seal("POST", delivered)}) == "admitted");
  BOOST_TEST(verdicts(*store, {seal("POST", delivered)}) == "admitted");
  BOOST_TEST(verdicts(*store, {seal("POST", forged)}) == "refused");

  BOOST_TEST(verdicts(*store, {seal("GET", "", "nonce-2")}) == "admitted");
  BOOST_TEST(verdicts(*store, {seal("POST", forged, "nonce-2")}) == "refused");
  // Another nonce, another timestamp or another channel is another signature.
  BOOST_TEST(verdicts(*store, {seal("POST", forged, "nonce-3"),
                               seal("POST", forged, "nonce-1", signed_at + 1),
                               domain::seal_push("sms", signed_at, "nonce-1", "POST", forged,
                                                 window)}) == "admitted admitted admitted");
  BOOST_TEST(verdicts(*store, {}) == "");
}

// A restarted process, or another node on the same database, knows the seals: a captured
// handshake query carries no forged body there either.
inline void seals_hold_across_connections(store_backend& backend) {
  {
    auto first = backend.open_store();
    BOOST_TEST_REQUIRE(verdicts(*first, {seal("GET", "")}) == "admitted");
  }
  auto restarted = backend.open_store();
  auto other_node = backend.open_store();
  const auto now = at_second(signed_at + 10);
  BOOST_TEST(verdicts(*restarted, {seal("POST", forged)}, now) == "refused");
  BOOST_TEST(verdicts(*other_node, {seal("POST", forged)}, now) == "refused");
  BOOST_TEST(verdicts(*other_node, {seal("GET", "")}, now) == "admitted");
}

// Two requests under one signature in one batch: exactly one is admitted.
inline void one_batch_admits_one_request_per_signature(store_backend& backend) {
  auto store = backend.open_store();
  const auto words =
      verdicts(*store, {seal("POST", delivered), seal("POST", forged), seal("POST", delivered)});
  // Whichever row the insert took first, the same request gets the same verdict.
  BOOST_TEST((words == "admitted refused admitted" || words == "refused admitted refused"), words);
}

// Connections racing with different requests under one signature: exactly one wins, whichever
// commits first.
inline void racing_connections_admit_one_request_per_signature(store_backend& backend) {
  constexpr int racers = 6;
  std::vector<std::unique_ptr<persistence::task_store>> stores;
  for (int i = 0; i < racers; ++i)
    stores.push_back(backend.open_store());
  for (int round = 0; round < 5; ++round) {
    const auto nonce = "race-" + std::to_string(round);
    std::atomic<int> admitted{0};
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < racers; ++i)
      threads.emplace_back([&, i] {
        try {
          const auto body = forged + std::to_string(i);
          if (verdicts(*stores[i], {seal("POST", body, nonce)}) == "admitted")
            ++admitted;
        } catch (const std::exception&) {
          ++failed;
        }
      });
    for (auto& thread : threads)
      thread.join();
    BOOST_TEST(failed.load() == 0);
    BOOST_TEST(admitted.load() == 1, "round " << round);
  }
}

// A seal is dropped once its timestamp is stale on every node: then it is no longer found (a
// push that old is refused by its timestamp before its seal is looked at).
inline void expired_seals_are_dropped(store_backend& backend) {
  auto store = backend.open_store();
  const auto old = seal("POST", delivered, "old");
  const auto young = seal("POST", delivered, "young", signed_at + 200);
  BOOST_TEST_REQUIRE(verdicts(*store, {old, young}) == "admitted admitted");
  BOOST_TEST_REQUIRE(young.kept_until > old.kept_until + 1);
  auto later = backend.open_store(); // a connection that has not pruned yet
  // The old seal is gone, so another request under it is new; the young one is kept.
  BOOST_TEST(verdicts(*later,
                      {seal("POST", forged, "old"), seal("POST", forged, "young", signed_at + 200)},
                      at_second(old.kept_until + 1)) == "admitted refused");
}

} // namespace herald::test::push_seal_contract

#define HERALD_PUSH_SEAL_CONTRACT_TEST(name)                                                       \
  BOOST_AUTO_TEST_CASE(name) {                                                                     \
    ::herald::test::push_seal_contract::name(*this);                                               \
  }

/// Expands every push seal contract test into the enclosing fixture suite (a store_backend).
#define HERALD_PUSH_SEAL_CONTRACT()                                                                \
  HERALD_PUSH_SEAL_CONTRACT_TEST(a_signature_carries_only_the_request_it_came_with)                \
  HERALD_PUSH_SEAL_CONTRACT_TEST(seals_hold_across_connections)                                    \
  HERALD_PUSH_SEAL_CONTRACT_TEST(one_batch_admits_one_request_per_signature)                       \
  HERALD_PUSH_SEAL_CONTRACT_TEST(racing_connections_admit_one_request_per_signature)               \
  HERALD_PUSH_SEAL_CONTRACT_TEST(expired_seals_are_dropped)
