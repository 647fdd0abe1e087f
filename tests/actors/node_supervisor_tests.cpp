#include "actor_fixture.hpp"
#include "actors/node_supervisor.hpp"
#include "recording_provider.hpp"

#include <map>
#include <memory>

#include <boost/test/unit_test.hpp>
#include <caf/event_based_actor.hpp>

using namespace herald;
using domain::task_state;
using test::recording_provider;

namespace {

/// Ignores a polite exit; only a kill stops it (a component stuck in a long call).
caf::behavior stubborn(caf::event_based_actor* self) {
  self->set_exit_handler([](caf::exit_msg&) {});
  return {[](int) {}};
}

/// A node as the server wires it — store writer and reader, dispatcher, retry timer, sms and
/// email channels — under a node supervisor.
struct supervisor_fixture : test::actor_fixture {
  std::shared_ptr<recording_provider> sms = std::make_shared<recording_provider>();
  std::shared_ptr<recording_provider> email = std::make_shared<recording_provider>();
  actors::store_writer_actor writer = spawn_writer();
  actors::store_reader_actor reader = spawn_reader();
  std::shared_ptr<health_board> health = std::make_shared<health_board>();
  actors::dispatcher_actor dispatcher;
  actors::node_supervisor_actor supervisor;
  std::map<caf::actor_addr, std::string> names; ///< of every supervised component

  ~supervisor_fixture() {
    sms->drop_held();
    email->drop_held();
  }

  static actors::channel_spec
  spec(const std::string& name, std::shared_ptr<recording_provider> provider, std::size_t window) {
    actors::channel_spec s;
    s.settings.name = name;
    s.settings.window = window;
    s.provider = std::move(provider);
    return s;
  }

  /// Starts the node; a long sweep interval unless asked otherwise, so what a test sees
  /// reloaded was reloaded by a restart, not by a sweep.
  void start(actors::supervision_config config = {}, std::size_t sms_window = 64,
             std::vector<actors::supervised_component> extra = {},
             std::chrono::milliseconds sweep_interval = std::chrono::hours{1}) {
    actors::dispatcher_config dispatch_config;
    dispatch_config.sweep_interval = sweep_interval;
    auto node = spawn_dispatch_node({spec("sms", sms, sms_window), spec("email", email, 64)},
                                    writer, reader, dispatch_config);
    dispatcher = node.dispatcher;
    auto components = std::move(node.components);
    using actors::shutdown_stage;
    components.push_back(
        {"store_writer", shutdown_stage::writer, caf::actor_cast<caf::actor>(writer), {}});
    components.push_back(
        {"store_reader", shutdown_stage::reader, caf::actor_cast<caf::actor>(reader), {}});
    components.push_back(
        {"dispatcher", shutdown_stage::dispatch, caf::actor_cast<caf::actor>(dispatcher), {}});
    for (auto& component : extra)
      components.push_back(std::move(component));
    for (const auto& component : components)
      names[component.handle.address()] = component.name;
    supervisor = spawn(actors::node_supervisor, std::move(components), health,
                       std::shared_ptr<const domain::clock>{clock}, config);
    run();
  }

  /// The dispatcher's state (read directly; safe, nothing runs while the test thread looks).
  actors::dispatcher_state& dispatcher_state() {
    auto* ptr = dynamic_cast<actors::dispatcher_actor::stateful_pointer<actors::dispatcher_state>>(
        caf::actor_cast<caf::abstract_actor*>(dispatcher));
    BOOST_REQUIRE(ptr != nullptr);
    return ptr->state;
  }

