// The task_store contract against PostgreSQL: a fresh database per test on the server named by
// HERALD_TEST_POSTGRES_URL (scripts/with-postgres.sh provides one). Without it the suite is
// disabled, unless CI is set: then every test fails.
#include "store_backends.hpp"
#include "support/postgres.hpp"
#include "task_store_contract.hpp"

#include <chrono>
#include <future>
#include <thread>

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
  // What was committed when it read: the uncommitted change is not seen.
  BOOST_TEST((results.at(0).tasks.at(0).state == herald::domain::task_state::pending));
}

namespace {

/// Claims `order-race` again with a new channel (app) while another node's transaction holds
/// an uncommitted insert of that very task, then ends that transaction (`commit` or not) once
/// the claim waits for it. Returns whether the claim says it created the app task.
bool claim_racing_an_uncommitted_insert(herald::test::postgres_backend& backend, bool commit) {
  using herald::test::task_store_contract::make_plan;
  auto store = backend.open_store();
  BOOST_TEST_REQUIRE(store->claim({make_plan("order-race", {"sms"})}).at(0).tasks.at(0).created);
  const auto plan = make_plan("order-race", {"sms", "app"});
  const auto& app = plan.tasks.at(1);
  const auto& m = plan.message;

  auto other_node = herald::persistence::connect(backend.url());
  soci::transaction inserting(*other_node);
  *other_node << "INSERT INTO tasks (id, message_id, tenant, biz_type, biz_id, user_id, channel, "
                 "recipient, provider_request_id, status, priority, attempts, created_at, "
                 "updated_at) VALUES (:id, :m, :tenant, :biz_type, :biz_id, :user_id, 'app', "
                 "'to-app', :request, 'PENDING', 'high', 0, 1, 1)",
      soci::use(app.id), soci::use(m.id), soci::use(m.key.tenant), soci::use(m.key.biz_type),
      soci::use(m.key.biz_id), soci::use(m.key.user_id), soci::use(app.provider_request_id);

  auto claimed = std::async(std::launch::async, [&] { return store->claim({plan}); });
  // The claim's INSERT reaches the other node's row and waits for its transaction.
  auto watcher = herald::persistence::connect(backend.url());
  int waiting = 0;
  for (int polls = 0; waiting == 0 && polls < 3000; ++polls) {
    *watcher << "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'",
        soci::into(waiting);
    if (waiting == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds{10}); // polls a condition, bounded
  }
  if (commit)
    inserting.commit();
  else
    inserting.rollback();
  BOOST_TEST_REQUIRE(waiting == 1);
  BOOST_TEST_REQUIRE((claimed.wait_for(std::chrono::seconds{30}) == std::future_status::ready));
  const auto results = claimed.get();
  BOOST_TEST(results.at(0).tasks.at(1).task_id == app.id);
  return results.at(0).tasks.at(1).created;
}

} // namespace

// The INSERT found the task taken by a transaction that committed meanwhile: the claim reads it
// and answers it as existing, not created (the other node created it).
BOOST_AUTO_TEST_CASE(a_task_another_node_inserts_meanwhile_is_answered_as_existing) {
  BOOST_TEST(!claim_racing_an_uncommitted_insert(*this, true));
}

// The other node's transaction rolled back: the claim's own INSERT creates the task.
BOOST_AUTO_TEST_CASE(a_task_whose_racing_insert_rolled_back_is_created) {
  BOOST_TEST(claim_racing_an_uncommitted_insert(*this, false));
}

BOOST_AUTO_TEST_SUITE_END()

// The same contract on a connection the way the store writers open it: every statement
// prepared once and kept with one generic plan (store_options::plans_once), so a statement run
// again with other batches must answer for those batches, from an empty table on.
BOOST_FIXTURE_TEST_SUITE(postgres_plans_once_store_tests, herald::test::postgres_plans_once_backend,
                         *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

HERALD_TASK_STORE_CONTRACT()

BOOST_AUTO_TEST_SUITE_END()
