#include "actor_fixture.hpp"
#include "actors/retry_timer.hpp"
#include "recording_dispatcher.hpp"

#include <boost/test/unit_test.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

using namespace herald;
using namespace std::chrono_literals;

namespace {

/// What the timer hands out, in order, and how the dispatcher answers. Stands on the
/// dispatcher's side of the interface.
using test::handed_out;
using test::recording_dispatcher;

struct timer_fixture : test::actor_fixture {
  std::shared_ptr<handed_out> out = std::make_shared<handed_out>();
  actors::retry_timer_actor timer = spawn_timer({});

  actors::retry_timer_actor spawn_timer(actors::retry_timer_config config) {
    return spawn(actors::retry_timer, spawn(recording_dispatcher, out), metrics,
                 std::shared_ptr<const domain::clock>{clock}, config);
  }

  domain::delivery due_in(const std::string& id, std::chrono::milliseconds delay) {
    domain::delivery d;
    d.task_id = id;
    d.channel = "sms";
    d.state = domain::task_state::retry_wait;
    d.next_attempt_at = clock->now() + delay;
    return d;
  }

  void schedule(actors::deliveries tasks) {
    caf::anon_send(timer, actors::schedule_atom_v, std::move(tasks));
    run();
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(retry_timer_tests, timer_fixture)

BOOST_AUTO_TEST_CASE(tasks_are_handed_out_when_due_in_due_order) {
  schedule({due_in("c", 3000ms), due_in("a", 1000ms), due_in("b", 2000ms)});
  BOOST_TEST(out->task_ids.empty());
  BOOST_TEST(metrics->render().find("herald_retry_queue_depth 3") != std::string::npos);
  advance_both(999ms);
  BOOST_TEST(out->task_ids.empty());
  advance_both(1ms);
  BOOST_TEST(out->task_ids == std::vector<std::string>{"a"});
  advance_both(2000ms);
  BOOST_TEST((out->task_ids == std::vector<std::string>{"a", "b", "c"}));
  BOOST_TEST(metrics->render().find("herald_retry_queue_depth 0") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_rescheduled_task_is_held_once_at_its_new_time) {
  schedule({due_in("a", 5000ms)});
  schedule({due_in("a", 1000ms)}); // earlier: the timer re-arms; the old timer does nothing
  advance_both(1000ms);
  BOOST_TEST(out->task_ids == std::vector<std::string>{"a"});
  advance_both(10000ms);
  BOOST_TEST(out->task_ids.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_cancelled_task_is_never_handed_out) {
  schedule({due_in("a", 1000ms), due_in("b", 1000ms)});
  caf::anon_send(timer, actors::cancel_atom_v, std::string{"a"});
  run();
  advance_both(2000ms);
  BOOST_TEST(out->task_ids == std::vector<std::string>{"b"});
}

BOOST_AUTO_TEST_CASE(a_task_already_due_is_handed_out_at_once) {
  schedule({due_in("now", 0ms)});
  BOOST_TEST(out->task_ids == std::vector<std::string>{"now"});
}

// A bounded timer keeps the earliest-due tasks and lets the latest go: the database still holds
// them, and the sweep brings them back before they are due.
BOOST_AUTO_TEST_CASE(a_full_timer_lets_the_latest_due_tasks_go) {
  actors::retry_timer_config config;
  config.max_held = 2;
  timer = spawn_timer(config);
  schedule({due_in("c", 3000ms), due_in("a", 1000ms), due_in("b", 2000ms)});
  BOOST_TEST(metrics->render().find("herald_retry_queue_depth 2") != std::string::npos);
  BOOST_TEST(logs().find("retry_timer.full") != std::string::npos);
  advance_both(5000ms);
  BOOST_TEST((out->task_ids == std::vector<std::string>{"a", "b"}));
}

// A million retries due at once are not read at once: the timer hands out a batch of ids, and
// the next only once the dispatcher answered and the channels had the time it named to send it.
BOOST_AUTO_TEST_CASE(a_large_due_backlog_is_handed_out_a_paced_batch_at_a_time) {
  actors::retry_timer_config config;
  config.hand_out_batch = 2;
  timer = spawn_timer(config);
  out->pause = std::chrono::milliseconds{100};
  schedule({due_in("a", 1000ms), due_in("b", 1000ms), due_in("c", 1000ms), due_in("d", 1000ms),
            due_in("e", 1000ms)});
  advance_both(1000ms);
  BOOST_TEST(out->batches == std::vector<std::size_t>{2});
  advance_both(99ms);
  BOOST_TEST(out->batches.size() == 1u); // the channels are still sending the first batch
  advance_both(1ms);
  BOOST_TEST((out->batches == std::vector<std::size_t>{2, 2}));
  advance_both(100ms);
  BOOST_TEST((out->batches == std::vector<std::size_t>{2, 2, 1}));
  BOOST_TEST((out->task_ids == std::vector<std::string>{"a", "b", "c", "d", "e"}));
  BOOST_TEST(metrics->render().find("herald_retry_queue_depth 0") != std::string::npos);
}

// The database still holds a batch the dispatcher could not read, due: the sweep reads it. The
// timer goes on with the rest.
BOOST_AUTO_TEST_CASE(a_batch_the_dispatcher_cannot_read_is_left_to_the_sweep) {
  actors::retry_timer_config config;
  config.hand_out_batch = 1;
  timer = spawn_timer(config);
  out->fail = true;
  schedule({due_in("a", 1000ms), due_in("b", 2000ms)});
  advance_both(1000ms);
  BOOST_TEST(out->task_ids == std::vector<std::string>{"a"});
  BOOST_TEST(logs().find("retry_timer.hand_out_failed") != std::string::npos);
  advance_both(1000ms);
  BOOST_TEST((out->task_ids == std::vector<std::string>{"a", "b"}));
  advance_both(5000ms);
  BOOST_TEST(out->task_ids.size() == 2u); // handed out once each: not retried by the timer
}

BOOST_AUTO_TEST_SUITE_END()
