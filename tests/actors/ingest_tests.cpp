#include "actor_fixture.hpp"
#include "actors/dedup_shard.hpp"
#include "actors/dispatcher.hpp"
#include "actors/ingest.hpp"
#include "app/actor_service.hpp"
#include "persistence/connection.hpp"
#include "recording_provider.hpp"
#include "silent_writer.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include <boost/test/unit_test.hpp>
#include <soci/soci.h>

using namespace herald;
using domain::task_state;
using test::recording_provider;

namespace {

using submit_answer = std::variant<persistence::claim_result, api::service_error>;
using batch_answer = std::variant<actors::claim_results, api::service_error>;

/// The whole ingest path on the test thread: ingest -> two shards -> writer -> dispatcher ->
/// sms channel -> recording provider.
struct ingest_fixture : test::actor_fixture {
  std::shared_ptr<recording_provider> provider = std::make_shared<recording_provider>();
  actors::store_writer_actor writer = spawn_writer();
  actors::store_reader_actor reader = spawn_reader();
  actors::dispatcher_actor dispatcher = spawn_dispatcher();
  std::vector<actors::dedup_shard_actor> shards = {
      spawn(actors::dedup_shard, writer, metrics, actors::dedup_shard_config{}),
      spawn(actors::dedup_shard, writer, metrics, actors::dedup_shard_config{})};
  std::shared_ptr<health_board> health = std::make_shared<health_board>();

  actors::dispatcher_actor spawn_dispatcher() {
    actors::channel_spec spec;
    spec.settings.name = "sms";
    spec.provider = provider;
    return spawn_dispatch_node({spec}, writer, reader).dispatcher;
  }

  actors::ingest_actor spawn_ingest(actors::ingest_config config = {}) {
    BOOST_REQUIRE_EQUAL(config.validate(), "");
    return spawn(actors::ingest, shards,
                 actors::ingest_peers{writer, writer, reader, dispatcher,
                                      std::shared_ptr<const domain::clock>{clock}, health},
                 config);
  }

  /// What the HTTP layer talks to: ingest behind the service that asks it.
  app::actor_service& service_of(const actors::ingest_actor& ingest) {
    services.push_back(std::make_unique<app::actor_service>(
        sys, answer_timeout, ingest, actors::receipt_actor{}, domain::routing_rules{},
        domain::id_secret{}, nullptr, actors::template_registry_actor{}, nullptr,
        std::shared_ptr<const domain::clock>{clock}, app::node_cluster{}));
    return *services.back();
  }

  /// Submits a batch without running; the answer lands in `batch_answers`.
  void submit_batch(const actors::ingest_actor& ingest, actors::message_plans plans) {
    service_of(ingest).submit_batch(std::move(plans), [this](batch_answer answer) {
      batch_answers.push_back(std::move(answer));
    });
  }

  /// Submits without running; the answer lands in `answers` (called on the test thread).
  void submit(const actors::ingest_actor& ingest, domain::message_plan p) {
    service_of(ingest).submit(
        std::move(p), [this](submit_answer answer) { answers.push_back(std::move(answer)); });
  }

  /// Ingest with one shard in front of a database that never answers a claim.
  actors::ingest_actor spawn_ingest_before_a_hung_store(actors::ingest_config config,
                                                        actors::dedup_shard_config shard_config) {
    auto silent = spawn(test::silent_writer, held);
    writer_of_held = silent;
    std::vector<actors::dedup_shard_actor> one_shard{
        spawn(actors::dedup_shard, silent, metrics, shard_config)};
    return spawn(actors::ingest, one_shard,
                 actors::ingest_peers{silent, silent, reader, dispatcher,
                                      std::shared_ptr<const domain::clock>{clock}, health},
                 config);
  }

  /// Asks ingest whether the node is ready; the answer (ready, reason) once it came.
  std::optional<std::pair<bool, std::string>> readiness(const actors::ingest_actor& ingest) {
    std::optional<std::pair<bool, std::string>> probe;
    service_of(ingest).readiness(
        [&](bool ok, std::string why) { probe.emplace(ok, std::move(why)); });
    run();
    return probe;
  }

  const api::service_error* error_of(std::size_t answer) const {
    return std::get_if<api::service_error>(&answers.at(answer));
  }

