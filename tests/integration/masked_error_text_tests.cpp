// Provider error text is masked where the store binds it (apply() and fail_over()), so no
// writer can store a recipient's phone number, e-mail address or a credential in clear; on
// SQLite and PostgreSQL alike.
#include "store_backends.hpp"
#include "support/postgres.hpp"
#include "task_store_contract.hpp"

#include <boost/test/unit_test.hpp>

namespace {

using namespace herald;
using namespace herald::test::task_store_contract;

const std::string provider_text = "recipient +8613812345678 (alice@example.com) unknown; "
                                  "Authorization: Bearer abc.def-123";

void expect_masked(const std::string& stored) {
  BOOST_TEST(stored.find("13812345678") == std::string::npos, stored);
  BOOST_TEST(stored.find("alice@") == std::string::npos, stored);
  BOOST_TEST(stored.find("abc.def-123") == std::string::npos, stored);
  BOOST_TEST(stored == "recipient ***5678 (a***@example.com) unknown; "
                       "Authorization: Bearer ***");
}

persistence::attempt_record attempt_of(const domain::task_record& task, std::string outcome,
                                       std::string detail) {
  persistence::attempt_record attempt;
  attempt.task_id = task.id;
  attempt.attempt_no = 1;
  attempt.provider_request_id = task.provider_request_id;
  attempt.outcome = std::move(outcome);
  attempt.detail = std::move(detail);
  attempt.started_at = micros(1'790'000'020'000'000);
  attempt.finished_at = micros(1'790'000'020'100'000);
  return attempt;
}

void apply_stores_error_text_masked(test::store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-m1", {"sms", "app"});
  store->claim({plan});
  const auto& sms = plan.tasks[0];
  const auto& app = plan.tasks[1];
  store->apply({take_lease(sms.id, domain::task_state::pending),
                take_lease(app.id, domain::task_state::pending)},
               {});
  store->apply({change(sms.id, domain::task_state::sending, domain::task_state::failed, 1,
                       1'790'000'021'000'000, provider_text),
                change(app.id, domain::task_state::sending, domain::task_state::sent, 1)},
               {attempt_of(sms, "permanent", provider_text),
                // A success's detail is the provider's message id: stored as it is.
                attempt_of(app, "success", "hrq_0123456789abcdef0123456789abcdef")});

  const auto view = store->find_message("default", plan.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  for (const auto& task : view->tasks) {
    BOOST_TEST_REQUIRE(task.attempt_log.size() == 1u);
    if (task.task_id == sms.id) {
      expect_masked(task.last_error);
      expect_masked(task.attempt_log[0].detail);
    } else {
      BOOST_TEST(task.attempt_log[0].detail == "hrq_0123456789abcdef0123456789abcdef");
    }
  }
}

void fail_over_stores_error_text_masked_and_bounded(test::store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-m2", {"sms"});
  store->claim({plan});
  const auto& sms = plan.tasks[0];
  store->apply({take_lease(sms.id, domain::task_state::pending)}, {});
  auto page = store->load_unfinished("", 10, micros(1'890'000'000'000'000));
  BOOST_TEST_REQUIRE(page.size() == 1u);
  // Long, with a NUL and a broken UTF-8 sequence: PostgreSQL refuses both in text columns.
  const std::string hostile = provider_text + std::string(1, '\0') + "\xC3" + std::string(900, 'y');
  const auto failed = change(sms.id, domain::task_state::sending, domain::task_state::failed, 1,
                             1'790'000'021'000'000, hostile);
  BOOST_TEST_REQUIRE(
      (store
           ->fail_over(failed, {attempt_of(sms, "permanent", hostile)}, page[0],
                       {{{"sms", "email"}}, test::task_store_contract::test_id_secret})
           .result == persistence::failover_result::outcome::failed_over));

  const auto view = store->find_message("default", plan.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  const auto original =
      std::find_if(view->tasks.begin(), view->tasks.end(),
                   [&](const persistence::task_view& t) { return t.task_id == sms.id; });
  BOOST_TEST_REQUIRE((original != view->tasks.end()));
  BOOST_TEST_REQUIRE(original->attempt_log.size() == 1u);
  for (const auto& stored : {original->last_error, original->attempt_log[0].detail}) {
    BOOST_TEST(stored.size() <= 512u); // domain::max_free_text_bytes
    BOOST_TEST(stored.rfind("recipient ***5678 (a***@example.com) unknown; ", 0) == 0u, stored);
    BOOST_TEST(stored.find('\0') == std::string::npos);
  }
}

} // namespace

#define HERALD_MASKED_ERROR_TEXT_TESTS()                                                           \
  BOOST_AUTO_TEST_CASE(apply_stores_error_text_masked) {                                           \
    ::apply_stores_error_text_masked(*this);                                                       \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(fail_over_stores_error_text_masked_and_bounded) {                           \
    ::fail_over_stores_error_text_masked_and_bounded(*this);                                       \
  }

BOOST_FIXTURE_TEST_SUITE(sqlite_masked_error_text_tests, herald::test::sqlite_backend)
HERALD_MASKED_ERROR_TEXT_TESTS()
BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(postgres_masked_error_text_tests, herald::test::postgres_backend,
                         *boost::unit_test::precondition(herald::test::postgres_tests_enabled))
HERALD_MASKED_ERROR_TEXT_TESTS()
BOOST_AUTO_TEST_SUITE_END()
