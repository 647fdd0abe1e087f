// The task_store contract against PostgreSQL: a fresh database per test on the server named by
// HERALD_TEST_POSTGRES_URL (scripts/with-postgres.sh provides one). Without it the suite is
// disabled, unless CI is set: then every test fails.
#include "store_backends.hpp"
#include "support/postgres.hpp"
#include "task_store_contract.hpp"

#include <chrono>
#include <future>

#include <boost/test/unit_test.hpp>
#include <soci/soci.h>

BOOST_FIXTURE_TEST_SUITE(postgres_store_tests, herald::test::postgres_backend,
                         *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

HERALD_TASK_STORE_CONTRACT()

// A resubmission's claim finds its tasks by reading, so a change of one of them that another
// transaction has not committed yet (the state writer marking it SENDING or SENT) does not hold
// the claim up: an INSERT's conflict check on that row would wait for its COMMIT.
BOOST_AUTO_TEST_CASE(a_resubmission_does_not_wait_for_an_uncommitted_change_of_its_task) {
  using herald::test::task_store_contract::make_plan;
  auto store = open_store();
  const auto plan = make_plan("order-busy", {"sms"});
  BOOST_TEST_REQUIRE(store->claim({plan}).at(0).tasks.at(0).created);

  auto state_writer = herald::persistence::connect(url());
  soci::transaction busy(*state_writer);
  *state_writer << "UPDATE tasks SET status = 'SENDING' WHERE id = :id",
      soci::use(plan.tasks.at(0).id);

  auto resubmitted = std::async(std::launch::async, [&] { return store->claim({plan}); });
  const bool answered = resubmitted.wait_for(std::chrono::seconds{30}) == std::future_status::ready;
  busy.rollback(); // lets a waiting claim finish either way
  BOOST_TEST_REQUIRE(answered);
  const auto results = resubmitted.get();
  BOOST_TEST(!results.at(0).tasks.at(0).created);
  BOOST_TEST(results.at(0).tasks.at(0).task_id == plan.tasks.at(0).id);
}

BOOST_AUTO_TEST_SUITE_END()
