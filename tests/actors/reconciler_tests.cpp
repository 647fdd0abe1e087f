// The reconciler settles SENT tasks whose receipt window passed: it asks the provider where it
// can (within the channel's rate, a bounded number at a time) and records what it says, marks
// the rest UNCONFIRMED, applies receipts that came before the SENT commit, and fails an
// UNDELIVERED over — all read from and written to the database, so a restart loses nothing.

#include "actor_fixture.hpp"
#include "actors/reconciler.hpp"
#include "recording_provider.hpp"

#include <set>

#include <boost/test/unit_test.hpp>
#include <caf/send.hpp>

using namespace herald;
using domain::task_state;
using persistence::faulty_task_store;
using providers::provider_status;
using test::recording_provider;

namespace {

constexpr auto window = std::chrono::milliseconds{60000};
constexpr auto interval = std::chrono::milliseconds{10000};

struct reconciler_fixture : test::actor_fixture {
  std::shared_ptr<recording_provider> sms = std::make_shared<recording_provider>();
  std::shared_ptr<recording_provider> email = std::make_shared<recording_provider>();
  actors::store_writer_actor writer = spawn_writer(failing_over());
  actors::store_reader_actor reader = spawn_reader();
  actors::dispatcher_actor dispatcher; ///< with the email channel: fallback tasks go there
  actors::reconciler_config config;

  reconciler_fixture() {
    sms->answers_status = true;
    config.interval = interval;
    config.batch = 100;
    actors::channel_settings email_settings;
    email_settings.name = "email";
    dispatcher = spawn_dispatch_node({{email_settings, email}}, writer, reader).dispatcher;
  }

  ~reconciler_fixture() {
    sms->drop_held();
    email->drop_held();
  }

  static actors::store_writer_config failing_over() {
    actors::store_writer_config c;
    c.fallbacks.fallback_of = {{"sms", "email"}};
    return c;
  }

  static actors::channel_settings sms_settings() {
    actors::channel_settings s;
    s.name = "sms";
    s.rate_per_sec = 1000;
    s.burst = 1000;
    s.receipt_window = window;
    s.fallback = "email";
    s.questions = domain::retry_policy{{std::chrono::milliseconds{20000}}, 0.0, 2};
    return s;
  }

  actors::reconciler_actor
  spawn_reconciler(actors::channel_settings s = sms_settings(),
                   std::shared_ptr<const actors::cluster_share> share = {}) {
    std::vector<actors::reconciled_channel> channels{{s, sms}};
    actors::channel_settings no_receipts;
    no_receipts.name = "push"; // receipt_window 0: SENT is final, never read
    channels.push_back({no_receipts, sms});
    auto handle = spawn(actors::reconciler, channels,
                        actors::reconciler_peers{writer, reader, metrics,
                                                 std::shared_ptr<const domain::clock>{clock},
                                                 std::move(share)},
                        config);
    run(); // starts it: its first pass is one interval from now
    return handle;
  }

  /// n sms tasks SENT now (each with an email address to fail over to); their task ids.
  std::vector<std::string> sent_sms(int n, const std::string& prefix = "order-") {
    std::vector<domain::message_plan> plans;
    for (int i = 0; i < n; ++i) {
      plans.push_back(plan(prefix + std::to_string(i), {"sms"}));
      plans.back().message.recipients["email"] = "u-1@example.com";
    }
    auto ids = seed(plans);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      request_id[ids[i]] = plans[i].tasks[0].provider_request_id;
      partition[ids[i]] = *domain::partition_of(plans[i].message.id);
      move_task(ids[i], task_state::pending, task_state::sending);
      move_task(ids[i], task_state::sending, task_state::sent, 1);
    }
    return ids;
  }

  std::string state(const std::string& task_id) {
    return std::string{to_string(task(task_id).state)};
  }