  caf::timespan answer_timeout = std::chrono::seconds{20};
  std::vector<std::unique_ptr<app::actor_service>> services;
  std::vector<submit_answer> answers;
  std::vector<batch_answer> batch_answers;
  std::shared_ptr<test::held_claims> held = std::make_shared<test::held_claims>();
  actors::store_writer_actor writer_of_held; ///< the silent writer holding `held`
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(ingest_tests, ingest_fixture)

BOOST_AUTO_TEST_CASE(a_submission_is_answered_after_commit_and_sent) {
  auto ingest = spawn_ingest();
  auto message = plan("order-1", {"sms"});
  submit(ingest, message);
  run();
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  auto* result = std::get_if<persistence::claim_result>(&answers[0]);
  BOOST_REQUIRE(result != nullptr);
  BOOST_TEST(result->message_id == message.message.id);
  BOOST_REQUIRE_EQUAL(result->tasks.size(), 1u);
  BOOST_TEST(result->tasks[0].created);
  BOOST_TEST(provider->calls_for(message.tasks[0].id) == 1u);
  BOOST_TEST(tasks_in(task_state::sent) == 1u);
}

BOOST_AUTO_TEST_CASE(more_than_max_in_flight_is_refused_as_overloaded) {
  actors::ingest_config config;
  config.max_in_flight = 1;
  auto ingest = spawn_ingest(config);
  submit(ingest, plan("order-1", {"sms"}));
  submit(ingest, plan("order-2", {"sms"})); // arrives while the first waits for its commit
  run();
  BOOST_REQUIRE_EQUAL(answers.size(), 2u);
  // The refusal is immediate, so it is answered first.
  auto* refused = std::get_if<api::service_error>(&answers[0]);
  BOOST_REQUIRE(refused != nullptr);
  BOOST_TEST(refused->status == 503);
  BOOST_TEST(refused->code == "overloaded");
  BOOST_TEST(std::holds_alternative<persistence::claim_result>(answers[1]));
  BOOST_TEST(writer_store->claimed_plans == 1u); // the refused one never reached the store
  // Once the first is answered the slot is free again.
  submit(ingest, plan("order-3", {"sms"}));
  run();
  BOOST_REQUIRE_EQUAL(answers.size(), 3u);
  BOOST_TEST(std::holds_alternative<persistence::claim_result>(answers[2]));
}

BOOST_AUTO_TEST_CASE(a_store_failure_is_answered_as_unavailable) {
  auto ingest = spawn_ingest();
  {
    // Break the database under the writer: every claim now fails inside the store.
    auto sql = persistence::connect(url);
    *sql << "DROP TABLE attempts";
    *sql << "DROP TABLE tasks";
    *sql << "DROP TABLE messages";
  }
  submit(ingest, plan("order-1", {"sms"}));
  run();
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  auto* error = std::get_if<api::service_error>(&answers[0]);
  BOOST_REQUIRE(error != nullptr);
  BOOST_TEST(error->status == 503);
  BOOST_TEST(error->code == "unavailable");
  BOOST_TEST(writer_store->claim_batches == 1u);
  BOOST_TEST(provider->calls.empty());
}

BOOST_AUTO_TEST_CASE(ready_with_a_working_store_and_a_running_dispatcher) {
  auto ingest = spawn_ingest();
  auto probe = readiness(ingest);
  BOOST_REQUIRE(probe);
  BOOST_TEST(probe->first);
  BOOST_TEST(probe->second == "");
}

BOOST_AUTO_TEST_CASE(not_ready_without_a_dispatcher) {
  auto ingest = spawn_ingest();
  caf::anon_send_exit(dispatcher, caf::exit_reason::kill);
  run();
  auto probe = readiness(ingest);
  BOOST_REQUIRE(probe);
  BOOST_TEST(!probe->first);
  BOOST_TEST(probe->second.find("dispatcher") != std::string::npos, probe->second);
}

// A component the supervisor could not keep running makes the node unready by name, even
// while the database and the dispatcher answer.
BOOST_AUTO_TEST_CASE(not_ready_while_the_health_board_names_a_component) {
  auto ingest = spawn_ingest();
  health->report("channel sms", "stopped after 5 restarts");
  auto probe = readiness(ingest);
  BOOST_REQUIRE(probe);
  BOOST_TEST(!probe->first);
  BOOST_TEST(probe->second.find("channel sms: stopped") != std::string::npos, probe->second);
}

// While the database hangs, a shard holds at most max_waiting claims; the next one is refused
// at once as overloaded instead of queueing without bound.
BOOST_AUTO_TEST_CASE(a_shard_over_its_cap_answers_overloaded) {
  actors::dedup_shard_config shard_config;
  shard_config.max_waiting = 2;
  auto ingest = spawn_ingest_before_a_hung_store({}, shard_config);
  submit(ingest, plan("order-1", {"sms"}));
  submit(ingest, plan("order-1", {"sms"})); // a resubmission waits behind the first
  submit(ingest, plan("order-2", {"sms"}));
  run();
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  BOOST_REQUIRE(error_of(0) != nullptr);
  BOOST_TEST(error_of(0)->status == 503);
  BOOST_TEST(error_of(0)->code == "overloaded");
  BOOST_TEST(held->size() == 1u); // only the first claim reached the store
}

// The shard gives up on the store before ingest gives up on the shard: the client gets the
// shard's definite answer, and the shard's queue is empty again for the next claim.
BOOST_AUTO_TEST_CASE(the_shards_claim_timeout_answers_before_ingests) {
  actors::ingest_config config;
  config.claim_timeout = std::chrono::seconds{5};
  actors::dedup_shard_config shard_config;
  shard_config.claim_timeout = std::chrono::seconds{4};
  shard_config.max_waiting = 1;
  auto ingest = spawn_ingest_before_a_hung_store(config, shard_config);
  submit(ingest, plan("order-1", {"sms"}));
  run();
  advance(std::chrono::milliseconds{3999});
  BOOST_TEST(answers.empty());
  advance(std::chrono::milliseconds{1});
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  BOOST_REQUIRE(error_of(0) != nullptr);
  BOOST_TEST(error_of(0)->code == "unavailable");
  submit(ingest, plan("order-2", {"sms"})); // the shard's one slot is free again
  run();
  BOOST_TEST(held->size() == 2u);
  BOOST_TEST(answers.size() == 1u);
}

// One timer serves all of a shard's claims at the store: it is re-armed for each deadline in
// turn, so a claim made later times out at its own deadline, not at the first one's.
BOOST_AUTO_TEST_CASE(each_claim_at_the_store_times_out_at_its_own_deadline) {
  actors::dedup_shard_config shard_config;
  shard_config.claim_timeout = std::chrono::seconds{4};
  auto ingest = spawn_ingest_before_a_hung_store({}, shard_config);
  submit(ingest, plan("order-1", {"sms"}));
  run();
  advance(std::chrono::seconds{1});
  submit(ingest, plan("order-2", {"sms"}));
  run();
  advance(std::chrono::seconds{3});
  BOOST_REQUIRE_EQUAL(answers.size(), 1u); // order-1's deadline only
  advance(std::chrono::milliseconds{999});
  BOOST_TEST(answers.size() == 1u);
  advance(std::chrono::milliseconds{1});
  BOOST_REQUIRE_EQUAL(answers.size(), 2u);
  BOOST_TEST(error_of(1)->code == "unavailable");
}

// The store may still answer a claim the shard already gave up on. By then a resubmission of
// the same key may be at the store: the late answer is not its answer.
BOOST_AUTO_TEST_CASE(a_store_answer_after_the_deadline_does_not_answer_a_later_claim) {
  actors::dedup_shard_config shard_config;
  shard_config.claim_timeout = std::chrono::seconds{4};
  auto ingest = spawn_ingest_before_a_hung_store({}, shard_config);
  auto message = plan("order-1", {"sms"});
  submit(ingest, message);
  run();
  advance(std::chrono::seconds{4});
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  submit(ingest, message);
  run();
  BOOST_REQUIRE_EQUAL(held->size(), 2u);
  held->late_answers.emplace_back(0, persistence::claim_result{message.message.id, {}, {}});
  caf::anon_send(writer_of_held, actors::flush_atom_v);
  run();
  BOOST_TEST(answers.size() == 1u);
  persistence::claim_result current{message.message.id, {}, {}};
  persistence::claim_outcome created;
  created.task_id = message.tasks[0].id;
  created.channel = "sms";
  created.created = true;
  current.tasks.push_back(created);
  held->late_answers.emplace_back(1, std::move(current));
  caf::anon_send(writer_of_held, actors::flush_atom_v);
  run();
  BOOST_REQUIRE_EQUAL(answers.size(), 2u);
  auto* answered = std::get_if<persistence::claim_result>(&answers[1]);
  BOOST_REQUIRE(answered != nullptr);
  BOOST_REQUIRE_EQUAL(answered->tasks.size(), 1u);
  BOOST_TEST(answered->tasks[0].created);
}

// The HTTP layer's answers come as replies, never through a callback in a message: an
// ingest that is gone, or one that never answers, still gets the client an answer.
BOOST_AUTO_TEST_CASE(a_request_to_a_dead_ingest_is_answered_unavailable) {
  auto ingest = spawn_ingest();
  caf::anon_send_exit(ingest, caf::exit_reason::kill);
  run();
  submit(ingest, plan("order-1", {"sms"}));
  run();
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  BOOST_REQUIRE(error_of(0) != nullptr);
  BOOST_TEST(error_of(0)->status == 503);
  BOOST_TEST(error_of(0)->code == "unavailable");
  BOOST_TEST(provider->calls.empty());
}

BOOST_AUTO_TEST_CASE(a_request_ingest_never_answers_is_answered_after_the_answer_timeout) {
  actors::ingest_config config;
  config.claim_timeout = std::chrono::hours{1}; // ingest waits on the hung store far longer
  actors::dedup_shard_config shard_config;
  shard_config.claim_timeout = std::chrono::minutes{50};
  auto ingest = spawn_ingest_before_a_hung_store(config, shard_config);
  submit(ingest, plan("order-1", {"sms"}));
  run();
  advance(answer_timeout - std::chrono::milliseconds{1});
  BOOST_TEST(answers.empty());
  advance(std::chrono::milliseconds{1});
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  BOOST_REQUIRE(error_of(0) != nullptr);
  BOOST_TEST(error_of(0)->code == "unavailable");
}

// One service's asks share one deadline timer, re-armed for each open ask in turn: a later ask
// is answered at its own deadline, and one answered in time is not answered again.
BOOST_AUTO_TEST_CASE(each_unanswered_ask_times_out_at_its_own_deadline) {
  actors::ingest_config config;
  config.claim_timeout = std::chrono::hours{1};
  actors::dedup_shard_config shard_config;
  shard_config.claim_timeout = std::chrono::minutes{50};
  auto ingest = spawn_ingest_before_a_hung_store(config, shard_config);
  auto& service = service_of(ingest);
  auto keep = [this](submit_answer answer) { answers.push_back(std::move(answer)); };
  int probes = 0;
  service.submit(plan("order-1", {"sms"}), keep);
  run();
  advance(std::chrono::seconds{5});
  service.submit(plan("order-2", {"sms"}), keep);
  service.readiness([&](bool, std::string) { ++probes; });
  run();
  BOOST_TEST(probes == 1); // answered at once, long before its deadline
  advance(answer_timeout - std::chrono::seconds{5});
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  advance(std::chrono::seconds{5} - std::chrono::milliseconds{1});
  BOOST_TEST(answers.size() == 1u);
  advance(std::chrono::milliseconds{1});
  BOOST_REQUIRE_EQUAL(answers.size(), 2u);
  BOOST_TEST(error_of(1)->code == "unavailable");
  advance(answer_timeout);
  BOOST_TEST(answers.size() == 2u);
  BOOST_TEST(probes == 1);
}

BOOST_AUTO_TEST_CASE(find_returns_the_committed_message) {
  auto ingest = spawn_ingest();
  auto message = plan("order-1", {"sms"});
  submit(ingest, message);
  run();
  std::optional<actors::maybe_message_view> found;
  service_of(ingest).find_message("default", message.message.id, [&](auto answer) {
    if (auto* view = std::get_if<std::optional<persistence::message_view>>(&answer))
      found = *view;
  });
  run();
  BOOST_REQUIRE(found);
  BOOST_REQUIRE(found->has_value());
  BOOST_REQUIRE_EQUAL((*found)->tasks.size(), 1u);
  BOOST_TEST(to_string((*found)->tasks[0].state) == "SENT");
}

BOOST_AUTO_TEST_SUITE_END()

// POST /v1/messages/batch's path: ingest hands a batch's plans to the store writer in one
// message, so they land in one claim() transaction.
BOOST_FIXTURE_TEST_SUITE(ingest_batch_tests, ingest_fixture)

BOOST_AUTO_TEST_CASE(a_batch_is_one_claim_transaction_answered_in_order_and_sent_once) {
  auto ingest = spawn_ingest();
  actors::message_plans plans;
  for (int i = 0; i < 50; ++i)
    plans.push_back(plan("order-" + std::to_string(i), {"sms"}));
  plans.push_back(plans[7]); // the same event twice in one batch
  submit_batch(ingest, plans);
  run();
  BOOST_REQUIRE_EQUAL(batch_answers.size(), 1u);
  auto* results = std::get_if<actors::claim_results>(&batch_answers[0]);
  BOOST_REQUIRE(results != nullptr);
  BOOST_REQUIRE_EQUAL(results->size(), plans.size());
  // Every plan was committed by one claim() call: one transaction.
  BOOST_TEST(writer_store->claim_batches == 1u);
  BOOST_TEST(writer_store->claimed_plans == plans.size());
  for (std::size_t i = 0; i < 50; ++i) {
    BOOST_TEST((*results)[i].message_id == plans[i].message.id);
    BOOST_TEST((*results)[i].tasks.at(0).created);
  }
  // The later copy is a duplicate of the first, with the same ids.
  BOOST_TEST((*results)[50].message_id == plans[7].message.id);
  BOOST_TEST((*results)[50].tasks.at(0).task_id == plans[7].tasks[0].id);
  BOOST_TEST(!(*results)[50].tasks.at(0).created);
  // Created tasks were dispatched as single claims are: each sent exactly once.
  BOOST_TEST(provider->calls.size() == 50u);
  BOOST_TEST(provider->calls_for(plans[7].tasks[0].id) == 1u);
  BOOST_TEST(tasks_in(task_state::sent) == 50u);
  auto text = metrics->render();
  BOOST_TEST(text.find("herald_tasks_created_total{channel=\"sms\"} 50") != std::string::npos);
  BOOST_TEST(text.find("herald_tasks_duplicate_total{channel=\"sms\"} 1") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_batch_and_a_single_claim_of_one_key_create_it_once) {
  auto ingest = spawn_ingest();
  auto message = plan("order-1", {"sms"});
  submit(ingest, message);
  submit_batch(ingest, {message, plan("order-2", {"sms"})});
  run();
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  BOOST_REQUIRE_EQUAL(batch_answers.size(), 1u);
  auto& single = std::get<persistence::claim_result>(answers[0]);
  auto& batch = std::get<actors::claim_results>(batch_answers[0]);
  BOOST_TEST(single.tasks[0].created + batch[0].tasks[0].created == 1);
  BOOST_TEST(batch[1].tasks[0].created);
  BOOST_TEST(provider->calls_for(message.tasks[0].id) == 1u);
  BOOST_TEST(tasks_in(task_state::sent) == 2u);
}

BOOST_AUTO_TEST_CASE(a_batch_counts_each_message_against_max_in_flight) {
  actors::ingest_config config;
  config.max_in_flight = 3;
  auto ingest = spawn_ingest_before_a_hung_store(config, {});
  submit_batch(ingest, {plan("order-1", {"sms"}), plan("order-2", {"sms"}),
                        plan("order-3", {"sms"}), plan("order-4", {"sms"})});
  run();
  BOOST_REQUIRE_EQUAL(batch_answers.size(), 1u); // larger than the bound: never taken
  BOOST_TEST(std::get<api::service_error>(batch_answers[0]).code == "overloaded");
  submit_batch(ingest, {plan("order-1", {"sms"}), plan("order-2", {"sms"})});
  run();
  BOOST_TEST(batch_answers.size() == 1u); // waits for the hung store, holding two slots
  submit_batch(ingest, {plan("order-3", {"sms"}), plan("order-4", {"sms"})});
  submit(ingest, plan("order-5", {"sms"})); // the third slot is still free
  run();
  BOOST_REQUIRE_EQUAL(batch_answers.size(), 2u);
  BOOST_TEST(std::get<api::service_error>(batch_answers[1]).code == "overloaded");
  BOOST_TEST(answers.empty());
  BOOST_TEST(held->size() == 1u); // the single claim reached the store, behind its shard
  submit(ingest, plan("order-6", {"sms"}));
  run();
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  BOOST_TEST(error_of(0)->code == "overloaded");
}

BOOST_AUTO_TEST_CASE(a_hung_store_answers_the_batch_unavailable_and_frees_its_slots) {
  actors::ingest_config config;
  config.max_in_flight = 2;
  config.claim_timeout = std::chrono::seconds{5};
  auto ingest = spawn_ingest_before_a_hung_store(config, {});
  submit_batch(ingest, {plan("order-1", {"sms"}), plan("order-2", {"sms"})});
  run();
  BOOST_TEST(batch_answers.empty());
  advance(std::chrono::seconds{5});
  BOOST_REQUIRE_EQUAL(batch_answers.size(), 1u);
  BOOST_TEST(std::get<api::service_error>(batch_answers[0]).code == "unavailable");
  submit_batch(ingest, {plan("order-1", {"sms"}), plan("order-2", {"sms"})});
  run();
  BOOST_TEST(batch_answers.size() == 1u); // taken again, not refused
}

BOOST_AUTO_TEST_CASE(a_store_failure_writes_nothing_of_the_batch) {
  auto ingest = spawn_ingest();
  faulty_store->script(1, persistence::faulty_task_store::fault::fail);
  submit_batch(ingest, {plan("order-1", {"sms"}), plan("order-2", {"sms"})});
  run();
  BOOST_REQUIRE_EQUAL(batch_answers.size(), 1u);
  auto& error = std::get<api::service_error>(batch_answers[0]);
  BOOST_TEST(error.status == 503);
  BOOST_TEST(error.code == "unavailable");
  BOOST_TEST(tasks_in(task_state::pending) + tasks_in(task_state::sent) == 0u);
  BOOST_TEST(provider->calls.empty());
}

BOOST_AUTO_TEST_SUITE_END()

// The users routes' path: ingest reads profiles through the store reader and changes them
// through the store writer, stamped with the injected clock.
namespace {

using profile_answer = std::variant<domain::user_profile, api::service_error>;

/// Sends a change of the user u-1 of `tenant` to ingest and runs; its answer.
profile_answer change_user(ingest_fixture& fixture, const actors::ingest_actor& ingest,
                           const std::string& tenant, domain::user_patch patch) {
  std::optional<profile_answer> answer;
  fixture.service_of(ingest).update_user(tenant, "u-1", std::move(patch),
                                         [&](profile_answer a) { answer = std::move(a); });
  fixture.run();
  BOOST_REQUIRE(answer.has_value());
  return *answer;
}

/// Looks the user u-1 of `tenant` up through ingest and runs; what it found.
actors::maybe_user_profile find_user(ingest_fixture& fixture, const actors::ingest_actor& ingest,
                                     const std::string& tenant) {
  std::optional<actors::maybe_user_profile> found;
  fixture.service_of(ingest).find_user(tenant, "u-1", [&](auto answer) {
    if (auto* user = std::get_if<actors::maybe_user_profile>(&answer))
      found = *user;
  });
  fixture.run();
  BOOST_REQUIRE(found.has_value());
  return *found;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(ingest_users_tests, ingest_fixture)

BOOST_AUTO_TEST_CASE(a_user_change_is_committed_at_the_clocks_time_and_read_back) {
  auto ingest = spawn_ingest();
  domain::user_patch patch;
  patch.contacts = std::map<std::string, std::string>{{"sms", "+8613800000000"}};
  patch.locale = "zh-CN";
  auto answer = change_user(*this, ingest, "acme", patch);
  auto* user = std::get_if<domain::user_profile>(&answer);
  BOOST_REQUIRE(user != nullptr);
  BOOST_TEST(user->contacts.at("sms") == "+8613800000000");
  BOOST_TEST(domain::format_rfc3339(user->updated_at) == domain::format_rfc3339(clock->now()));
  auto found = find_user(*this, ingest, "acme");
  BOOST_REQUIRE(found.has_value());
  BOOST_TEST(found->locale == "zh-CN");
  BOOST_TEST(!find_user(*this, ingest, "other").has_value()); // another tenant's user
}

BOOST_AUTO_TEST_CASE(a_failed_user_write_is_unavailable_and_changes_nothing) {
  auto ingest = spawn_ingest();
  faulty_store->script(1, persistence::faulty_task_store::fault::fail);
  domain::user_patch patch;
  patch.locale = "en";
  auto answer = change_user(*this, ingest, "acme", patch);
  auto* error = std::get_if<api::service_error>(&answer);
  BOOST_REQUIRE(error != nullptr);
  BOOST_TEST(error->status == 503);
  BOOST_TEST(error->code == "unavailable");
  BOOST_TEST(!find_user(*this, ingest, "acme").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
