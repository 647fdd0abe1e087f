#include "providers/inapp_provider.hpp"
#include "support/adapter_calls.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace herald::providers;
using namespace std::chrono_literals;

namespace {

/// A stand-in for the database: records each transaction's ids, can be held (a slow commit)
/// and made to fail; knows every task but "tsk_unknown".
struct fake_inbox {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::vector<std::string>> transactions;
  std::set<std::string> items;
  bool holding = false;
  bool failing = false;

  inbox_write writer() {
    return [this](const std::vector<std::string>& ids) {
      std::unique_lock<std::mutex> lock{mutex};
      transactions.push_back(ids);
      changed.notify_all();
      changed.wait(lock, [this] { return !holding; });
      if (failing)
        throw std::runtime_error("database is locked");
      std::vector<std::string> present;
      for (const auto& id : ids)
        if (id != "tsk_unknown") {
          items.insert(id);
          present.push_back(id);
        }
      return present;
    };
  }

  void hold(bool on) {
    std::lock_guard<std::mutex> guard{mutex};
    holding = on;
    changed.notify_all();
  }

  bool wait_transactions(std::size_t count) {
    std::unique_lock<std::mutex> lock{mutex};
    return changed.wait_for(lock, 10s, [&] { return transactions.size() >= count; });
  }
};

using answers = herald::test::provider_answers;

provider_request request(const std::string& task_id) {
  provider_request r;
  r.task_id = task_id;
  r.channel = "inapp";
  r.recipient = "u-123";
  r.provider_request_id = "hrq_" + task_id;
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(inapp_provider_tests)

BOOST_AUTO_TEST_CASE(sends_that_wait_for_a_commit_share_the_next_transaction) {
  fake_inbox inbox;
  inapp_provider adapter{{}, inbox.writer()};
  answers got;
  inbox.hold(true);
  adapter.send(request("tsk_first"), got.collect());
  BOOST_REQUIRE(inbox.wait_transactions(1));
  for (int i = 0; i < 100; ++i)
    adapter.send(request("tsk_" + std::to_string(i)), got.collect());
  BOOST_TEST(got.size() == 0u); // nothing is answered before its commit
  inbox.hold(false);
  BOOST_REQUIRE(got.wait_for(101));
  BOOST_REQUIRE_EQUAL(inbox.transactions.size(), 2u);
  BOOST_TEST(inbox.transactions[1].size() == 100u);
  for (const auto& result : got.results) {
    BOOST_TEST((result.outcome == call_outcome::success));
    BOOST_TEST(result.detail.rfind("tsk_", 0) == 0u); // the task id is the message id
  }
}

BOOST_AUTO_TEST_CASE(a_batch_is_bounded_by_batch_max) {
  fake_inbox inbox;
  inapp_config config;
  config.batch_max = 10;
  inapp_provider adapter{config, inbox.writer()};
  answers got;
  inbox.hold(true);
  adapter.send(request("tsk_first"), got.collect());
  BOOST_REQUIRE(inbox.wait_transactions(1));
  for (int i = 0; i < 25; ++i)
    adapter.send(request("tsk_" + std::to_string(i)), got.collect());
  inbox.hold(false);
  BOOST_REQUIRE(got.wait_for(26));
  BOOST_REQUIRE_EQUAL(inbox.transactions.size(), 4u);
  BOOST_TEST(inbox.transactions[1].size() == 10u);
  BOOST_TEST(inbox.transactions[3].size() == 5u);
}

BOOST_AUTO_TEST_CASE(a_failed_write_is_retryable_and_an_unknown_task_permanent) {
  fake_inbox inbox;
  inapp_provider adapter{{}, inbox.writer()};
  inbox.failing = true;
  answers failed;
  adapter.send(request("tsk_1"), failed.collect());
  BOOST_REQUIRE(failed.wait_for(1));
  BOOST_TEST((failed.results[0].outcome == call_outcome::retryable));
  BOOST_TEST(failed.results[0].detail == "inbox write failed: database is locked");
  inbox.failing = false;
  answers got;
  adapter.send(request("tsk_1"), got.collect());
  adapter.send(request("tsk_unknown"), got.collect());
  BOOST_REQUIRE(got.wait_for(2));
  for (const auto& result : got.results)
    BOOST_TEST((result.outcome ==
                (result.detail == "tsk_1" ? call_outcome::success : call_outcome::permanent)));
}

BOOST_AUTO_TEST_CASE(sends_queued_when_the_adapter_goes_are_answered_unwritten) {
  fake_inbox inbox;
  answers got;
  std::thread release;
  {
    inapp_provider adapter{{}, inbox.writer()};
    inbox.hold(true);
    adapter.send(request("tsk_first"), got.collect());
    BOOST_REQUIRE(inbox.wait_transactions(1));
    adapter.send(request("tsk_queued"), got.collect());
    release = std::thread([&] {
      std::this_thread::sleep_for(300ms); // lets the destructor start waiting for the writer
      inbox.hold(false);
    });
  } // the destructor stops the writer while it still writes the first transaction
  release.join();
  BOOST_REQUIRE(got.wait_for(2));
  BOOST_TEST((got.results[0].outcome == call_outcome::success));
  BOOST_TEST((got.results[1].outcome == call_outcome::timeout));
  BOOST_TEST(inbox.transactions.size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