  std::string metric_line(const std::string& name) {
    const auto text = metrics->render();
    const auto at = text.find(name + " ");
    return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at);
  }

  std::string reconciled(const std::string& outcome) {
    const auto name = "herald_reconciled_total{channel=\"sms\",outcome=\"" + outcome + "\"}";
    const auto line = metric_line(name);
    return line.empty() ? "0" : line.substr(name.size() + 1);
  }

  std::size_t reads_of(const std::string& channel) const {
    return static_cast<std::size_t>(std::count(reader_store->awaiting_reads.begin(),
                                               reader_store->awaiting_reads.end(), channel));
  }

  std::map<std::string, std::string> request_id;      ///< task id -> provider request id
  std::map<std::string, domain::partition> partition; ///< task id -> its partition
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(reconciler_tests, reconciler_fixture)

BOOST_AUTO_TEST_CASE(tasks_past_the_window_are_settled_by_what_the_provider_says) {
  auto ids = sent_sms(6);
  sms->answer_status_for(request_id[ids[0]], recording_provider::found(provider_status::delivered));
  sms->answer_status_for(request_id[ids[1]], recording_provider::found(provider_status::read));
  sms->answer_status_for(request_id[ids[2]], recording_provider::found(provider_status::accepted));
  sms->answer_status_for(request_id[ids[3]], recording_provider::not_found());
  sms->answer_status_for(request_id[ids[4]], recording_provider::unknown());
  sms->answer_status_for(request_id[ids[5]],
                         recording_provider::found(provider_status::undelivered));
  spawn_reconciler();
  for (int i = 0; i < 5; ++i) // within the window: read, but nothing is due yet
    advance_both(interval);
  BOOST_TEST(sms->queries.empty());
  BOOST_TEST(tasks_in(task_state::sent) == 6u);
  BOOST_TEST(reads_of("sms") == 5u);
  BOOST_TEST(reads_of("push") == 0u); // no receipt window: SENT is final there

  advance_both(interval + std::chrono::milliseconds{1});
  BOOST_TEST(sms->queries.size() == 6u);
  BOOST_TEST(state(ids[0]) == "DELIVERED");
  BOOST_TEST(state(ids[1]) == "READ");
  for (int i = 2; i < 4; ++i)
    BOOST_TEST(state(ids[i]) == "UNCONFIRMED", i);
  BOOST_TEST(task(ids[3]).last_error.find("does not know the message") != std::string::npos);
  BOOST_TEST(state(ids[4]) == "SENT"); // no answer settles nothing: asked again later
  BOOST_TEST(state(ids[5]) == "UNDELIVERED");
  // The UNDELIVERED failed over in its receipt's transaction, and the fallback task was sent.
  BOOST_REQUIRE_EQUAL(email->calls.size(), 1u);
  BOOST_TEST(email->calls[0].recipient == "u-1@example.com");
  BOOST_TEST(tasks_in(task_state::sent) == 2u); // the email task, and the one to ask again

  BOOST_REQUIRE_EQUAL(writer_store->receipts.size(), 3u);
  for (const auto& receipt : writer_store->receipts)
    BOOST_TEST((receipt.receipt.source == domain::receipt_source::query));
  BOOST_TEST(reconciled("delivered") == "1");
  BOOST_TEST(reconciled("read") == "1");
  BOOST_TEST(reconciled("undelivered") == "1");
  BOOST_TEST(reconciled("unconfirmed") == "2");

  advance_both(interval); // settled tasks are not asked again, nor one whose question is not due
  BOOST_TEST(sms->queries.size() == 6u);
  BOOST_TEST(reconciled("unconfirmed") == "2");
}

