#include "actor_fixture.hpp"
#include "actors/dispatcher.hpp"
#include "recording_provider.hpp"

#include <memory>

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
                                            actors::dispatcher_config config = {}) {
    actors::channel_spec spec;
    spec.settings.name = "sms";
    spec.settings.window = window;
    spec.provider = provider;
    return spawn(actors::dispatcher, std::vector<actors::channel_spec>{spec}, writer, reader,
                 metrics, std::shared_ptr<const domain::clock>{clock}, config);
  }

  /// Whether the actor still answers a ping (without failing the test when it does not).
  template <class Handle> bool alive(const Handle& actor) {
    auto pending = self->request(actor, caf::infinite, actors::ping_atom_v);
    run();
    if (!self->has_next_message())
      return false;
    bool answered = false;
    pending.receive([&](bool) { answered = true; }, [](caf::error&) {});
    return answered;
  }

  /// Three tasks on a window-1 channel; the first call never answers; then the channel dies
  /// with `reason`. The dispatcher must survive, start a new channel, and send every task the
  /// dead one held exactly once more: the queued ones at once, the one in flight as an
  /// ambiguous resend once its lease has run out (a sweep finds it then).
  void channel_dies_and_comes_back(caf::exit_reason reason) {
    auto ids = seed({plan("a", {"sms"}), plan("b", {"sms"}), plan("c", {"sms"})});
    provider->hold(true);
    auto dispatcher = spawn_dispatcher(1);
    caf::anon_send(dispatcher, actors::dispatch_atom_v, unfinished());
    run();
    BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
    auto in_flight = provider->calls[0].task_id;
    auto old_channel = channel_of(dispatcher, "sms");
    BOOST_REQUIRE(old_channel);

    provider->hold(false);
    auto before = provider->calls.size();
    caf::anon_send_exit(*old_channel, reason);
    run();
    BOOST_TEST(state(in_flight) == "SENDING"); // leased: nobody else may send it yet
    advance_both(actors::channel_settings{}.lease + actors::dispatcher_config{}.sweep_interval);
    auto new_channel = channel_of(dispatcher, "sms");
    bool restarted = alive(dispatcher) && new_channel && *new_channel != *old_channel;
    BOOST_CHECK_MESSAGE(restarted, "the dispatcher survives and starts a new channel");
    if (!restarted)
      return; // one failure is enough (a fatal one would not count as expected)
    for (const auto& id : ids) {
      BOOST_TEST(calls_since(before, id) == 1u, id);
      BOOST_TEST(state(id) == "SENT", id);
    }
    for (std::size_t i = before; i < provider->calls.size(); ++i)
      if (provider->calls[i].task_id == in_flight)
        BOOST_TEST(provider->calls[i].provider_request_id ==
                   provider->calls[0].provider_request_id);
    BOOST_TEST(metrics->render().find("herald_ambiguous_resends_total{channel=\"sms\"} 1") !=
               std::string::npos);

    // The dead channel's call answering late changes nothing: it goes to the dead actor.
    BOOST_TEST(provider->release() == 1u);
    run();
    BOOST_TEST(task(in_flight).attempt_log.size() == 1u);
    BOOST_TEST(state(in_flight) == "SENT");
  }

  /// The channel actor the dispatcher currently routes `name` to (read from its state; safe,
  /// nothing runs while the test thread looks).
  static std::optional<actors::channel_actor> channel_of(const actors::dispatcher_actor& d,
                                                         const std::string& name) {
    auto* ptr = dynamic_cast<actors::dispatcher_actor::stateful_pointer<actors::dispatcher_state>>(
        caf::actor_cast<caf::abstract_actor*>(d));
    BOOST_REQUIRE(ptr != nullptr);
    auto found = ptr->state.channels.find(name);
    if (found == ptr->state.channels.end())
      return std::nullopt;
    return found->second;
  }

  std::string state(const std::string& task_id) {
    return std::string{to_string(task(task_id).state)};
  }

  std::size_t calls_since(std::size_t from, const std::string& task_id) const {
    std::size_t n = 0;
    for (std::size_t i = from; i < provider->calls.size(); ++i)
      n += provider->calls[i].task_id == task_id ? 1 : 0;
    return n;
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
  caf::anon_send(dispatcher, actors::recover_atom_v);
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
  caf::anon_send(dispatcher, actors::recover_atom_v);
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
  caf::anon_send(dispatcher, actors::recover_atom_v);
  run();
  BOOST_TEST(provider->calls.size() == 7u);
  for (const auto& id : ids)
    BOOST_TEST(provider->calls_for(id) == 1u, id);
}

// A channel that dies is replaced, and the tasks it held are reloaded from the database.
BOOST_AUTO_TEST_CASE(a_crashed_channel_is_restarted_and_its_tasks_reloaded) {
  channel_dies_and_comes_back(caf::exit_reason::unhandled_exception);
}

// In CAF 0.17 an exit_msg whose reason is `kill` bypasses exit handlers: linked channels would
// take the dispatcher down with them, so the dispatcher monitors them instead.
BOOST_AUTO_TEST_CASE(a_killed_channel_is_restarted_and_its_tasks_reloaded) {
  channel_dies_and_comes_back(caf::exit_reason::kill);
}

BOOST_AUTO_TEST_CASE(a_channel_that_keeps_dying_is_given_up) {
  actors::dispatcher_config config;
  config.max_restarts = 1;
  auto dispatcher = spawn_dispatcher(64, config);
  run();
  auto first = channel_of(dispatcher, "sms");
  BOOST_REQUIRE(first);
  caf::anon_send_exit(*first, caf::exit_reason::unhandled_exception);
  run();
  auto second = channel_of(dispatcher, "sms");
  BOOST_REQUIRE(second);
  caf::anon_send_exit(*second, caf::exit_reason::unhandled_exception);
  run();
  BOOST_TEST(!channel_of(dispatcher, "sms"));
  BOOST_TEST(logs().find("dispatcher.channel_given_up") != std::string::npos);
  BOOST_TEST(alive(dispatcher)); // the dispatcher itself lives on
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

BOOST_AUTO_TEST_SUITE_END()
