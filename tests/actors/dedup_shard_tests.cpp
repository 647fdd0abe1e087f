#include "actor_fixture.hpp"
#include "actors/dedup_shard.hpp"
#include "actors/dispatcher.hpp"
#include "recording_provider.hpp"

#include <memory>

#include <boost/test/unit_test.hpp>

using namespace herald;
using domain::task_state;
using test::recording_provider;

namespace {

/// A shard in front of the real writer and the real dispatcher, whose sms and email channels
/// call one recording provider.
struct shard_fixture : test::actor_fixture {
  std::shared_ptr<recording_provider> provider = std::make_shared<recording_provider>();
  actors::store_writer_actor writer = spawn_writer();
  actors::store_reader_actor reader = spawn_reader();
  actors::dispatcher_actor dispatcher = spawn_dispatcher();
  actors::dedup_shard_actor shard =
      spawn(actors::dedup_shard, writer, metrics, actors::dedup_shard_config{});

  actors::dispatcher_actor spawn_dispatcher() {
    std::vector<actors::channel_spec> specs;
    for (const char* name : {"sms", "email"}) {
      actors::channel_spec spec;
      spec.settings.name = name;
      spec.provider = provider;
      specs.push_back(spec);
    }
    return spawn_dispatch_node(specs, writer, reader).dispatcher;
  }

  bool metric_has(const std::string& line) {
    return metrics->render().find(line) != std::string::npos;
  }
};

using claim_handle = decltype(std::declval<caf::scoped_actor&>()->request(
    std::declval<actors::dedup_shard_actor&>(), caf::infinite, actors::claim_atom_v,
    std::declval<domain::message_plan&>()));

/// Takes the answer of one pending claim; fails the test on an error or a missing answer.
persistence::claim_result take(caf::scoped_actor& asker, claim_handle& pending) {
  persistence::claim_result answer;
  BOOST_REQUIRE(asker->has_next_message());
  pending.receive([&](persistence::claim_result& result) { answer = std::move(result); },
                  [&](caf::error& err) { BOOST_ERROR(actors::describe(err)); });
  return answer;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(dedup_shard_tests, shard_fixture)

BOOST_AUTO_TEST_CASE(concurrent_claims_of_one_message_share_one_store_claim) {
  constexpr std::size_t n = 50;
  auto message = plan("order-1", {"sms", "email"});
  std::vector<std::unique_ptr<caf::scoped_actor>> askers;
  std::vector<claim_handle> pending;
  for (std::size_t i = 0; i < n; ++i) {
    askers.push_back(std::make_unique<caf::scoped_actor>(sys, true));
    pending.push_back(
        (*askers.back())->request(shard, caf::infinite, actors::claim_atom_v, message));
  }
  run();
  BOOST_TEST(writer_store->claim_batches == 1u);
  BOOST_TEST(writer_store->claimed_plans == 1u);
  for (std::size_t i = 0; i < n; ++i) {
    auto result = take(*askers[i], pending[i]);
    BOOST_TEST(result.message_id == message.message.id);
    BOOST_REQUIRE_EQUAL(result.tasks.size(), 2u);
    for (std::size_t t = 0; t < 2; ++t) {
      BOOST_TEST(result.tasks[t].task_id == message.tasks[t].id);
      BOOST_TEST(result.tasks[t].created == (i == 0), "claim " << i << " task " << t);
    }
  }
  // Created once, dispatched once: one provider call per task.
  BOOST_TEST(provider->calls.size() == 2u);
  BOOST_TEST(provider->calls_for(message.tasks[0].id) == 1u);
  BOOST_TEST(provider->calls_for(message.tasks[1].id) == 1u);
  BOOST_TEST(tasks_in(task_state::sent) == 2u);
  BOOST_TEST(metric_has("herald_tasks_created_total{channel=\"sms\"} 1"));
  BOOST_TEST(metric_has("herald_tasks_duplicate_total{channel=\"sms\"} 49"));
}

BOOST_AUTO_TEST_CASE(a_later_resubmission_naming_an_extra_channel_creates_only_that_task) {
  auto first = plan("order-2", {"sms"});
  auto claimed = ask<persistence::claim_result>(shard, actors::claim_atom_v, first);
  BOOST_REQUIRE(claimed);
  BOOST_TEST(provider->calls.size() == 1u);

  auto wider = plan("order-2", {"sms", "email"});
  BOOST_REQUIRE_EQUAL(wider.message.id, first.message.id); // same key, same message
  auto again = ask<persistence::claim_result>(shard, actors::claim_atom_v, wider);
  BOOST_REQUIRE(again);
  BOOST_REQUIRE_EQUAL(again->tasks.size(), 2u);
  BOOST_TEST(again->tasks[0].task_id == first.tasks[0].id);
  BOOST_TEST(!again->tasks[0].created);
  BOOST_TEST(again->tasks[1].channel == "email");
  BOOST_TEST(again->tasks[1].created);
  BOOST_TEST(provider->calls.size() == 2u);
  BOOST_TEST(provider->calls_for(first.tasks[0].id) == 1u);
  BOOST_TEST(provider->calls_for(wider.tasks[1].id) == 1u);
}

BOOST_AUTO_TEST_CASE(a_concurrent_resubmission_naming_an_extra_channel_is_claimed_after_the_first) {
  auto narrow = plan("order-3", {"sms"});
  auto wider = plan("order-3", {"sms", "email"});
  auto echo = plan("order-3", {"sms"});
  caf::scoped_actor a{sys, true}, b{sys, true}, c{sys, true};
  auto pa = a->request(shard, caf::infinite, actors::claim_atom_v, narrow);
  auto pb = b->request(shard, caf::infinite, actors::claim_atom_v, wider);
  auto pc = c->request(shard, caf::infinite, actors::claim_atom_v, echo);
  run();
  // The narrow claim goes first; the wider one needs its own round trip; the echo of the
  // narrow one is answered from what the database said, without one.
  BOOST_TEST(writer_store->claim_batches == 2u);
  auto ra = take(a, pa);
  auto rb = take(b, pb);
  auto rc = take(c, pc);
  BOOST_REQUIRE_EQUAL(ra.tasks.size(), 1u);
  BOOST_TEST(ra.tasks[0].created);
  BOOST_REQUIRE_EQUAL(rb.tasks.size(), 2u);
  BOOST_TEST(!rb.tasks[0].created);
  BOOST_TEST(rb.tasks[1].created);
  BOOST_REQUIRE_EQUAL(rc.tasks.size(), 1u);
  BOOST_TEST(!rc.tasks[0].created);
  BOOST_TEST(rc.tasks[0].task_id == narrow.tasks[0].id);
  BOOST_TEST(provider->calls.size() == 2u);
  BOOST_TEST(provider->calls_for(narrow.tasks[0].id) == 1u);
  BOOST_TEST(provider->calls_for(wider.tasks[1].id) == 1u);
  BOOST_TEST(tasks_in(task_state::sent) == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