BOOST_AUTO_TEST_CASE(a_question_without_an_answer_is_asked_again_then_ends_unconfirmed) {
  auto ids = sent_sms(1);
  const auto became_sent = task(ids[0]).updated_at;
  sms->answer_status_for(request_id[ids[0]], recording_provider::unknown());
  spawn_reconciler();
  advance_both(window); // asked at the window's end: no answer
  BOOST_TEST(sms->queries.size() == 1u);
  BOOST_TEST(state(ids[0]) == "SENT");
  auto row = task(ids[0]);
  BOOST_TEST(row.status_questions == 1u);
  BOOST_TEST(row.last_error.find("status query without an answer") == 0u);
  BOOST_TEST((row.updated_at == became_sent)); // the noted question keeps the window's start
  BOOST_TEST(reconciled("unconfirmed") == "0");

  advance_both(interval); // the next question is due 20 s after the first
  BOOST_TEST(sms->queries.size() == 1u);
  advance_both(interval);
  BOOST_TEST(sms->queries.size() == 2u); // the second and last: no answer either
  row = task(ids[0]);
  BOOST_TEST(state(ids[0]) == "UNCONFIRMED");
  BOOST_TEST(row.status_questions == 2u);
  BOOST_TEST(row.last_error.find("2 status questions without an answer, the last allowed") !=
             std::string::npos);
  BOOST_TEST(reconciled("unconfirmed") == "1");
  BOOST_TEST(metric_line("herald_status_questions_unanswered_total{channel=\"sms\",then=\"asked_"
                         "again\"}") ==
             "herald_status_questions_unanswered_total{channel=\"sms\",then=\"asked_again\"} 1");
  BOOST_TEST(db->list_dead_letters("", {"sms"}, "", 10).size() == 1u);
}

// In a cluster each node reads only the SENT tasks of the partitions it owns (read afresh for
// every pass), so each task is asked about once, cluster-wide; every question is counted.
BOOST_AUTO_TEST_CASE(only_tasks_of_owned_partitions_are_asked_about_once_each) {
  auto ids = sent_sms(8);
  const auto owned_first = partition[ids[0]];
  auto share = std::make_shared<actors::cluster_share>();
  share->set_owned_partitions(actors::partition_list{owned_first});
  spawn_reconciler(sms_settings(), share);
  advance_both(window + interval);
  std::set<std::string> asked;
  for (const auto& q : sms->queries)
    asked.insert(q.task_id);
  for (const auto& id : ids)
    BOOST_TEST((asked.count(id) == 1) == (partition[id] == owned_first), id);
  BOOST_TEST(sms->queries.size() == asked.size());

  actors::partition_list all;
  for (std::size_t p = 0; p < domain::partition_count; ++p)
    all.push_back(static_cast<domain::partition>(p));
  share->set_owned_partitions(all); // the node took the other partitions over
  advance_both(interval);
  asked.clear();
  for (const auto& q : sms->queries)
    asked.insert(q.task_id);
  BOOST_TEST(asked.size() == ids.size());
  BOOST_TEST(sms->queries.size() == ids.size()); // none asked twice
  BOOST_TEST(metric_line("herald_status_queries_total{channel=\"sms\"}") ==
             "herald_status_queries_total{channel=\"sms\"} " + std::to_string(ids.size()));
}

