// Review finding (issue 7): the store writer records every receipt that arrives together in
// ONE record_receipts call. A receipt whose id holds a NUL character (JSON "\u0000", which
// decode_receipt lets through) makes PostgreSQL refuse the whole batch ("unsupported Unicode
// escape sequence"), so every other provider's receipt committed with it is answered 503 as
// long as the bad one keeps being retried. One receipt must not fail its neighbours: an id no
// task can have is an unknown task.
#include "receipt_contract.hpp"
#include "store_backends.hpp"
#include "support/postgres.hpp"

#include <boost/test/unit_test.hpp>

namespace {

using namespace herald::test::receipt_contract;
using herald::persistence::receipt_outcome;

void a_nul_in_one_receipts_id_does_not_fail_the_batch(herald::test::store_backend& backend) {
  auto store = backend.open_store();
  auto plan = make_plan("order-nul", {"sms"});
  const auto& task = send_first(*store, plan);

  auto good = receipt(task, receipt_status::delivered);
  auto by_request = receipt(task, receipt_status::read);
  by_request.provider_request_id = task.provider_request_id + std::string(1, '\0') + "x";
  auto by_message = receipt(task, receipt_status::read);
  by_message.provider_request_id.clear();
  by_message.provider_message_id = std::string("sim-") + '\0';

  std::vector<receipt_outcome> outcomes;
  BOOST_REQUIRE_NO_THROW(outcomes = store->record_receipts({good, by_request, by_message},
                                                           no_fallbacks(), micros(t_receipt)));
  BOOST_REQUIRE_EQUAL(outcomes.size(), 3u);
  BOOST_TEST(outcomes[0].task_id == task.id);
  BOOST_TEST(outcomes[0].state == task_state::delivered);
  BOOST_TEST((outcomes[1].result == receipt_outcome::outcome::unknown_task));
  BOOST_TEST((outcomes[2].result == receipt_outcome::outcome::unknown_task));
  BOOST_TEST(task_of(*store, plan, task.id).state == task_state::delivered);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(sqlite_receipt_batch_isolation_tests, herald::test::sqlite_backend)

BOOST_AUTO_TEST_CASE(a_nul_in_one_receipts_id_does_not_fail_the_batch) {
  ::a_nul_in_one_receipts_id_does_not_fail_the_batch(*this);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(postgres_receipt_batch_isolation_tests, herald::test::postgres_backend,
                         *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

BOOST_AUTO_TEST_CASE(a_nul_in_one_receipts_id_does_not_fail_the_batch) {
  ::a_nul_in_one_receipts_id_does_not_fail_the_batch(*this);
}

BOOST_AUTO_TEST_SUITE_END()
