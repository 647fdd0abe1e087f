// Tasks taken in their claim (domain::claim_places): the store writer inserts a new task that
// may go at once SENDING under its channel's lease, and hands it to the channel, which calls
// the provider without a commit of its own. The real writer, dispatcher and channel on SQLite.
#include "actor_fixture.hpp"
#include "actors/channel_actor.hpp"
#include "recording_dispatcher.hpp"
#include "recording_provider.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace herald;
using domain::task_state;

namespace {

struct claim_takes_fixture : test::actor_fixture {
  std::shared_ptr<test::recording_provider> provider = std::make_shared<test::recording_provider>();
  std::map<std::string, std::shared_ptr<domain::claim_places>> places{
      {"sms", std::make_shared<domain::claim_places>("node-a/0000000000000001",
                                                     std::chrono::seconds{60})}};
  actors::store_writer_actor writer = spawn_writer(taking());
  actors::store_reader_actor reader = spawn_reader();
  actors::dispatcher_actor dispatcher; ///< once start_sms ran

  ~claim_takes_fixture() { provider->drop_held(); }

  actors::store_writer_config taking() {
    actors::store_writer_config config;
    config.places = places;
    config.clock = clock;
    return config;
  }

  void start_sms(std::size_t window = 64) {
    actors::channel_settings s;
    s.name = "sms";
    s.rate_per_sec = 1000;
    s.burst = 1000;
    s.window = window;
    s.node_id = "node-a/0000000000000001";
    BOOST_REQUIRE_EQUAL(s.validate(), "");
    actors::channel_spec spec{s, std::shared_ptr<providers::provider_adapter>{provider}};
    dispatcher = spawn_dispatch_node({spec}, writer, reader, {}, {}, places).dispatcher;
  }

  void claim(actors::message_plans plans) {
    self->request(writer, caf::infinite, actors::claim_atom_v, std::move(plans));
    run();
  }

  /// A dispatcher recording what the writer hands over, instead of a channel.
  std::shared_ptr<test::handed_out> record_hand_overs() {
    auto seen = std::make_shared<test::handed_out>();
    caf::anon_send(writer, actors::attach_atom_v, spawn(test::recording_dispatcher, seen));
    run();
    return seen;
  }