  /// The channel actor the dispatcher currently routes `name` to.
  std::optional<actors::channel_actor> channel_of(const std::string& name) {
    auto& channels = dispatcher_state().channels;
    auto found = channels.find(name);
    if (found == channels.end())
      return std::nullopt;
    return found->second;
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

  std::string state(const std::string& task_id) {
    return std::string{to_string(task(task_id).state)};
  }

  std::size_t calls_since(std::size_t from, const std::string& task_id) const {
    std::size_t n = 0;
    for (std::size_t i = from; i < sms->calls.size(); ++i)
      n += sms->calls[i].task_id == task_id ? 1 : 0;
    return n;
  }

  /// Three tasks on a window-1 channel; the first call never answers; then the channel dies
  /// with `reason`. The supervisor must start a new channel, and every task the dead one held
  /// must be sent exactly once more: the queued ones at once, the one in flight as an
  /// ambiguous resend once its lease has run out (a sweep finds it then).
  void channel_dies_and_comes_back(caf::exit_reason reason) {
    auto ids = seed({plan("a", {"sms"}), plan("b", {"sms"}), plan("c", {"sms"})});
    sms->hold(true);
    start({}, 1, {}, actors::dispatcher_config{}.sweep_interval);
    caf::anon_send(dispatcher, actors::dispatch_atom_v, unfinished());
    run();
    BOOST_REQUIRE_EQUAL(sms->calls.size(), 1u);
    auto in_flight = sms->calls[0].task_id;
    auto old_channel = channel_of("sms");
    BOOST_REQUIRE(old_channel);

    sms->hold(false);
    auto before = sms->calls.size();
    caf::anon_send_exit(*old_channel, reason);
    run();
    BOOST_TEST(state(in_flight) == "SENDING"); // leased: nobody else may send it yet
    advance_both(actors::channel_settings{}.lease + actors::dispatcher_config{}.sweep_interval);
    auto new_channel = channel_of("sms");
    bool restarted = alive(dispatcher) && new_channel && *new_channel != *old_channel;
    BOOST_CHECK_MESSAGE(restarted, "the supervisor starts a new channel");
    if (!restarted)
      return; // one failure is enough (a fatal one would not count as expected)
    for (const auto& id : ids) {
      BOOST_TEST(calls_since(before, id) == 1u, id);
      BOOST_TEST(state(id) == "SENT", id);
    }
    for (std::size_t i = before; i < sms->calls.size(); ++i)
      if (sms->calls[i].task_id == in_flight)
        BOOST_TEST(sms->calls[i].provider_request_id == sms->calls[0].provider_request_id);
    BOOST_TEST(metrics->render().find("herald_ambiguous_resends_total{channel=\"sms\"} 1") !=
               std::string::npos);

    // The dead channel's call answering late changes nothing: it goes to the dead actor.
    BOOST_TEST(sms->release() == 1u);
    run();
    BOOST_TEST(task(in_flight).attempt_log.size() == 1u);
    BOOST_TEST(state(in_flight) == "SENT");
    BOOST_TEST(health->problems().empty());
  }

  /// Names of the components whose down messages reached the test, in order.
  std::vector<std::string> downs_in_order() {
    std::vector<std::string> order;
    while (self->has_next_message())
      self->receive([&](caf::down_msg& down) {
        auto name = names.find(down.source);
        order.push_back(name == names.end() ? "?" : name->second);
      });
    return order;
  }

  void watch_components() {
    for (const auto& [address, name] : names)
      self->monitor(caf::actor_cast<caf::actor>(address));
  }
};

std::size_t position(const std::vector<std::string>& order, const std::string& name) {
  auto found = std::find(order.begin(), order.end(), name);
  BOOST_REQUIRE_MESSAGE(found != order.end(), name << " stopped");
  return static_cast<std::size_t>(found - order.begin());
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(node_supervisor_tests, supervisor_fixture)

// A restarted channel reloads its own unfinished tasks and nothing else: the other channels
// lost nothing, and a node with a large backlog must not reread all of it for one channel.
BOOST_AUTO_TEST_CASE(a_killed_channel_is_restarted_and_reloads_only_its_tasks) {
  auto ids = seed({plan("a", {"sms"}), plan("b", {"sms"}), plan("c", {"email"})});
  start();
  auto old_channel = channel_of("sms");
  BOOST_REQUIRE(old_channel);
  caf::anon_send_exit(*old_channel, caf::exit_reason::kill);
  run();
  auto new_channel = channel_of("sms");
  BOOST_REQUIRE(new_channel);
  BOOST_TEST((*new_channel != *old_channel));
  BOOST_TEST(sms->calls_for(ids[0]) == 1u);
  BOOST_TEST(sms->calls_for(ids[1]) == 1u);
  BOOST_TEST(email->calls.empty());
  BOOST_TEST(state(ids[2]) == "PENDING");
  BOOST_TEST(reader_store->recovery_reads == std::vector<std::string>{"sms"},
             boost::test_tools::per_element());
  BOOST_TEST(logs().find("node.component_restarted") != std::string::npos);
  BOOST_TEST(health->problems().empty());
}

BOOST_AUTO_TEST_CASE(a_crashed_channel_is_restarted_and_its_tasks_sent_once) {
  channel_dies_and_comes_back(caf::exit_reason::unhandled_exception);
}

// In CAF 0.17 an exit_msg whose reason is `kill` bypasses exit handlers: linked channels would
// take their supervisor down with them, so the supervisor monitors them instead.
BOOST_AUTO_TEST_CASE(a_killed_channel_is_restarted_and_its_tasks_sent_once) {
  channel_dies_and_comes_back(caf::exit_reason::kill);
}

BOOST_AUTO_TEST_CASE(a_channel_that_keeps_dying_is_named_on_the_health_board) {
  actors::supervision_config config;
  config.max_restarts = 1;
  start(config);
  caf::anon_send_exit(*channel_of("sms"), caf::exit_reason::unhandled_exception);
  run();
  BOOST_TEST(health->problems().empty()); // the first restart is within the budget
  caf::anon_send_exit(*channel_of("sms"), caf::exit_reason::unhandled_exception);
  run();
  auto problems = health->problems();
  BOOST_TEST(problems.find("channel sms: stopped") != std::string::npos, problems);
  BOOST_TEST(problems.find("not restarted") != std::string::npos, problems);
  BOOST_TEST(problems.find("email") == std::string::npos, problems);
  BOOST_TEST(logs().find("node.component_down") != std::string::npos);
  BOOST_TEST(alive(dispatcher)); // the rest of the node lives on
}

// The budget is per window of the injected clock: restarts long ago do not count.
BOOST_AUTO_TEST_CASE(restarts_outside_the_window_do_not_count) {
  actors::supervision_config config;
  config.max_restarts = 1;
  config.restart_window = std::chrono::seconds{60};
  start(config);
  auto first = *channel_of("sms");
  caf::anon_send_exit(first, caf::exit_reason::unhandled_exception);
  run();
  clock->advance(std::chrono::seconds{61});
  auto second = *channel_of("sms");
  caf::anon_send_exit(second, caf::exit_reason::unhandled_exception);
  run();
  auto third = channel_of("sms");
  BOOST_REQUIRE(third);
  BOOST_TEST((*third != second));
  BOOST_TEST(health->problems().empty());
}

// Every peer holds the store actors' handles, so they are not restarted; their death makes the
// node unready, by name.
BOOST_AUTO_TEST_CASE(a_dead_store_writer_or_reader_is_named_on_the_health_board) {
  start();
  caf::anon_send_exit(writer, caf::exit_reason::kill);
  run();
  auto problems = health->problems();
  BOOST_TEST(problems.find("store_writer: stopped") != std::string::npos, problems);
  BOOST_TEST(problems.find("cannot be restarted") != std::string::npos, problems);
  caf::anon_send_exit(reader, caf::exit_reason::unhandled_exception);
  run();
  problems = health->problems();
  BOOST_TEST(problems.find("store_reader: stopped") != std::string::npos, problems);
  BOOST_TEST(problems.find("store_writer") != std::string::npos, problems);
}

// The retry timer is a cache of the database: a new one is filled again from the RETRY_WAIT
// rows, so a retry scheduled before the timer died still goes out when it is due, once.
BOOST_AUTO_TEST_CASE(a_restarted_timer_keeps_the_scheduled_retries) {
  auto id = seed({plan("later", {"sms"})}).at(0);
  move_task(id, task_state::pending, task_state::sending);
  move_task(id, task_state::sending, task_state::retry_wait, 1,
            clock->now() + std::chrono::minutes{10});
  start();
  caf::anon_send(dispatcher, actors::recover_atom_v, std::string{});
  run();
  auto old_timer = dispatcher_state().timer;
  BOOST_REQUIRE(old_timer);
  caf::anon_send_exit(old_timer, caf::exit_reason::kill);
  run();
  BOOST_TEST((dispatcher_state().timer != old_timer));
  BOOST_TEST(sms->calls.empty());
  advance_both(std::chrono::minutes{10} + std::chrono::milliseconds{10});
  BOOST_TEST(sms->calls_for(id) == 1u);
  BOOST_TEST(state(id) == "SENT");
}

BOOST_AUTO_TEST_CASE(shutdown_stops_the_components_in_order) {
  start();
  watch_components();
  caf::anon_send(supervisor, actors::shutdown_atom_v);
  run();
  auto order = downs_in_order();
  BOOST_TEST(order.size() == names.size());
  BOOST_TEST(position(order, "channel sms") < position(order, "retry_timer"));
  BOOST_TEST(position(order, "channel email") < position(order, "retry_timer"));
  BOOST_TEST(position(order, "dispatcher") < position(order, "retry_timer"));
  BOOST_TEST(position(order, "retry_timer") < position(order, "store_writer"));
  BOOST_TEST(position(order, "store_writer") < position(order, "store_reader"));
  BOOST_TEST(health->problems().empty()); // stopping is not a failure
}

// A component that ignores the exit holds its stage only for the grace period; then it is
// killed and the stages behind it stop too.
BOOST_AUTO_TEST_CASE(a_stuck_component_is_killed_after_the_grace_period) {
  actors::supervision_config config;
  config.shutdown_grace = std::chrono::seconds{5};
  std::vector<actors::supervised_component> stuck;
  stuck.push_back({"ingest", actors::shutdown_stage::ingest, spawn(stubborn), {}});
  start(config, 64, std::move(stuck));
  watch_components();
  caf::anon_send(supervisor, actors::shutdown_atom_v);
  run();
  BOOST_TEST(downs_in_order().empty()); // everything waits behind the first stage
  advance(std::chrono::seconds{4});
  BOOST_TEST(downs_in_order().empty());
  advance(std::chrono::seconds{1});
  auto order = downs_in_order();
  BOOST_TEST(order.size() == names.size());
  BOOST_TEST(position(order, "ingest") == 0u);
  BOOST_TEST(logs().find("node.component_killed") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
