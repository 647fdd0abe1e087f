#pragma once

// What every task_store backend must do for the status-event outbox (docs/events.md), written
// once and expanded by HERALD_EVENT_OUTBOX_CONTRACT() into a SQLite and a PostgreSQL suite.

#include "domain/status_event.hpp"
#include "task_store_contract.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <soci/soci.h>

namespace herald::test::event_outbox_contract {

using domain::task_state;
using persistence::event_outcome;
using persistence::status_event;
using task_store_contract::change;
using task_store_contract::due_events;
using task_store_contract::make_plan;
using task_store_contract::micros;

constexpr std::int64_t t0 = 1'790'000'001'000'000;

inline std::unique_ptr<persistence::task_store>
open_with_events(store_backend& backend, std::vector<std::string> types = {}) {
  backend.open_store(); // migrates
  return persistence::open_task_store(
      backend.url(), false,
      persistence::store_options::writing_events(domain::event_states_for(std::move(types))));
}

inline std::vector<std::string> ids_of(const std::vector<status_event>& events) {
  std::vector<std::string> ids;
  for (const auto& e : events)
    ids.push_back(e.id);
  return ids;
}

inline event_outcome outcome(const std::string& id, event_outcome::outcome result,
                             std::uint32_t attempts, std::int64_t at,
                             std::optional<std::int64_t> next = std::nullopt,
                             std::string error = {}) {
  event_outcome o;
  o.event_id = id;
  o.result = result;
  o.attempts = attempts;
  o.at = micros(at);
  if (next)
    o.next_attempt_at = micros(*next);
  o.last_error = std::move(error);
  return o;
}

inline std::uint64_t event_rows(store_backend& backend) {
  auto sql = persistence::connect(backend.url());
  long long rows = 0;
  *sql << "SELECT COUNT(*) FROM events", soci::into(rows);
  return static_cast<std::uint64_t>(rows);
}

// A committed change into a state with an event type writes its event in the same
// transaction, with the task's tenant and business key and the change's time; a change
// written again (its answer lost) is still one event; a change that did not apply, or into a
// state without a type (SENDING, RETRY_WAIT), writes none.
inline void changes_write_their_events_once(store_backend& backend) {
  auto store = open_with_events(backend);
  const auto plan = make_plan("order-e1", {"sms", "email"}, "u-9", "acme");
  store->claim({plan});
  const auto& sms = plan.tasks[0].id;
  const auto& email = plan.tasks[1].id;
  auto sent = change(sms, task_state::sending, task_state::sent, 1, t0 + 2);
  sent.lease_token = "take-1";
  auto taken = change(sms, task_state::pending, task_state::sending, 0, t0 + 1);
  taken.lease_token = "take-1";
  BOOST_TEST(
      store->apply({taken, sent, change(email, task_state::pending, task_state::sending)}, {})
          .size() == 3u);
  BOOST_TEST(store->apply({sent}, {}).size() == 1u); // the same change again: one event
  BOOST_TEST(store->apply({change(email, task_state::pending, task_state::sent)}, {}).empty());
  BOOST_TEST(
      store->apply({change(email, task_state::sending, task_state::retry_wait, 1)}, {}).size() ==
      1u);
  BOOST_TEST(store->count_pending_events() == 1u);

  auto due = due_events(*store, t0 + 10, 10);
  BOOST_TEST_REQUIRE(due.size() == 1u);
  const auto& e = due[0];
  BOOST_TEST(e.id == domain::event_id_for(sms, task_state::sent));
  BOOST_TEST(e.type == "task.sent");
  BOOST_TEST(e.task_id == sms);
  BOOST_TEST(e.message_id == plan.message.id);
  BOOST_TEST(e.tenant == "acme");
  BOOST_TEST(e.biz_type == "ORDER_SHIPPED");
  BOOST_TEST(e.biz_id == "order-e1");
  BOOST_TEST(e.user_id == "u-9");
  BOOST_TEST(e.channel == "sms");
  BOOST_TEST(domain::to_unix_micros(e.occurred_at) == t0 + 2);
  BOOST_TEST(e.attempts == 0u);

  BOOST_TEST(store->apply({change(email, task_state::retry_wait, task_state::dead, 6, t0 + 3)}, {})
                 .size() == 1u);
  BOOST_TEST(ids_of(due_events(*store, t0 + 10, 10)) ==
                 (std::vector<std::string>{domain::event_id_for(sms, task_state::sent),
                                           domain::event_id_for(email, task_state::dead)}),
             boost::test_tools::per_element());
  BOOST_TEST(event_rows(backend) == 2u);
}

// Only the configured types are written; a store opened without events writes none at all.
inline void only_enabled_types_are_written(store_backend& backend) {
  auto dead_only = open_with_events(backend, {"task.dead"});
  const auto plan = make_plan("order-e2", {"sms", "email"});
  dead_only->claim({plan});
  dead_only->apply({change(plan.tasks[0].id, task_state::pending, task_state::sent),
                    change(plan.tasks[1].id, task_state::pending, task_state::dead)},
                   {});
  BOOST_TEST(
      ids_of(due_events(*dead_only, t0 + 10, 10)) ==
          (std::vector<std::string>{domain::event_id_for(plan.tasks[1].id, task_state::dead)}),
      boost::test_tools::per_element());

  auto off = persistence::open_task_store(backend.url(), false);
  const auto other = make_plan("order-e3", {"sms"});
  off->claim({other});
  off->apply({change(other.tasks[0].id, task_state::pending, task_state::dead)}, {});
  BOOST_TEST(event_rows(backend) == 1u);
}

// Of each task only its lowest PENDING event is handed out, once due: the next waits until
// that one is delivered or dead. A retry is due at its next_attempt_at and keeps its masked
// error; settling an event no longer PENDING changes nothing.
inline void a_tasks_events_go_out_in_order(store_backend& backend) {
  auto store = open_with_events(backend);
  const auto plan = make_plan("order-e4", {"sms", "email"});
  store->claim({plan});
  const auto& sms = plan.tasks[0].id;
  const auto& email = plan.tasks[1].id;
  store->apply({change(sms, task_state::pending, task_state::sent, 1, t0)}, {});
  store->apply({change(email, task_state::pending, task_state::sent, 1, t0 + 1)}, {});
  store->apply({change(sms, task_state::sent, task_state::delivered, 1, t0 + 2),
                change(sms, task_state::delivered, task_state::read, 1, t0 + 3)},
               {});
  const auto sms_sent = domain::event_id_for(sms, task_state::sent);
  const auto sms_delivered = domain::event_id_for(sms, task_state::delivered);
  const auto sms_read = domain::event_id_for(sms, task_state::read);
  const auto email_sent = domain::event_id_for(email, task_state::sent);
  const auto now = t0 + 100;
  BOOST_TEST(store->count_pending_events() == 4u);
  BOOST_TEST(ids_of(due_events(*store, now, 10)) ==
                 (std::vector<std::string>{sms_sent, email_sent}),
             boost::test_tools::per_element());
  BOOST_TEST(ids_of(due_events(*store, now, 1)) == (std::vector<std::string>{sms_sent}),
             boost::test_tools::per_element());

  // sms SENT must wait: its task's DELIVERED stays behind it; email is delivered.
  store->settle_events(
      {outcome(sms_sent, event_outcome::outcome::retry, 1, now, now + 1000,
               "503 from https://hooks.example.com/x?token=abcdef0123456789abcdef0123456789"),
       outcome(email_sent, event_outcome::outcome::delivered, 1, now)});
  BOOST_TEST(due_events(*store, now + 999, 10).empty());
  auto due = due_events(*store, now + 1000, 10);
  BOOST_TEST_REQUIRE(due.size() == 1u);
  BOOST_TEST(due[0].id == sms_sent);
  BOOST_TEST(due[0].attempts == 1u);
  {
    auto sql = persistence::connect(backend.url());
    std::string error;
    *sql << "SELECT last_error FROM events WHERE id = :id", soci::use(sms_sent), soci::into(error);
    BOOST_TEST(error.find("abcdef0123456789abcdef0123456789") == std::string::npos);
    BOOST_TEST(error.find("503") != std::string::npos);
  }

  // Dead lets the next one go, as delivered does.
  store->settle_events({outcome(sms_sent, event_outcome::outcome::dead, 2, now + 1000)});
  BOOST_TEST(ids_of(due_events(*store, now + 1000, 10)) ==
                 (std::vector<std::string>{sms_delivered}),
             boost::test_tools::per_element());
  store->settle_events({outcome(sms_delivered, event_outcome::outcome::delivered, 1, now + 1001)});
  BOOST_TEST(ids_of(due_events(*store, now + 1001, 10)) == (std::vector<std::string>{sms_read}),
             boost::test_tools::per_element());
  // A late answer for a finished event changes nothing.
  store->settle_events({outcome(sms_sent, event_outcome::outcome::retry, 3, now + 1002, now)});
  BOOST_TEST(ids_of(due_events(*store, now + 1002, 10)) == (std::vector<std::string>{sms_read}),
             boost::test_tools::per_element());
  BOOST_TEST(store->count_pending_events() == 1u);
}

// A failover writes the failing task's event in its transaction; one rolled back (the
// fallback's task exists) writes none.
inline void fail_over_writes_the_failing_tasks_event(store_backend& backend) {
  auto store = open_with_events(backend);
  const auto plan = make_plan("order-e5", {"sms"});
  store->claim({plan});
  const auto& sms = plan.tasks[0].id;
  auto page = store->load_unfinished("", 10, micros(1'890'000'000'000'000));
  BOOST_TEST_REQUIRE(page.size() == 1u);
  const persistence::fallback_routes to_email{{{"sms", "email"}},
                                              task_store_contract::test_id_secret};
  auto failed = change(sms, task_state::pending, task_state::suppressed, 0, t0 + 5);
  BOOST_TEST((store->fail_over(failed, {}, page[0], to_email).result ==
              persistence::failover_result::outcome::failed_over));
  auto due = due_events(*store, t0 + 10, 10);
  BOOST_TEST_REQUIRE(due.size() == 1u);
  BOOST_TEST(due[0].id == domain::event_id_for(sms, task_state::suppressed));
  BOOST_TEST(due[0].type == "task.suppressed");

  // The same message again on sms: its fallback task exists, so nothing is written.
  const auto other = make_plan("order-e6", {"sms", "email"});
  store->claim({other});
  auto other_page = store->load_unfinished("", 10, micros(1'890'000'000'000'000));
  domain::delivery other_sms;
  for (const auto& d : other_page)
    if (d.task_id == other.tasks[0].id)
      other_sms = d;
  BOOST_TEST((store
                  ->fail_over(change(other.tasks[0].id, task_state::pending, task_state::failed),
                              {}, other_sms, to_email)
                  .result == persistence::failover_result::outcome::fallback_exists));
  BOOST_TEST(event_rows(backend) == 1u);
}

// An event is claimed by the node that reads it for posting: no other node gets it until the
// claim runs out or its outcome is written; a node reads only its own partitions' events; a
// restarted node ends its earlier processes' claims (release_leases), not other nodes'.
inline void claimed_events_go_to_one_node(store_backend& backend) {
  auto store = open_with_events(backend);
  const auto a = make_plan("order-c1", {"sms"});
  const auto b = make_plan("order-c2", {"sms"});
  store->claim({a, b});
  store->apply({change(a.tasks[0].id, task_state::pending, task_state::sent, 1, t0),
                change(b.tasks[0].id, task_state::pending, task_state::sent, 1, t0)},
               {});
  const auto a_sent = domain::event_id_for(a.tasks[0].id, task_state::sent);
  const auto b_sent = domain::event_id_for(b.tasks[0].id, task_state::sent);
  const auto now = t0 + 100;
  const std::string node_a = "node-a/00000000000000a1";
  const std::string node_b = "node-b/00000000000000b1";
  auto claim = [&](const std::string& owner, std::int64_t at,
                   persistence::partition_filter partitions = std::nullopt) {
    return ids_of(store->claim_due_events(
        {owner, micros(at), micros(at + 1000), std::move(partitions), {}}, 10));
  };
  const auto a_partition = *domain::partition_of(a.message.id);
  const auto b_partition = *domain::partition_of(b.message.id);
  BOOST_TEST_REQUIRE(a_partition != b_partition); // else choose other business ids

  // Partitions: a node owning only a's partition claims only a's event; one owning none, none.
  BOOST_TEST(claim(node_a, now, persistence::partition_filter{{a_partition}}) ==
                 (std::vector<std::string>{a_sent}),
             boost::test_tools::per_element());
  BOOST_TEST(
      claim(node_b, now, persistence::partition_filter{std::vector<domain::partition>{}}).empty());
  // Claimed: nobody else gets it until the claim runs out; the other event is free.
  BOOST_TEST(claim(node_b, now) == (std::vector<std::string>{b_sent}),
             boost::test_tools::per_element());
  BOOST_TEST(claim(node_b, now + 999).empty());
  auto both = claim(node_b, now + 1000);
  std::sort(both.begin(), both.end());
  auto expected = std::vector<std::string>{a_sent, b_sent};
  std::sort(expected.begin(), expected.end());
  BOOST_TEST(both == expected, boost::test_tools::per_element());
  // A retry written ends the claim: due again at its time, for whoever owns it then.
  store->settle_events({outcome(a_sent, event_outcome::outcome::retry, 1, now + 1000, now + 1500)});
  BOOST_TEST(claim(node_a, now + 1500) == (std::vector<std::string>{a_sent}),
             boost::test_tools::per_element());
  // node-a restarts: its earlier process's claim ends at once; node-b's stays.
  BOOST_TEST(claim(node_a, now + 1600).empty());
  store->release_leases("node-a", micros(now + 1600));
  BOOST_TEST(claim(node_b, now + 1600) == (std::vector<std::string>{a_sent}),
             boost::test_tools::per_element());
}

// A node extends the claims on the events it is posting still (a post may wait and run long):
// while it does, no other node takes them; it cannot extend a claim another node has taken.
inline void held_claims_are_renewed(store_backend& backend) {
  auto store = open_with_events(backend);
  const auto plan = make_plan("order-h1", {"sms"});
  store->claim({plan});
  store->apply({change(plan.tasks[0].id, task_state::pending, task_state::sent, 1, t0)}, {});
  const auto sent = domain::event_id_for(plan.tasks[0].id, task_state::sent);
  const auto now = t0 + 100;
  const std::string node_a = "node-a/00000000000000a1";
  const std::string node_b = "node-b/00000000000000b1";
  auto claim = [&](const std::string& owner, std::int64_t at, std::vector<std::string> held,
                   std::size_t limit) {
    return ids_of(store->claim_due_events(
        {owner, micros(at), micros(at + 1000), std::nullopt, std::move(held)}, limit));
  };
  BOOST_TEST(claim(node_a, now, {}, 10) == (std::vector<std::string>{sent}),
             boost::test_tools::per_element());
  // Renewed at now + 900 (with no room for new events): held until now + 1900.
  BOOST_TEST(claim(node_a, now + 900, {sent}, 0).empty());
  BOOST_TEST(claim(node_b, now + 1000, {}, 10).empty());
  BOOST_TEST(claim(node_b, now + 1899, {}, 10).empty());
  // Not renewed again: it runs out, node-b takes it, and node-a's late renewal changes nothing.
  BOOST_TEST(claim(node_b, now + 1900, {}, 10) == (std::vector<std::string>{sent}),
             boost::test_tools::per_element());
  BOOST_TEST(claim(node_a, now + 1950, {sent}, 0).empty());
  BOOST_TEST(claim(node_a, now + 2900, {}, 10) == (std::vector<std::string>{sent}),
             boost::test_tools::per_element());
}

} // namespace herald::test::event_outbox_contract

#define HERALD_EVENT_OUTBOX_CONTRACT_TEST(name)                                                    \
  BOOST_AUTO_TEST_CASE(name) {                                                                     \
    ::herald::test::event_outbox_contract::name(*this);                                            \
  }

/// Expands every outbox contract test into the enclosing fixture suite (a store_backend).
#define HERALD_EVENT_OUTBOX_CONTRACT()                                                             \
  HERALD_EVENT_OUTBOX_CONTRACT_TEST(changes_write_their_events_once)                               \
  HERALD_EVENT_OUTBOX_CONTRACT_TEST(only_enabled_types_are_written)                                \
  HERALD_EVENT_OUTBOX_CONTRACT_TEST(a_tasks_events_go_out_in_order)                                \
  HERALD_EVENT_OUTBOX_CONTRACT_TEST(fail_over_writes_the_failing_tasks_event)                      \
  HERALD_EVENT_OUTBOX_CONTRACT_TEST(claimed_events_go_to_one_node)                                 \
  HERALD_EVENT_OUTBOX_CONTRACT_TEST(held_claims_are_renewed)
