// The events actor (docs/events.md) on the deterministic coordinator, posting for real to a
// local HTTP receiver: each answer is handed over on the test thread, so what the actor does
// next depends only on the test.

#include "actor_fixture.hpp"
#include "actors/events_actor.hpp"
#include "domain/status_event.hpp"
#include "providers/webhook_signature.hpp"
#include "support/herald_server.hpp"
#include "support/test_http_server.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>

#include <boost/json.hpp>

using namespace herald;
using namespace herald::test;
using domain::task_state;
namespace json = boost::json;

namespace {

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr std::int64_t fixed_now = 1614265330;

/// Posts through a real signed_poster, but keeps each answer until deliver() calls it on the
/// test thread (the coordinator is single-threaded).
class handed_over_poster {
public:
  explicit handed_over_poster(const std::string& url)
      : poster_({url, *providers::decode_webhook_secret(secret), std::chrono::seconds{5}, 8,
                 "herald-events/1"},
                [] { return fixed_now; }) {}

  actors::event_poster function() {
    return [this](providers::signed_post post, providers::post_callback done) {
      poster_.post(std::move(post), [this, done = std::move(done)](providers::post_answer a) {
        {
          std::lock_guard<std::mutex> guard{mutex_};
          answers_.emplace_back(done, std::move(a));
        }
        arrived_.notify_all();
      });
    };
  }

  /// Waits (bounded) for `count` answers and calls them here; false if they did not come.
  bool deliver(std::size_t count) {
    std::deque<std::pair<providers::post_callback, providers::post_answer>> ready;
    {
      std::unique_lock<std::mutex> lock{mutex_};
      if (!arrived_.wait_for(lock, std::chrono::seconds{10},
                             [&] { return answers_.size() >= count; }))
        return false;
      for (std::size_t i = 0; i < count; ++i) {
        ready.push_back(std::move(answers_.front()));
        answers_.pop_front();
      }
    }
    for (auto& [done, answer] : ready)
      done(std::move(answer));
    return true;
  }

private:
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<std::pair<providers::post_callback, providers::post_answer>> answers_;
  providers::signed_poster poster_; // last: stopped first, while answers_ still exists
};

struct events_fixture : actor_fixture {
  std::atomic<int> failures_left{0}; ///< the receiver answers 503 this many times first
  test_server receiver{[this](const recorded_request&) {
    if (failures_left.fetch_sub(1) > 0)
      return reply{503, {}, "down"};
    return reply{200, {}, "ok"};
  }};
  handed_over_poster poster{receiver.url("/events")};
  /// Writes state changes with every event type enabled, as the node's store writer does.
  std::unique_ptr<persistence::task_store> writer = persistence::open_task_store(
      url, false, persistence::store_options::writing_events(domain::event_states_for({})));
  std::shared_ptr<persistence::task_store> events_store = persistence::open_task_store(url, false);

  actors::events_actor_config config() {
    actors::events_actor_config c;
    c.retry.schedule = {std::chrono::seconds{1}, std::chrono::seconds{2}};
    c.retry.jitter = 0;
    c.retry.max_attempts = 3;
    c.poll_interval = std::chrono::seconds{1};
    c.max_in_flight = 2;
    c.owner = "node-1/0000000000000001";
    c.claim = std::chrono::seconds{10};
    return c;
  }

  /// An events actor on `store` (the node's connection), owning the partitions of `share`
  /// (null: every one).
  actors::events_actor spawn_events(actors::events_actor_config c,
                                    std::shared_ptr<persistence::task_store> store = nullptr,
                                    std::shared_ptr<const actors::cluster_share> share = nullptr) {
    auto handle = spawn(actors::events, store ? store : events_store, poster.function(), metrics,
                        std::shared_ptr<const domain::clock>{clock}, std::move(share), c);
    run();
    return handle;
  }

  void change(const std::string& task, task_state from, task_state to) {
    persistence::state_change c;
    c.task_id = task;
    c.from = from;
    c.to = to;
    c.at = clock->now();
    BOOST_REQUIRE_EQUAL(writer->apply({c}, {}).size(), 1u);
  }

  /// Hands `count` answers over and lets the actor act on them.
  void answer(std::size_t count) {
    BOOST_REQUIRE(poster.deliver(count));
    run();
  }

  std::vector<std::string> posted_ids() {
    std::vector<std::string> ids;
    for (const auto& r : receiver.requests())
      ids.push_back(r.header("webhook-id"));
    return ids;
  }

