#include "actor_fixture.hpp"
#include "actors/dispatcher.hpp"
#include "recording_provider.hpp"

#include <map>
#include <memory>
#include <set>

#include <boost/test/unit_test.hpp>

using namespace herald;
using domain::task_state;
using test::recording_provider;

namespace {

struct dispatcher_fixture : test::actor_fixture {
  std::shared_ptr<recording_provider> provider = std::make_shared<recording_provider>();
  actors::store_writer_actor writer = spawn_writer();
  actors::store_reader_actor reader = spawn_reader();

  ~dispatcher_fixture() { provider->drop_held(); }

  actors::dispatcher_actor spawn_dispatcher(std::size_t window = 64,
                                            actors::dispatcher_config config = {},
                                            double rate_per_sec = 1000) {
    actors::channel_spec spec;
    spec.settings.name = "sms";
    spec.settings.window = window;
    spec.settings.rate_per_sec = rate_per_sec;
    spec.provider = provider;
    return spawn_dispatch_node({spec}, writer, reader, config).dispatcher;
  }

  std::string state(const std::string& task_id) {
    return std::string{to_string(task(task_id).state)};
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(dispatcher_tests, dispatcher_fixture)

BOOST_AUTO_TEST_CASE(recovery_dispatches_every_unfinished_task_once) {
  auto ids = seed({plan("pending", {"sms"}), plan("retrying", {"sms"}), plan("sending", {"sms"}),
                   plan("sent", {"sms"})});
  auto pending = ids[0], retrying = ids[1], sending = ids[2], sent = ids[3];
  move_task(retrying, task_state::pending, task_state::sending);
  move_task(retrying, task_state::sending, task_state::retry_wait, 1,
            clock->now() - std::chrono::seconds{1});
  move_task(sending, task_state::pending, task_state::sending);
  move_task(sent, task_state::pending, task_state::sending);
  move_task(sent, task_state::sending, task_state::sent, 1);

  auto dispatcher = spawn_dispatcher();
  run();
  BOOST_TEST(provider->calls.empty()); // nothing before recovery is asked for
  caf::anon_send(dispatcher, actors::recover_atom_v, std::string{});
  run();
  BOOST_TEST(provider->calls.size() == 3u);
  for (const auto& id : {pending, retrying, sending}) {
    BOOST_TEST(provider->calls_for(id) == 1u, id);
    BOOST_TEST(state(id) == "SENT", id);
  }
  BOOST_TEST(provider->calls_for(sent) == 0u);
  BOOST_TEST(task(retrying).attempts == 2u);
  BOOST_TEST(metrics->render().find("herald_ambiguous_resends_total{channel=\"sms\"} 1") !=
             std::string::npos);
}

// A task found RETRY_WAIT keeps its backoff across a restart: it is due at next_attempt_at,
// not at once (a throttling provider asked for that pause).
BOOST_AUTO_TEST_CASE(recovery_keeps_a_waiting_retry_until_it_is_due) {
  auto id = seed({plan("later", {"sms"})}).at(0);
  move_task(id, task_state::pending, task_state::sending);
  move_task(id, task_state::sending, task_state::retry_wait, 1,
            clock->now() + std::chrono::minutes{10});
  auto dispatcher = spawn_dispatcher();
  caf::anon_send(dispatcher, actors::recover_atom_v, std::string{});
  run();
  BOOST_TEST(provider->calls.empty());
  if (!provider->calls.empty())
    return; // one failure is enough (a fatal one would not count as expected)
  BOOST_TEST(state(id) == "RETRY_WAIT");
  advance_both(std::chrono::minutes{10} + std::chrono::milliseconds{10});
  BOOST_TEST(provider->calls_for(id) == 1u);
  BOOST_TEST(state(id) == "SENT");
}

BOOST_AUTO_TEST_CASE(recovery_pages_through_the_database) {
  std::vector<domain::message_plan> plans;
  for (int i = 0; i < 7; ++i)
    plans.push_back(plan("order-" + std::to_string(i), {"sms"}));
  auto ids = seed(plans);
  actors::dispatcher_config config;
  config.recovery_page = 3; // 3 + 3 + 1
  auto dispatcher = spawn_dispatcher(64, config);
  caf::anon_send(dispatcher, actors::recover_atom_v, std::string{});
  run();
  BOOST_TEST(provider->calls.size() == 3u);
  advance_both(std::chrono::milliseconds{3}); // 3 tasks at 1000 calls/s
  BOOST_TEST(provider->calls.size() == 6u);
  advance_both(std::chrono::milliseconds{3});
  BOOST_TEST(provider->calls.size() == 7u);
  BOOST_TEST(reader_store->recovery_reads.size() == 3u);
  for (const auto& id : ids)
    BOOST_TEST(provider->calls_for(id) == 1u, id);
}

// Recovery does not flood a channel: a page holds at most windows_per_page windows, and the
// next page is read only once the channel has had time to send the previous one at its rate.
BOOST_AUTO_TEST_CASE(recovery_is_paced_by_the_channels_window_and_rate) {
  std::vector<domain::message_plan> plans;
  for (int i = 0; i < 5; ++i)
    plans.push_back(plan("paced-" + std::to_string(i), {"sms"}));
  auto ids = seed(plans);
  actors::dispatcher_config config;
  config.windows_per_page = 2;                       // window 1: pages of 2 tasks
  auto dispatcher = spawn_dispatcher(1, config, 10); // 10 calls/s: 200 ms per page
  caf::anon_send(dispatcher, actors::recover_atom_v, std::string{});
  run();
  BOOST_TEST(provider->calls.size() == 2u);
  BOOST_TEST(reader_store->recovery_reads.size() == 1u);
  advance_both(std::chrono::milliseconds{199});
  BOOST_TEST(provider->calls.size() == 2u); // the channel has not had time for a page yet
  advance_both(std::chrono::milliseconds{1});
  BOOST_TEST(provider->calls.size() == 4u);
  advance_both(std::chrono::milliseconds{200});
  BOOST_TEST(provider->calls.size() == 5u);
  BOOST_TEST(reader_store->recovery_reads.size() == 3u); // 2 + 2 + 1, then nothing more
  for (const auto& id : ids)
    BOOST_TEST(provider->calls_for(id) == 1u, id);
}

BOOST_AUTO_TEST_CASE(a_slow_channel_delays_the_next_page_by_a_second_at_most) {
  std::vector<domain::message_plan> plans;
  for (int i = 0; i < 4; ++i)
    plans.push_back(plan("slow-" + std::to_string(i), {"sms"}));
  seed(plans);
  actors::dispatcher_config config;
  config.windows_per_page = 2;                         // window 1: pages of 2 tasks
  auto dispatcher = spawn_dispatcher(1, config, 0.01); // 200 s to send a page at its rate
  caf::anon_send(dispatcher, actors::recover_atom_v, std::string{});
  run();
  BOOST_TEST(reader_store->recovery_reads.size() == 1u);
  advance_both(std::chrono::milliseconds{999});
  BOOST_TEST(reader_store->recovery_reads.size() == 1u);
  advance_both(std::chrono::milliseconds{1}); // other channels' recovery waits no longer
  BOOST_TEST(reader_store->recovery_reads.size() == 2u);
}

// The sweep re-reads only what it must: a retry due after the next sweep waits in the retry
// timer (or, let go, in the database) and is not read again every interval; it is read by the
// last sweep before it is due, and sent once, on time.
BOOST_AUTO_TEST_CASE(a_sweep_skips_retries_due_after_the_next_sweep) {
  auto id = seed({plan("later", {"sms"})}).at(0);
  move_task(id, task_state::pending, task_state::sending);
  move_task(id, task_state::sending, task_state::retry_wait, 1,
            clock->now() + std::chrono::minutes{10});
  actors::dispatcher_config config;
  config.sweep_interval = std::chrono::minutes{1};
  auto dispatcher = spawn_dispatcher(64, config);
  advance_both(std::chrono::minutes{1}); // the first sweep
  BOOST_REQUIRE_EQUAL(reader_store->recovery_reads.size(), 1u);
  BOOST_TEST(metrics->render().find("herald_retry_queue_depth 0") != std::string::npos);
  advance_both(std::chrono::minutes{8}); // the sweep at 9 min reads it: due before the next
  BOOST_TEST(metrics->render().find("herald_retry_queue_depth 1") != std::string::npos);
  BOOST_TEST(provider->calls.empty());
  advance_both(std::chrono::minutes{1});
  BOOST_TEST(provider->calls_for(id) == 1u);
  BOOST_TEST(state(id) == "SENT");
}

// When held retries come due the timer hands over their ids only: the dispatcher reads them
// whole from the database, leaves out any that finished meanwhile, sends the rest and answers
// how long the channel needs for them, which paces the timer's next batch.
BOOST_AUTO_TEST_CASE(due_ids_are_read_from_the_database_and_sent) {
  auto ids = seed({plan("due-1", {"sms"}), plan("due-2", {"sms"}), plan("done", {"sms"})});
  move_task(ids[0], task_state::pending, task_state::sending);
  move_task(ids[0], task_state::sending, task_state::retry_wait, 1, clock->now());
  move_task(ids[2], task_state::pending, task_state::sending);
  move_task(ids[2], task_state::sending, task_state::sent, 1);
  auto dispatcher = spawn_dispatcher(64, {}, 10); // 10 calls/s: 2 tasks take 200 ms
  auto pause = ask<caf::timespan>(dispatcher, actors::due_atom_v, actors::task_ids{ids});
  BOOST_REQUIRE(pause);
  BOOST_TEST(std::chrono::duration_cast<std::chrono::milliseconds>(*pause).count() == 200);
  BOOST_REQUIRE_EQUAL(reader_store->id_reads.size(), 1u);
  BOOST_TEST(reader_store->id_reads[0] == ids);
  BOOST_TEST(provider->calls_for(ids[0]) == 1u);
  BOOST_TEST(provider->calls_for(ids[1]) == 1u);
  BOOST_TEST(provider->calls_for(ids[2]) == 0u); // SENT meanwhile: not read, not sent again
  BOOST_TEST(state(ids[0]) == "SENT");
  BOOST_TEST(task(ids[0]).attempts == 2u);
}

BOOST_AUTO_TEST_CASE(tasks_of_an_unknown_channel_are_logged_and_skipped) {
  auto ids = seed({plan("known", {"sms"}), plan("unknown", {"push"})});
  auto dispatcher = spawn_dispatcher();
  caf::anon_send(dispatcher, actors::dispatch_atom_v, unfinished());
  run();
  BOOST_TEST(provider->calls.size() == 1u);
  BOOST_TEST(state(ids[0]) == "SENT");
  BOOST_TEST(state(ids[1]) == "PENDING"); // left in the database, untouched
  auto text = logs();
  auto line = text.find("dispatcher.unknown_channel");
  BOOST_REQUIRE(line != std::string::npos);
  BOOST_TEST(text.substr(line, text.find('\n', line) - line).find("push") != std::string::npos);
}

// In a cluster a node sends only its own partitions' tasks: recovery reads only those, new tasks
// of other partitions go to its cluster member (with their partitions) instead of a channel, and
// gaining partitions sweeps them at once.
BOOST_AUTO_TEST_CASE(a_cluster_node_sends_its_partitions_and_hands_the_rest_on) {
  std::vector<domain::message_plan> plans;
  for (int i = 0; i < 12; ++i)
    plans.push_back(plan("part-" + std::to_string(i), {"sms"}));
  auto ids = seed(plans);
  // This node owns the partitions of the first four messages (and whichever share them).
  std::set<domain::partition> ours;
  for (std::size_t i = 0; i < 4; ++i)
    ours.insert(domain::partition_of(plans[i].message.id).value());
  std::map<std::string, domain::partition> partition_of_task;
  actors::deliveries fresh; // as new work would arrive
  for (const auto& id : ids) {
    auto delivery = delivery_of(id);
    partition_of_task[id] = domain::partition_of(delivery.message_id).value();
    if (ours.count(partition_of_task[id]) == 0)
      fresh.push_back(std::move(delivery));
  }
  auto is_ours = [&](const std::string& task_id) {
    return ours.count(partition_of_task.at(task_id)) == 1;
  };
  std::vector<std::string> theirs;
  for (const auto& id : ids)
    if (!is_ours(id))
      theirs.push_back(id);
  BOOST_REQUIRE(!theirs.empty());

  auto forwarded = std::make_shared<actors::partitioned_tasks>();
  auto member = sys.spawn([forwarded](actors::cluster_member_actor::pointer) {
    return actors::cluster_member_actor::behavior_type{
        [](actors::beat_atom, const actors::member_beat&) {},
        [](actors::handoff_atom, const actors::task_handoff&) {},
        [forwarded](actors::forward_atom, const actors::partitioned_tasks& tasks) {
          forwarded->insert(forwarded->end(), tasks.begin(), tasks.end());
        },
        [](actors::tick_atom) {},
        [](actors::dial_atom, const std::string&) {},
        [](actors::cluster_atom) { return domain::cluster_view{}; },
    };
  });
  auto dispatcher = spawn_dispatcher();
  caf::anon_send(dispatcher, actors::attach_atom_v, member);
  caf::anon_send(dispatcher, actors::own_atom_v, actors::partition_list(ours.begin(), ours.end()));
  caf::anon_send(dispatcher, actors::recover_atom_v, std::string{});
  run();
  for (const auto& id : ids)
    BOOST_TEST(provider->calls_for(id) == (is_ours(id) ? 1u : 0u), id);

  // The other partitions' tasks arriving as new work are handed on, not sent.
  caf::anon_send(dispatcher, actors::dispatch_atom_v, fresh);
  run();
  BOOST_TEST(forwarded->size() == theirs.size());
  for (const auto& [partition, id] : *forwarded) {
    BOOST_TEST(partition == partition_of_task.at(id));
    BOOST_TEST(provider->calls_for(id) == 0u, id);
  }

  // Their owner left: this node now owns every partition and sweeps them at once.
  actors::partition_list all;
  for (std::size_t p = 0; p < domain::partition_count; ++p)
    all.push_back(static_cast<domain::partition>(p));
  caf::anon_send(dispatcher, actors::own_atom_v, all);
  run();
  for (const auto& id : ids)
    BOOST_TEST(provider->calls_for(id) == 1u, id);
}

BOOST_AUTO_TEST_SUITE_END()
