#pragma once

// The Boost.Test fixture of the actor tests: an actor system on CAF's deterministic test
// coordinator (every actor runs on the test thread, only when the test calls run(); CAF time
// only moves on advance()), a fresh SQLite database per test, a manual domain clock and a
// metrics registry. CAF's own test DSL is not used: its unit-test framework clashes with
// Boost.Test.

#include "actors/atoms.hpp"
#include "actors/dispatcher.hpp"
#include "actors/interfaces.hpp"
#include "actors/node_supervisor.hpp"
#include "actors/store_reader.hpp"
#include "actors/store_writer.hpp"
#include "domain/time.hpp"
#include "domain/validation.hpp"
#include "observability/health_board.hpp"
#include "observability/log.hpp"
#include "observability/metrics.hpp"
#include "persistence/faulty_task_store.hpp"
#include "persistence/task_store.hpp"
#include "store_spy.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduled_actor.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::test {

using namespace std::chrono_literals;

/// Where the actors' log lines go during the tests; one stream for the whole binary because
/// the logger is process-wide and must never outlive its stream.
inline std::ostringstream& captured_log() {
  static std::ostringstream out;
  return out;
}

struct actor_fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  caf::scoped_actor self;

  std::filesystem::path folder;
  persistence::database_url url;
  std::unique_ptr<persistence::task_store> db; ///< the test's own connection: seeds, inspects
  std::shared_ptr<store_spy> writer_store;     ///< the store writer's connection, counted
  /// What the store writer writes through: a test scripts failures and delays of its writes.
  std::shared_ptr<persistence::faulty_task_store> faulty_store;
  std::shared_ptr<store_spy> reader_store; ///< the store reader's connection, watched
  std::shared_ptr<domain::manual_clock> clock =
      std::make_shared<domain::manual_clock>(domain::from_unix_micros(1'790'000'000'000'000));
  std::shared_ptr<herald::metrics> metrics = std::make_shared<herald::metrics>();
  /// Where components say they stopped, as /readyz reads it.
  std::shared_ptr<health_board> health = std::make_shared<health_board>();
  domain::routing_rules rules;
  std::vector<caf::actor> spawned; ///< killed at the end, so the system can shut down

  static caf::actor_system_config& configure(caf::actor_system_config& config) {
    config.set("scheduler.policy", caf::atom("testing"));
    config.set("logger.file-verbosity", caf::atom("quiet"));
    config.set("logger.console-verbosity", caf::atom("quiet"));
    actors::register_types(config);
    return config;
  }

  actor_fixture()
      : sys(configure(cfg)),
        sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())), self(sys, true) {
    captured_log().str("");
    log::init_to_stream(log::level::debug, captured_log());
    std::string pattern =
        (std::filesystem::temp_directory_path() / "herald-actors-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    folder = pattern;
    url = persistence::parse_database_url("sqlite:" + (folder / "herald.db").string());
    db = persistence::open_task_store(url, true);
    writer_store = std::make_shared<store_spy>(persistence::open_task_store(url, false));
    faulty_store =
        std::make_shared<persistence::faulty_task_store>(writer_store, persistence::store_faults{});
    reader_store = std::make_shared<store_spy>(persistence::open_task_store(url, false));
    rules.channels = {"sms", "email", "push"};
    rules.default_route = {"sms"};
  }

  ~actor_fixture() {
    for (auto& actor : spawned)
      caf::anon_send_exit(actor, caf::exit_reason::kill);
    run();
    spawned.clear();
    // Whatever still holds a handle (a held provider callback, a pending timeout) must not
    // make the actor_system destructor wait for ever.
    sys.await_actors_before_shutdown(false);
    std::error_code ignored;
    std::filesystem::remove_all(folder, ignored);
  }

  actor_fixture(const actor_fixture&) = delete;
  actor_fixture& operator=(const actor_fixture&) = delete;

  /// Lets every actor handle everything in its mailbox, including what that causes.
  std::size_t run() { return sched.run(); }

  /// Lets every actor but `held` handle everything, including what that causes: what `held`
  /// is sent waits in its mailbox (a database that has not answered yet).
  template <class Handle> std::size_t run_all_but(const Handle& held) {
    auto* skipped = dynamic_cast<caf::resumable*>(caf::actor_cast<caf::abstract_actor*>(held));
    BOOST_REQUIRE(skipped != nullptr);
    return sched.run_jobs_filtered([skipped](caf::resumable* job) { return job != skipped; });
  }

  /// Messages waiting in `whom`'s mailbox.
  template <class Handle> std::size_t waiting_for(const Handle& whom) {
    auto* actor = dynamic_cast<caf::scheduled_actor*>(caf::actor_cast<caf::abstract_actor*>(whom));
    BOOST_REQUIRE(actor != nullptr);
    return actor->mailbox().size();
  }

  /// Moves CAF's clock (delayed messages, request timeouts), then runs.
  void advance(caf::timespan by) {
    sched.advance_time(by);
    run();
  }

  /// Moves the domain clock and CAF's clock together, then runs.
  void advance_both(std::chrono::milliseconds by) {
    clock->advance(std::chrono::duration_cast<std::chrono::microseconds>(by));
    advance(std::chrono::duration_cast<caf::timespan>(by));
  }

  template <class F, class... Ts> auto spawn(F fun, Ts&&... xs) {
    auto handle = sys.spawn(fun, std::forward<Ts>(xs)...);
    spawned.push_back(caf::actor_cast<caf::actor>(handle));
    return handle;
  }

  /// A store writer on the counted, fault-injecting connection; not detached, so it runs on
  /// the test thread.
  actors::store_writer_actor spawn_writer(actors::store_writer_config config = {}) {
    return spawn(actors::store_writer, std::shared_ptr<persistence::task_store>{faulty_store},
                 metrics, config);
  }

  actors::store_reader_actor spawn_reader() {
    return spawn(actors::store_reader, std::shared_ptr<persistence::task_store>{reader_store});
  }

  /// The dispatcher, its retry timer and one channel actor per spec, wired as the node wires
  /// them; `components` describes them for a node supervisor (none watches them otherwise).
  struct dispatch_node {
    actors::dispatcher_actor dispatcher;
    std::vector<actors::supervised_component> components;
  };

  dispatch_node spawn_dispatch_node(
      std::vector<actors::channel_spec> specs, const actors::store_writer_actor& writer,
      const actors::store_reader_actor& reader, actors::dispatcher_config config = {},
      actors::retry_timer_config timer_config = {},
      const std::map<std::string, std::shared_ptr<domain::claim_places>>& places = {}) {
    std::vector<actors::channel_settings> settings;
    for (const auto& spec : specs)
      settings.push_back(spec.settings);
    dispatch_node node;
    node.dispatcher = spawn(actors::dispatcher, settings, reader,
                            std::shared_ptr<const domain::clock>{clock}, config);
    node.components.push_back(actors::start_retry_timer(
        sys, node.dispatcher, metrics, std::shared_ptr<const domain::clock>{clock}, timer_config));
    for (auto& spec : specs) {
      auto offered = places.find(spec.settings.name);
      node.components.push_back(actors::start_channel(
          sys, std::move(spec),
          actors::channel_peers{writer, node.dispatcher, metrics,
                                std::shared_ptr<const domain::clock>{clock}, health, nullptr,
                                offered != places.end() ? offered->second : nullptr}));
    }
    for (const auto& component : node.components)
      spawned.push_back(component.handle);
    caf::anon_send(writer, actors::attach_atom_v, node.dispatcher); // as the node wires them
    run();
    return node;
  }

  /// Sends a request from the scoped actor, runs the system, and takes the answer. Fails the
  /// test (instead of blocking) when no answer came.
  template <class R, class Handle, class... Ts> std::optional<R> ask(const Handle& to, Ts&&... xs) {
    auto pending = self->request(to, caf::infinite, std::forward<Ts>(xs)...);
    run();
    if (!self->has_next_message()) {
      BOOST_ERROR("no answer after run()");
      return std::nullopt;
    }
    std::optional<R> answer;
    pending.receive(
        [&](R& value) { answer = std::move(value); },
        [&](caf::error& err) { BOOST_ERROR("request failed: " << actors::describe(err)); });
    return answer;
  }

  /// A planned message through the real business rules, at the domain clock's now.
  domain::message_plan plan(const std::string& biz_id, const std::vector<std::string>& channels,
                            domain::priority priority = domain::priority::normal,
                            std::optional<domain::timestamp> expire_at = std::nullopt) {
    domain::message_request request;
    request.biz_type = "ORDER_SHIPPED";
    request.biz_id = biz_id;
    request.user_id = "u-1";
    request.channels = channels;
    for (const auto& channel : channels)
      request.to[channel] = "to-" + channel + "@example.com";
    request.body = domain::content{"Shipped", "Order " + biz_id + " shipped"};
    request.priority = priority;
    request.expire_at = expire_at;
    auto planned =
        domain::plan_message(request, rules, domain::id_secret{}, clock->now(), "trace-" + biz_id);
    if (auto* error = std::get_if<domain::validation_error>(&planned))
      throw std::runtime_error("test plan rejected: " + error->message);
    auto result = std::get<domain::message_plan>(std::move(planned));
    for (const auto& t : result.tasks)
      message_of_task[t.id] = result.message.id;
    return result;
  }

  /// Claims plans directly in the database (not through the actors) and returns the task ids.
  std::vector<std::string> seed(const std::vector<domain::message_plan>& plans) {
    std::vector<std::string> ids;
    for (const auto& result : db->claim(plans))
      for (const auto& outcome : result.tasks)
        ids.push_back(outcome.task_id);
    return ids;
  }

  /// Moves one task in the database directly; fails the test if the guard did not hold.
  void move_task(const std::string& task_id, domain::task_state from, domain::task_state to,
                 std::uint32_t attempts = 0,
                 std::optional<domain::timestamp> next_attempt_at = std::nullopt) {
    persistence::state_change change;
    change.task_id = task_id;
    change.from = from;
    change.to = to;
    change.attempts = attempts;
    change.next_attempt_at = next_attempt_at;
    change.at = clock->now();
    BOOST_REQUIRE_EQUAL(db->apply({change}, {}).size(), 1u);
  }

  /// The unfinished tasks as recovery reads them, i.e. ready-made deliveries.
  actors::deliveries unfinished() { return db->load_unfinished("", 100000, clock->now()); }

  /// The delivery of one unfinished task.
  domain::delivery delivery_of(const std::string& task_id) {
    for (auto& d : unfinished())
      if (d.task_id == task_id)
        return d;
    throw std::runtime_error("task " + task_id + " is not unfinished");
  }

  /// A task as the database holds it now (of a message made by plan()).
  persistence::task_view task(const std::string& task_id) {
    auto owner = message_of_task.find(task_id);
    if (owner == message_of_task.end())
      throw std::runtime_error("task " + task_id + " was not planned by this test");
    if (auto view = db->find_message("", owner->second))
      for (auto& t : view->tasks)
        if (t.task_id == task_id)
          return t;
    throw std::runtime_error("task " + task_id + " is not in the database");
  }

  std::uint64_t tasks_in(domain::task_state state) {
    for (const auto& count : db->count_by_state())
      if (count.state == state)
        return count.count;
    return 0;
  }

  std::string logs() const { return captured_log().str(); }

private:
  std::map<std::string, std::string> message_of_task; ///< task id -> message id
};

} // namespace herald::test