  double delivered(const std::string& outcome) {
    return metric_sum(metrics->render(), "herald_events_delivered_total",
                      {"outcome=\"" + outcome + "\""});
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(events_actor_tests, events_fixture)

BOOST_AUTO_TEST_CASE(posts_signed_events_and_marks_them_delivered) {
  auto ids = seed({plan("order-1", {"sms"})});
  change(ids[0], task_state::pending, task_state::sent);
  spawn_events(config());
  BOOST_REQUIRE(receiver.wait_for_requests(1));
  answer(1);

  auto requests = receiver.requests();
  BOOST_REQUIRE_EQUAL(requests.size(), 1u);
  const auto& r = requests[0];
  const auto event_id = domain::event_id_for(ids[0], task_state::sent);
  BOOST_TEST(r.method == "POST");
  BOOST_TEST(r.target == "/events");
  BOOST_TEST(r.header("webhook-id") == event_id);
  BOOST_TEST(r.header("webhook-timestamp") == std::to_string(fixed_now));
  BOOST_TEST(r.header("webhook-signature") ==
             providers::sign_webhook(*providers::decode_webhook_secret(secret), event_id, fixed_now,
                                     r.body));
  auto body = json::parse(r.body).as_object();
  BOOST_TEST(body.at("type").as_string() == "task.sent");
  const auto& data = body.at("data").as_object();
  BOOST_TEST(data.at("event_id").as_string() == event_id);
  BOOST_TEST(data.at("task_id").as_string() == ids[0]);
  BOOST_TEST(data.at("state").as_string() == "SENT");
  BOOST_TEST(data.at("channel").as_string() == "sms");
  BOOST_TEST(data.at("biz_id").as_string() == "order-1");
  BOOST_TEST(data.at("user_id").as_string() == "u-1");
  BOOST_TEST(data.at("occurred_at").as_string() == domain::format_rfc3339(clock->now()));
  BOOST_TEST(events_store->count_pending_events() == 0u);
  BOOST_TEST(delivered("delivered") == 1.0);

  // Nothing more to post: the next polls send nothing.
  advance_both(std::chrono::seconds{5});
  BOOST_TEST(receiver.requests().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_tasks_events_go_out_one_after_another_within_the_bound) {
  auto ids = seed({plan("order-1", {"sms"}), plan("order-2", {"sms"}), plan("order-3", {"sms"})});
  change(ids[0], task_state::pending, task_state::sent);
  change(ids[0], task_state::sent, task_state::delivered);
  change(ids[1], task_state::pending, task_state::sent);
  change(ids[2], task_state::pending, task_state::dead);
  spawn_events(config()); // at most 2 in flight

  BOOST_REQUIRE(receiver.wait_for_requests(2));
  BOOST_TEST(posted_ids() ==
                 (std::vector<std::string>{domain::event_id_for(ids[0], task_state::sent),
                                           domain::event_id_for(ids[1], task_state::sent)}),
             boost::test_tools::per_element());
  answer(2); // both delivered: room for order-1's DELIVERED and order-3's DEAD
  BOOST_REQUIRE(receiver.wait_for_requests(4));
  auto later = posted_ids();
  std::sort(later.begin() + 2, later.end());
  auto expected = std::vector<std::string>{domain::event_id_for(ids[0], task_state::delivered),
                                           domain::event_id_for(ids[2], task_state::dead)};
  std::sort(expected.begin(), expected.end());
  BOOST_TEST(std::vector<std::string>(later.begin() + 2, later.end()) == expected,
             boost::test_tools::per_element());
  answer(2);
  BOOST_TEST(events_store->count_pending_events() == 0u);
  BOOST_TEST(delivered("delivered") == 4.0);
}

BOOST_AUTO_TEST_CASE(a_failed_post_is_retried_by_the_schedule_with_the_same_id) {
  failures_left = 1;
  auto ids = seed({plan("order-1", {"sms"})});
  change(ids[0], task_state::pending, task_state::sent);
  change(ids[0], task_state::sent, task_state::read);
  spawn_events(config());
  BOOST_REQUIRE(receiver.wait_for_requests(1));
  answer(1); // 503: again in 1 s
  BOOST_TEST(delivered("retry") == 1.0);
  advance_both(std::chrono::milliseconds{900});
  BOOST_TEST(receiver.requests().size() == 1u); // not due yet, and the task's READ waits
  advance_both(std::chrono::milliseconds{100});
  BOOST_REQUIRE(receiver.wait_for_requests(2));
  answer(1); // delivered; READ may go now
  BOOST_REQUIRE(receiver.wait_for_requests(3));
  answer(1);
  const auto sent = domain::event_id_for(ids[0], task_state::sent);
  BOOST_TEST(posted_ids() == (std::vector<std::string>{
                                 sent, sent, domain::event_id_for(ids[0], task_state::read)}),
             boost::test_tools::per_element());
  BOOST_TEST(delivered("delivered") == 2.0);
  BOOST_TEST(events_store->count_pending_events() == 0u);
}

BOOST_AUTO_TEST_CASE(an_event_is_dead_after_its_attempts_and_lets_the_next_go) {
  failures_left = 3;
  auto ids = seed({plan("order-1", {"sms"})});
  change(ids[0], task_state::pending, task_state::sent);
  change(ids[0], task_state::sent, task_state::delivered);
  spawn_events(config()); // 3 attempts: at 0 s, 1 s, 1 + 2 s
  BOOST_REQUIRE(receiver.wait_for_requests(1));
  answer(1);
  advance_both(std::chrono::seconds{1});
  BOOST_REQUIRE(receiver.wait_for_requests(2));
  answer(1);
  advance_both(std::chrono::seconds{1});
  BOOST_TEST(receiver.requests().size() == 2u);
  advance_both(std::chrono::seconds{1});
  BOOST_REQUIRE(receiver.wait_for_requests(3));
  answer(1); // third failure: DEAD, which lets the task's DELIVERED go at the next probe
  BOOST_TEST(delivered("dead") == 1.0);
  BOOST_TEST(delivered("retry") == 2.0);
  BOOST_TEST(receiver.requests().size() == 3u);
  advance_both(std::chrono::seconds{1});
  BOOST_REQUIRE(receiver.wait_for_requests(4));
  answer(1);
  BOOST_TEST(posted_ids().back() == domain::event_id_for(ids[0], task_state::delivered));
  BOOST_TEST(events_store->count_pending_events() == 0u);
  BOOST_TEST(logs().find("events.dead") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_unexpected_message_is_logged_by_its_atom_not_its_content) {
  auto handle = spawn_events(config());
  self->send(caf::actor_cast<caf::actor>(handle), actors::tick_atom_v, 1,
             std::string{"to +8613812345678, alice@example.com: your code is 4711"});
  run();
  const auto lines = logs();
  BOOST_TEST(lines.find("actor.unexpected_message") != std::string::npos, lines);
  BOOST_TEST(lines.find("\"atom\":\"tick\"") != std::string::npos, lines);
  for (const char* clear : {"8613812", "alice", "your code"})
    BOOST_TEST(lines.find(clear) == std::string::npos, clear);
}

BOOST_AUTO_TEST_CASE(a_failing_receiver_is_probed_with_one_event_per_interval) {
  failures_left = 2;
  auto ids = seed({plan("order-1", {"sms"}), plan("order-2", {"sms"}), plan("order-3", {"sms"})});
  for (const auto& id : ids)
    change(id, task_state::pending, task_state::sent);
  spawn_events(config()); // 2 in flight: both fail
  BOOST_REQUIRE(receiver.wait_for_requests(2));
  answer(2);
  BOOST_TEST(receiver.requests().size() == 2u); // order-3's event waits, due as it is

  advance_both(std::chrono::seconds{1}); // one probe: the lowest due event, order-1's
  BOOST_REQUIRE(receiver.wait_for_requests(3));
  BOOST_TEST(posted_ids().back() == domain::event_id_for(ids[0], task_state::sent));
  answer(1); // it succeeds: full speed again, the other two at once
  BOOST_REQUIRE(receiver.wait_for_requests(5));
  answer(2);
  BOOST_TEST(events_store->count_pending_events() == 0u);
  BOOST_TEST(delivered("retry") == 2.0);
  BOOST_TEST(delivered("delivered") == 3.0);
}

BOOST_AUTO_TEST_CASE(an_answer_lost_with_the_actor_is_posted_again_under_the_same_id) {
  auto ids = seed({plan("order-1", {"sms"})});
  change(ids[0], task_state::pending, task_state::sent);
  auto first = spawn_events(config());
  BOOST_REQUIRE(receiver.wait_for_requests(1));
  caf::anon_send_exit(first, caf::exit_reason::kill); // dies before the answer is written
  run();
  answer(1); // reaches nobody
  BOOST_TEST(events_store->count_pending_events() == 1u);

  spawn_events(config()); // as the supervisor restarts it
  advance_both(std::chrono::seconds{5});
  BOOST_TEST(receiver.requests().size() == 1u); // still claimed by the dead actor's post
  advance_both(std::chrono::seconds{5});        // the claim runs out
  BOOST_REQUIRE(receiver.wait_for_requests(2));
  answer(1);
  const auto id = domain::event_id_for(ids[0], task_state::sent);
  BOOST_TEST(posted_ids() == (std::vector<std::string>{id, id}), boost::test_tools::per_element());
  BOOST_TEST(events_store->count_pending_events() == 0u);
}

// Two nodes that both believe they own every partition (a view changing) still post each
// event once: the first to claim it holds it; a node owning no partition posts nothing.
BOOST_AUTO_TEST_CASE(each_event_is_posted_by_the_one_node_that_claimed_it) {
  std::vector<domain::message_plan> plans;
  for (int i = 0; i < 6; ++i)
    plans.push_back(plan("order-" + std::to_string(i), {"sms"}));
  auto ids = seed(plans);
  for (const auto& id : ids)
    change(id, task_state::pending, task_state::sent);
  auto none = std::make_shared<actors::cluster_share>();
  none->set_owned_partitions(actors::partition_list{});
  auto idle_config = config();
  idle_config.owner = "node-3/0000000000000003";
  spawn_events(idle_config, persistence::open_task_store(url, false), none);
  auto second_config = config();
  second_config.owner = "node-2/0000000000000002";
  spawn_events(config());
  spawn_events(second_config, persistence::open_task_store(url, false));

  BOOST_REQUIRE(receiver.wait_for_requests(4)); // two in flight on each
  answer(4);
  BOOST_REQUIRE(receiver.wait_for_requests(6));
  answer(2);
  advance_both(std::chrono::seconds{30}); // claims long run out: nothing is left to post
  auto posted = posted_ids();
  std::sort(posted.begin(), posted.end());
  std::vector<std::string> expected;
  for (const auto& id : ids)
    expected.push_back(domain::event_id_for(id, task_state::sent));
  std::sort(expected.begin(), expected.end());
  BOOST_TEST(posted == expected, boost::test_tools::per_element());
  BOOST_TEST(events_store->count_pending_events() == 0u);
}

// A post that waits for its answer longer than the claim keeps its event: the claim is
// extended at every poll, so another node does not post it meanwhile.
BOOST_AUTO_TEST_CASE(an_event_whose_post_runs_long_is_not_taken_over) {
  auto ids = seed({plan("order-1", {"sms"})});
  change(ids[0], task_state::pending, task_state::sent);
  spawn_events(config());
  BOOST_REQUIRE(receiver.wait_for_requests(1));
  auto other = config();
  other.owner = "node-2/0000000000000002";
  spawn_events(other, persistence::open_task_store(url, false));
  for (int second = 0; second < 30; ++second) // three claims long, a poll at a time; the
    advance_both(std::chrono::seconds{1});    // answer is still held back
  BOOST_TEST(receiver.requests().size() == 1u);
  answer(1);
  advance_both(std::chrono::seconds{30});
  BOOST_TEST(receiver.requests().size() == 1u);
  BOOST_TEST(events_store->count_pending_events() == 0u);
}

// The partitions are read afresh for every claim: a node posts what it owns now.
BOOST_AUTO_TEST_CASE(only_events_of_owned_partitions_are_posted) {
  const std::vector<domain::message_plan> plans{plan("order-1", {"sms"}), plan("order-2", {"sms"})};
  auto ids = seed(plans);
  change(ids[0], task_state::pending, task_state::sent);
  change(ids[1], task_state::pending, task_state::sent);
  const auto first = *domain::partition_of(plans[0].message.id);
  const auto second = *domain::partition_of(plans[1].message.id);
  BOOST_REQUIRE(first != second);
  auto share = std::make_shared<actors::cluster_share>();
  share->set_owned_partitions(actors::partition_list{first});
  spawn_events(config(), nullptr, share);
  BOOST_REQUIRE(receiver.wait_for_requests(1));
  answer(1);
  BOOST_TEST(posted_ids() ==
                 (std::vector<std::string>{domain::event_id_for(ids[0], task_state::sent)}),
             boost::test_tools::per_element());

  share->set_owned_partitions(actors::partition_list{second}); // the cluster changed
  advance_both(std::chrono::seconds{1});
  BOOST_REQUIRE(receiver.wait_for_requests(2));
  answer(1);
  BOOST_TEST(posted_ids().back() == domain::event_id_for(ids[1], task_state::sent));
  BOOST_TEST(events_store->count_pending_events() == 0u);
}

BOOST_AUTO_TEST_CASE(config_is_checked) {
  actors::events_actor_config c;
  BOOST_TEST(c.validate().empty());
  c.max_in_flight = 0;
  BOOST_TEST(!c.validate().empty());
  c = {};
  c.retry.max_attempts = 0;
  BOOST_TEST(!c.validate().empty());
  c = {};
  c.claim = std::chrono::milliseconds{0};
  BOOST_TEST(!c.validate().empty());
}

BOOST_AUTO_TEST_SUITE_END()
