#pragma once

// One channel actor under its real dispatcher (which also owns the retry timer), a recording
// provider and a real SQLite store behind a fault-injecting decorator.

#include "actor_fixture.hpp"
#include "actors/channel_actor.hpp"
#include "actors/dispatcher.hpp"
#include "recording_provider.hpp"

#include <memory>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <caf/send.hpp>

namespace herald::test {

struct channel_fixture : test::actor_fixture {
  std::shared_ptr<recording_provider> provider = std::make_shared<recording_provider>();
  actors::store_writer_actor writer = spawn_writer(failing_over_to_email());
  actors::store_reader_actor reader = spawn_reader();

  ~channel_fixture() { provider->drop_held(); } // held callbacks hold the channel's handle

  /// The store's failover routes: sms falls back to email (ids keyed as plan() keys them). A
  /// test's channel fails over only when its settings name that fallback too.
  static actors::store_writer_config failing_over_to_email() {
    actors::store_writer_config config;
    config.fallbacks = {{{"sms", "email"}}, domain::id_secret{}};
    return config;
  }

  static actors::channel_settings settings() {
    actors::channel_settings s;
    s.name = "sms";
    s.rate_per_sec = 1000;
    s.burst = 1000;
    s.window = 64;
    s.retry = domain::retry_policy{{std::chrono::milliseconds{1000}}, 0.0, 3};
    return s;
  }

  /// The channel under its real dispatcher, which also owns the retry timer; tests talk to
  /// the dispatcher, which hands everything to the one channel.
  actors::dispatcher_actor spawn_channel(actors::channel_settings s = settings()) {
    BOOST_REQUIRE_EQUAL(s.validate(), "");
    actors::channel_spec spec{s, std::shared_ptr<providers::provider_adapter>{provider}};
    return spawn_dispatch_node({spec}, writer, reader).dispatcher;
  }

  /// A channel of `window` places whose provider holds every call until released, handed every
  /// unfinished task.
  actors::dispatcher_actor spawn_holding_channel(std::size_t window) {
    provider->hold(true);
    auto s = settings();
    s.window = window;
    auto channel = spawn_channel(s);
    dispatch(channel, unfinished());
    return channel;
  }

  void dispatch(const actors::dispatcher_actor& channel, actors::deliveries tasks) {
    caf::anon_send(channel, actors::dispatch_atom_v, std::move(tasks));
    run();
  }

  std::string state(const std::string& task_id) {
    return std::string{to_string(task(task_id).state)};
  }

  /// n messages on sms, seeded PENDING; their task ids in order.
  std::vector<std::string> seed_sms(int n, domain::priority p = domain::priority::normal,
                                    const std::string& prefix = "order-") {
    std::vector<domain::message_plan> plans;
    for (int i = 0; i < n; ++i)
      plans.push_back(plan(prefix + std::to_string(i), {"sms"}, p));
    return seed(plans);
  }
};

} // namespace herald::test