BOOST_AUTO_TEST_CASE(a_channel_that_cannot_be_asked_marks_its_tasks_unconfirmed) {
  sms->answers_status = false;
  auto ids = sent_sms(3);
  spawn_reconciler();
  advance_both(window);
  advance_both(interval);
  for (const auto& id : ids)
    BOOST_TEST(state(id) == "UNCONFIRMED");
  BOOST_TEST(sms->queries.empty());
  BOOST_TEST(reconciled("unconfirmed") == "3");
  BOOST_TEST(task(ids[0]).last_error.find("cannot be asked") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_undelivered_receipt_that_came_before_the_sent_commit_is_applied) {
  auto message = plan("order-early", {"sms"});
  message.message.recipients["email"] = "u-1@example.com";
  auto id = seed({message}).at(0);
  move_task(id, task_state::pending, task_state::sending);
  persistence::receipt_input early;
  early.channel = "sms";
  early.provider_request_id = message.tasks[0].provider_request_id;
  early.receipt = {domain::receipt_status::undelivered, domain::receipt_source::callback,
                   clock->now(), clock->now(), "unreachable"};
  BOOST_REQUIRE((db->record_receipts({early}, {}, clock->now()).at(0).result ==
                 persistence::receipt_outcome::outcome::waiting));
  move_task(id, task_state::sending, task_state::sent, 1);
  BOOST_TEST(state(id) == "SENT"); // the SENT commit applies confirmations only
  spawn_reconciler();
  advance_both(window);
  advance_both(interval);
  BOOST_TEST(state(id) == "UNDELIVERED");
  BOOST_TEST(sms->queries.empty()); // its receipt settled it: nothing to ask
  BOOST_REQUIRE_EQUAL(writer_store->receipts.size(), 1u);
  BOOST_TEST((writer_store->receipts[0].receipt.source == domain::receipt_source::callback));
  BOOST_TEST(email->calls.size() == 1u);
  BOOST_TEST(reconciled("undelivered") == "1");
}

BOOST_AUTO_TEST_CASE(queries_are_bounded_in_flight_and_paced_by_the_channel_rate) {
  auto ids = sent_sms(10);
  auto s = sms_settings();
  s.rate_per_sec = 2;
  s.burst = 2;
  config.queries_in_flight = 3;
  sms->hold_status(true);
  spawn_reconciler(s);
  advance_both(window);                  // the pass at the window's end
  BOOST_TEST(sms->queries.size() == 2u); // the burst
  advance_both(std::chrono::milliseconds{500});
  BOOST_TEST(sms->queries.size() == 3u); // one more token
  advance_both(std::chrono::milliseconds{1000});
  BOOST_TEST(sms->queries.size() == 3u); // tokens, but three in flight already
  std::size_t most_held = 0;
  for (int step = 0; step < 40 && tasks_in(task_state::sent) > 0; ++step) {
    most_held = std::max(most_held, sms->held_status());
    sms->release_status();
    run();
    most_held = std::max(most_held, sms->held_status());
    advance_both(std::chrono::milliseconds{500});
  }
  BOOST_TEST(most_held <= 3u);
  BOOST_TEST(sms->queries.size() == 10u);
  BOOST_TEST(tasks_in(task_state::unconfirmed) == 10u); // it never sent them: not found
  BOOST_TEST(reconciled("unconfirmed") == "10");
}

BOOST_AUTO_TEST_CASE(full_pages_follow_each_other_within_one_pass) {
  sms->answers_status = false;
  sent_sms(7);
  config.batch = 3;
  spawn_reconciler();
  advance_both(window - interval);
  const auto before = reads_of("sms");
  advance_both(interval);
  BOOST_TEST(tasks_in(task_state::unconfirmed) == 7u);
  BOOST_TEST(reads_of("sms") - before == 3u); // 3 + 3 + 1
}

BOOST_AUTO_TEST_CASE(a_failed_write_leaves_its_tasks_to_the_next_pass) {
  auto ids = sent_sms(2);
  sms->answer_status_for(request_id[ids[0]], recording_provider::found(provider_status::clicked));
  spawn_reconciler();
  advance_both(window - interval);
  // The pass's receipt and its UNCONFIRMED change: their one commit, then each kind alone.
  for (std::size_t nth = 1; nth <= 3; ++nth)
    faulty_store->script(nth, faulty_task_store::fault::fail);
  advance_both(interval + std::chrono::milliseconds{1});
  BOOST_TEST(sms->queries.size() == 2u);
  BOOST_TEST(tasks_in(task_state::sent) == 2u);
  advance_both(interval); // asked again, written this time
  BOOST_TEST(sms->queries.size() == 4u);
  BOOST_TEST(state(ids[0]) == "CLICKED");
  BOOST_TEST(state(ids[1]) == "UNCONFIRMED");
  BOOST_TEST(reconciled("clicked") == "1");
  BOOST_TEST(reconciled("unconfirmed") == "1");
}

BOOST_AUTO_TEST_CASE(a_restarted_reconciler_finds_what_its_predecessor_left) {
  auto ids = sent_sms(3);
  sms->hold_status(true);
  auto first = spawn_reconciler();
  advance_both(window);
  advance_both(interval);
  BOOST_REQUIRE_EQUAL(sms->held_status(), 3u);
  caf::anon_send_exit(first, caf::exit_reason::kill); // dies with its questions out
  run();
  sms->drop_held();
  sms->hold_status(false);
  spawn_reconciler();
  advance_both(interval);
  BOOST_TEST(tasks_in(task_state::unconfirmed) == 3u);
  BOOST_TEST(sms->queries.size() == 6u);
}

BOOST_AUTO_TEST_SUITE_END()