  /// The changes the writer committed to SENDING: none for a task taken in its claim.
  std::size_t sending_changes() const {
    std::size_t n = 0;
    for (const auto& change : writer_store->changes)
      n += change.to == task_state::sending ? 1 : 0;
    return n;
  }
};

std::string id_of(const domain::message_plan& plan) {
  return plan.tasks.at(0).id;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(claim_takes_tests, claim_takes_fixture)

BOOST_AUTO_TEST_CASE(a_new_task_that_may_go_at_once_is_inserted_taken_and_called) {
  start_sms();
  std::vector<task_state> state_during_call;
  provider->on_send = [&](const providers::provider_request& request) {
    state_during_call.push_back(task(request.task_id).state);
  };
  const auto message = plan("order-1", {"sms"});
  claim({message});
  BOOST_REQUIRE_EQUAL(provider->calls.size(), 1u);
  BOOST_TEST((state_during_call == std::vector<task_state>{task_state::sending}));
  BOOST_TEST(provider->calls[0].attempt == 1u);
  const auto row = task(id_of(message));
  BOOST_TEST((row.state == task_state::sent));
  BOOST_TEST(row.attempts == 1u);
  BOOST_REQUIRE_EQUAL(row.attempt_log.size(), 1u);
  BOOST_TEST(row.attempt_log[0].outcome == "success");
  // Two writes: the claim inserted it SENDING, the outcome made it SENT.
  BOOST_TEST(sending_changes() == 0u);
  BOOST_TEST(writer_store->changes.size() == 1u);
  BOOST_TEST((writer_store->changes[0].to == task_state::sent));
}

BOOST_AUTO_TEST_CASE(a_claim_takes_no_more_places_than_the_window_leaves) {
  provider->hold(true);
  start_sms(2);
  claim({plan("order-1", {"sms"}), plan("order-2", {"sms"}), plan("order-3", {"sms"})});
  // Two taken in the claim and called; the third was inserted PENDING and waits its turn.
  BOOST_TEST(provider->held() == 2u);
  BOOST_TEST(sending_changes() == 0u);
  BOOST_TEST(tasks_in(task_state::sending) == 2u);
  BOOST_TEST(tasks_in(task_state::pending) == 1u);
  provider->release();
  run();
  BOOST_TEST(provider->held() == 1u); // taken from the lane as ever: committed SENDING first
  BOOST_TEST(sending_changes() == 1u);
  provider->release();
  run();
  BOOST_TEST(tasks_in(task_state::sent) == 3u);
  BOOST_TEST(provider->calls.size() == 3u);
}

BOOST_AUTO_TEST_CASE(scheduled_and_duplicate_tasks_take_no_place_and_the_places_come_back) {
  start_sms(1);
  auto later = plan("order-later", {"sms"});
  later.message.send_at = clock->now() + std::chrono::hours{1};
  const auto first = plan("order-1", {"sms"});
  claim({later, first, first});
  BOOST_TEST((task(id_of(later)).state == task_state::pending)); // waits for its time
  BOOST_TEST((task(id_of(first)).state == task_state::sent));
  BOOST_TEST(provider->calls.size() == 1u);
  claim({first}); // a resubmission: found, not sent again
  BOOST_TEST(provider->calls.size() == 1u);
  // With a window of one, a place left unused and not given back would stop the channel.
  const auto next = plan("order-2", {"sms"});
  claim({next});
  BOOST_TEST((task(id_of(next)).state == task_state::sent));
  BOOST_TEST(provider->calls.size() == 2u);
  BOOST_TEST(sending_changes() == 0u);
}

BOOST_AUTO_TEST_CASE(a_failed_claim_gives_every_place_back) {
  const auto seen = record_hand_overs();
  places.at("sms")->offer(5);
  faulty_store->script(1, persistence::faulty_task_store::fault::fail);
  claim({plan("order-1", {"sms"}), plan("order-2", {"sms"})});
  BOOST_TEST(unfinished().empty()); // nothing committed
  BOOST_REQUIRE_EQUAL(seen->taken.size(), 1u);
  BOOST_TEST(seen->taken[0].channel == "sms");
  BOOST_TEST(seen->taken[0].calls.empty());
  BOOST_TEST(seen->taken[0].unused == 2u);
  BOOST_TEST(places.at("sms")->offer(0) == 2u); // the two the claim took
  // Committed: each task taken, with its take token and lease, and no place unused.
  places.at("sms")->offer(5);
  const auto message = plan("order-3", {"sms"});
  claim({message});
  BOOST_REQUIRE_EQUAL(seen->taken.size(), 2u);
  BOOST_REQUIRE_EQUAL(seen->taken[1].calls.size(), 1u);
  const auto& call = seen->taken[1].calls[0];
  BOOST_TEST(call.task.task_id == id_of(message));
  BOOST_TEST((call.task.state == task_state::pending)); // as the channel sends a fresh task
  BOOST_TEST(call.take_token.find(id_of(message)) != std::string::npos);
  BOOST_TEST((call.lease_until == clock->now() + std::chrono::seconds{60}));
  BOOST_TEST(seen->taken[1].unused == 0u);
  BOOST_TEST(seen->dispatched.empty()); // nothing else to send
  BOOST_TEST((task(id_of(message)).state == task_state::sending));
}

// The claim committed but its answer was lost: the tasks it inserted taken are never called by
// this take, so they go back as retries due now rather than wait out their lease in doubt.
BOOST_AUTO_TEST_CASE(a_claim_whose_answer_was_lost_releases_what_it_took) {
  const auto seen = record_hand_overs();
  places.at("sms")->offer(5);
  faulty_store->script(1, persistence::faulty_task_store::fault::lose_answer);
  const auto message = plan("order-1", {"sms"});
  claim({message});
  const auto row = task(id_of(message));
  BOOST_TEST((row.state == task_state::retry_wait));
  BOOST_TEST(row.attempts == 0u);
  BOOST_TEST(row.last_error == "taken in a claim whose answer was lost: not sent");
  BOOST_REQUIRE_EQUAL(seen->taken.size(), 1u);
  BOOST_TEST(seen->taken[0].calls.empty());
  BOOST_TEST(seen->taken[0].unused == 1u);
  // Due now: whoever reads it next sends it as a plain retry, not as a call in doubt.
  const auto due = unfinished();
  BOOST_REQUIRE_EQUAL(due.size(), 1u);
  BOOST_TEST((due[0].state == task_state::retry_wait));
}

// A restarted channel holds the places in an epoch of its own: what the writer took from its
// predecessor's offer is still called here, but not counted against the new window.
BOOST_AUTO_TEST_CASE(places_taken_from_a_predecessor_are_called_but_not_counted) {
  const auto& shared = places.at("sms");
  const auto before = shared->begin_epoch(); // the predecessor's
  shared->offer(1);
  const auto taken = shared->take(1);
  BOOST_TEST(taken.places == 1u);
  BOOST_TEST(taken.epoch == before);
  start_sms(1); // its successor, with a window of one
  auto stale = plan("order-old", {"sms"});
  // The predecessor's place, used by a claim whose word arrives now.
  persistence::claim_takes takes;
  takes.now = clock->now();
  takes.token_prefix = "claim-old-";
  takes.by_channel["sms"] = {1, "node-a/0000000000000001", clock->now() + std::chrono::seconds{60}};
  const auto results = db->claim({stale}, takes);
  BOOST_REQUIRE(results.at(0).tasks.at(0).take_token.has_value());
  auto delivery = domain::make_delivery(results[0].message, stale.tasks[0]);
  caf::anon_send(dispatcher, actors::taken_atom_v,
                 actors::taken_in_claim{"sms",
                                        {{delivery, *results[0].tasks[0].take_token,
                                          clock->now() + std::chrono::seconds{60}}},
                                        0,
                                        before});
  run();
  BOOST_TEST((task(id_of(stale)).state == task_state::sent)); // called
  // The successor's own window is whole: a new claim is taken in its place and sent.
  const auto fresh = plan("order-new", {"sms"});
  claim({fresh});
  BOOST_TEST((task(id_of(fresh)).state == task_state::sent));
  BOOST_TEST(sending_changes() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
