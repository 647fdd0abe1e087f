#pragma once

// What every task_store backend must do with receipts and stats (docs/receipts.md), written
// once and expanded by HERALD_RECEIPT_CONTRACT() into a SQLite and a PostgreSQL suite.

#include "domain/receipt.hpp"
#include "domain/status_event.hpp"
#include "task_store_contract.hpp"

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

namespace herald::domain {
// Boost.Test prints the states of a failed check by name.
inline std::ostream& boost_test_print_type(std::ostream& out, task_state state) {
  return out << to_string(state);
}
} // namespace herald::domain

namespace herald::test::receipt_contract {

using domain::receipt_status;
using domain::task_state;
using persistence::receipt_outcome;
using task_store_contract::change;
using task_store_contract::due_events;
using task_store_contract::make_plan;
using task_store_contract::micros;
using task_store_contract::take_lease;
using task_store_contract::test_id_secret;

constexpr std::int64_t t_sent = 1'790'000'020'000'000;
constexpr std::int64_t t_receipt = 1'790'000'030'000'000;

inline persistence::receipt_input receipt(const domain::task_record& task, receipt_status status,
                                          std::int64_t occurred = t_receipt) {
  persistence::receipt_input r;
  r.channel = task.channel;
  r.provider_request_id = task.provider_request_id;
  r.receipt.status = status;
  r.receipt.source = domain::receipt_source::callback;
  r.receipt.occurred_at = micros(occurred);
  r.receipt.received_at = micros(occurred + 1'000);
  r.receipt.detail = "handset +8613800000000 reached";
  return r;
}

inline persistence::fallback_routes no_fallbacks() {
  return {{}, test_id_secret};
}

/// Claims `plan` and takes its first task to SENDING (and to SENT unless `stop_at_sending`).
inline const domain::task_record& send_first(persistence::task_store& store,
                                             const domain::message_plan& plan,
                                             bool stop_at_sending = false,
                                             std::optional<std::string> message_id = {}) {
  store.claim({plan});
  const auto& task = plan.tasks.front();
  BOOST_TEST_REQUIRE(store.apply({take_lease(task.id, task_state::pending)}, {}).size() == 1u);
  if (!stop_at_sending) {
    auto sent = change(task.id, task_state::sending, task_state::sent, 1, t_sent);
    sent.provider_message_id = std::move(message_id);
    BOOST_TEST_REQUIRE(store.apply({sent}, {}).size() == 1u);
  }
  return task;
}

inline persistence::task_view task_of(persistence::task_store& store,
                                      const domain::message_plan& plan,
                                      const std::string& task_id) {
  auto view = store.find_message("", plan.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  for (auto& task : view->tasks)
    if (task.task_id == task_id)
      return task;
  BOOST_FAIL("task not found");
  return {};
}

inline std::vector<std::string> statuses_of(const persistence::task_view& task) {
  std::vector<std::string> out;
  for (const auto& r : task.receipts)
    out.emplace_back(domain::to_string(r.status));
  std::sort(out.begin(), out.end());
  return out;
}

// The same receipts three times, in every order, one call each or all in one batch: one final
// state and one row per distinct receipt.
inline void copies_in_any_order_end_in_one_state(store_backend& backend) {
  auto store = backend.open_store();
  std::vector<receipt_status> copies = {receipt_status::delivered, receipt_status::read,
                                        receipt_status::delivered};
  std::sort(copies.begin(), copies.end());
  int run = 0;
  do {
    for (bool one_batch : {false, true}) {
      auto plan = make_plan("order-r" + std::to_string(run++), {"sms"});
      const auto& task = send_first(*store, plan);
      std::vector<persistence::receipt_input> inputs;
      for (auto status : copies)
        inputs.push_back(receipt(task, status));
      for (int copy = 0; copy < 3; ++copy) { // the provider sends everything three times
        if (one_batch) {
          store->record_receipts(inputs, no_fallbacks(), micros(t_receipt));
        } else {
          for (const auto& input : inputs)
            store->record_receipts({input}, no_fallbacks(), micros(t_receipt));
        }
      }
      auto view = task_of(*store, plan, task.id);
      BOOST_TEST(view.state == task_state::read);
      BOOST_TEST(statuses_of(view) == (std::vector<std::string>{"delivered", "read"}),
                 boost::test_tools::per_element());
    }
  } while (std::next_permutation(copies.begin(), copies.end()));
}

// READ before DELIVERED: READ implies DELIVERED, and the late DELIVERED never moves it back.
inline void read_before_delivered_stays_read(store_backend& backend) {
  auto store = backend.open_store();
  auto plan = make_plan("order-rd", {"sms"});
  const auto& task = send_first(*store, plan);
  auto first = store->record_receipts({receipt(task, receipt_status::read)}, no_fallbacks(),
                                      micros(t_receipt));
  BOOST_TEST_REQUIRE(first.size() == 1u);
  BOOST_TEST((first[0].result == receipt_outcome::outcome::applied));
  BOOST_TEST(first[0].first_time);
  BOOST_TEST(first[0].state == task_state::read);
  auto late = store->record_receipts({receipt(task, receipt_status::delivered)}, no_fallbacks(),
                                     micros(t_receipt));
  BOOST_TEST((late[0].result == receipt_outcome::outcome::unchanged));
  BOOST_TEST(late[0].first_time);
  BOOST_TEST(late[0].state == task_state::read);
  auto again = store->record_receipts({receipt(task, receipt_status::delivered)}, no_fallbacks(),
                                      micros(t_receipt));
  BOOST_TEST(!again[0].first_time);
  auto undelivered = store->record_receipts({receipt(task, receipt_status::undelivered)},
                                            no_fallbacks(), micros(t_receipt));
  BOOST_TEST(undelivered[0].state == task_state::read); // confirmed: "did not arrive" is late
  auto view = task_of(*store, plan, task.id);
  BOOST_TEST(view.state == task_state::read);
  BOOST_TEST(statuses_of(view) == (std::vector<std::string>{"delivered", "read", "undelivered"}),
             boost::test_tools::per_element());
  const auto& kept = view.receipts.front();
  BOOST_TEST(kept.detail.find("+8613800000000") == std::string::npos); // masked
  BOOST_TEST(domain::to_unix_micros(kept.occurred_at) == t_receipt);
}

// A fast provider's receipt arrives before the SENT commit: it is recorded, the task waits,
// and the SENT commit applies it in the same transaction.
inline void a_receipt_before_the_sent_commit_is_applied_by_it(store_backend& backend) {
  backend.open_store(); // migrates
  persistence::store_options options;
  options.takes_receipts = true;
  auto store = persistence::open_task_store(backend.url(), false, options);
  auto plan = make_plan("order-early", {"sms"});
  const auto& task = send_first(*store, plan, true);
  auto early = store->record_receipts({receipt(task, receipt_status::delivered)}, no_fallbacks(),
                                      micros(t_receipt));
  BOOST_TEST_REQUIRE(early.size() == 1u);
  BOOST_TEST((early[0].result == receipt_outcome::outcome::waiting));
  BOOST_TEST(early[0].state == task_state::sending);
  BOOST_TEST(task_of(*store, plan, task.id).state == task_state::sending);

  BOOST_TEST(store->apply({change(task.id, task_state::sending, task_state::sent, 1, t_sent)}, {})
                 .size() == 1u);
  auto view = task_of(*store, plan, task.id);
  BOOST_TEST(view.state == task_state::delivered);
  BOOST_TEST(view.receipts.size() == 1u);
}

// Unknown ids, or a known id on another channel, name no task: nothing is recorded.
inline void unknown_tasks_record_nothing(store_backend& backend) {
  auto store = backend.open_store();
  auto plan = make_plan("order-unknown", {"sms"});
  const auto& task = send_first(*store, plan);
  auto wrong_channel = receipt(task, receipt_status::delivered);
  wrong_channel.channel = "app";
  auto no_such_id = receipt(task, receipt_status::delivered);
  no_such_id.provider_request_id = "hrq_nobody";
  auto unknown_message_id = receipt(task, receipt_status::delivered);
  unknown_message_id.provider_request_id.clear();
  unknown_message_id.provider_message_id = "SM-nobody";
  auto outcomes = store->record_receipts({wrong_channel, no_such_id, unknown_message_id},
                                         no_fallbacks(), micros(t_receipt));
  BOOST_TEST_REQUIRE(outcomes.size() == 3u);
  for (const auto& o : outcomes) {
    BOOST_TEST((o.result == receipt_outcome::outcome::unknown_task));
    BOOST_TEST(o.task_id.empty());
  }
  auto view = task_of(*store, plan, task.id);
  BOOST_TEST(view.state == task_state::sent);
  BOOST_TEST(view.receipts.empty());
}

// The provider's own id, kept by the SENT commit, finds the task as well as herald's.
inline void the_provider_message_id_finds_the_task(store_backend& backend) {
  auto store = backend.open_store();
  auto plan = make_plan("order-pm", {"sms"});
  const auto& task = send_first(*store, plan, false, "SM-4711");
  BOOST_TEST(task_of(*store, plan, task.id).provider_message_id == "SM-4711");
  auto by_message_id = receipt(task, receipt_status::delivered);
  by_message_id.provider_request_id.clear();
  by_message_id.provider_message_id = "SM-4711";
  auto outcomes = store->record_receipts({by_message_id}, no_fallbacks(), micros(t_receipt));
  BOOST_TEST((outcomes[0].result == receipt_outcome::outcome::applied));
  BOOST_TEST(outcomes[0].task_id == task.id);
  BOOST_TEST(task_of(*store, plan, task.id).state == task_state::delivered);
}

// UNDELIVERED fails over as a permanent failure does: the fallback's task is claimed in the same
// transaction, once; a fallback channel with its own task gets nothing new.
inline void undelivered_fails_over_once(store_backend& backend) {
  auto store = backend.open_store();
  const persistence::fallback_routes to_email{{{"sms", "email"}}, test_id_secret};
  auto plan = make_plan("order-und", {"sms"});
  const auto& task = send_first(*store, plan);
  auto outcomes = store->record_receipts({receipt(task, receipt_status::undelivered)}, to_email,
                                         micros(t_receipt));
  BOOST_TEST_REQUIRE(outcomes.size() == 1u);
  BOOST_TEST(outcomes[0].state == task_state::undelivered);
  BOOST_TEST_REQUIRE(outcomes[0].fallback.has_value());
  const auto& fallback = *outcomes[0].fallback;
  BOOST_TEST(fallback.channel == "email");
  BOOST_TEST(fallback.recipient == plan.message.recipients.at("email"));
  BOOST_TEST(fallback.task_id ==
             domain::task_id_for(domain::task_key{plan.message.key, "email"}, test_id_secret));
  auto again = store->record_receipts({receipt(task, receipt_status::undelivered)}, to_email,
                                      micros(t_receipt));
  BOOST_TEST(!again[0].fallback.has_value());
  auto view = store->find_message("", plan.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  BOOST_TEST(view->tasks.size() == 2u);

  // The fallback channel already had a task of its own: UNDELIVERED, and nothing new to send.
  auto both = make_plan("order-und2", {"sms", "email"});
  const auto& sms = send_first(*store, both);
  auto outcome = store->record_receipts({receipt(sms, receipt_status::undelivered)}, to_email,
                                        micros(t_receipt));
  BOOST_TEST(outcome[0].state == task_state::undelivered);
  BOOST_TEST(!outcome[0].fallback.has_value());
}

// A late receipt after UNCONFIRMED still confirms; nothing confirms a dead letter.
inline void late_receipts_confirm_unconfirmed_tasks_only(store_backend& backend) {
  auto store = backend.open_store();
  auto plan = make_plan("order-late", {"sms", "app"});
  const auto& task = send_first(*store, plan);
  BOOST_TEST(
      store->apply({change(task.id, task_state::sent, task_state::unconfirmed, 1, t_sent)}, {})
          .size() == 1u);
  auto late = store->record_receipts({receipt(task, receipt_status::delivered)}, no_fallbacks(),
                                     micros(t_receipt));
  BOOST_TEST(late[0].state == task_state::delivered);
  const auto& app = plan.tasks[1];
  BOOST_TEST(store->apply({take_lease(app.id, task_state::pending)}, {}).size() == 1u);
  BOOST_TEST(store->apply({change(app.id, task_state::sending, task_state::failed, 1, t_sent)}, {})
                 .size() == 1u);
  auto dead = store->record_receipts({receipt(app, receipt_status::delivered)}, no_fallbacks(),
                                     micros(t_receipt));
  BOOST_TEST((dead[0].result == receipt_outcome::outcome::unchanged));
  BOOST_TEST(dead[0].state == task_state::failed);
}

// Stats count tasks by channel and state in a creation window, per tenant, adding up.
inline void stats_count_by_channel_state_and_window(store_backend& backend) {
  auto store = backend.open_store();
  auto a = make_plan("order-s1", {"sms", "app"});
  auto b = make_plan("order-s2", {"sms"}, "u-9", "acme");
  const auto& sms = send_first(*store, a);
  store->record_receipts({receipt(sms, receipt_status::read)}, no_fallbacks(), micros(t_receipt));
  store->claim({b});
  auto all = store->stats({});
  BOOST_TEST_REQUIRE(all.channels.size() == 2u);
  BOOST_TEST(all.channels[0].channel == "app");
  BOOST_TEST(all.channels[1].channel == "sms");
  BOOST_TEST(all.messages == 2u); // three tasks of two messages
  std::uint64_t sms_total = 0;
  for (const auto& count : all.channels[1].states)
    sms_total += count.count;
  BOOST_TEST(sms_total == 2u);
  persistence::stats_query acme;
  acme.tenant = "acme";
  auto only_acme = store->stats(acme);
  BOOST_TEST_REQUIRE(only_acme.channels.size() == 1u);
  BOOST_TEST(only_acme.channels[0].states.size() == 1u);
  BOOST_TEST(only_acme.channels[0].states[0].state == task_state::pending);
  BOOST_TEST(only_acme.messages == 1u);
  persistence::stats_query one_channel;
  one_channel.channel = "sms";
  one_channel.tenant = "default";
  auto sms_only = store->stats(one_channel);
  BOOST_TEST_REQUIRE(sms_only.channels.size() == 1u);
  BOOST_TEST(sms_only.channels[0].states.size() == 1u);
  BOOST_TEST(sms_only.channels[0].states[0].state == task_state::read);
  BOOST_TEST(sms_only.messages == 1u);
  persistence::stats_query app_only; // every tenant: two messages, one with an app task
  app_only.channel = "app";
  BOOST_TEST(store->stats(app_only).messages == 1u);
  persistence::stats_query later;
  later.from = a.message.created_at + std::chrono::seconds(1);
  const auto none = store->stats(later);
  BOOST_TEST(none.channels.empty());
  BOOST_TEST(none.messages == 0u);
  persistence::stats_query window;
  window.from = a.message.created_at;
  window.to = a.message.created_at + std::chrono::microseconds(1);
  const auto in_window = store->stats(window);
  BOOST_TEST(in_window.channels.size() == 2u);
  BOOST_TEST(in_window.messages == 2u);
}

// The outbox posts a task's events in the order they happened: an early receipt applied by the
// SENT commit writes task.delivered after that commit's task.sent.
inline void early_receipt_events_keep_task_order(store_backend& backend) {
  backend.open_store(); // migrates
  auto store = persistence::open_task_store(backend.url(), false, [] {
    auto options = persistence::store_options::writing_events(domain::event_states_for({}));
    options.takes_receipts = true;
    return options;
  }());
  auto plan = make_plan("order-early-events", {"sms"});
  const auto& task = send_first(*store, plan, true);
  store->record_receipts({receipt(task, receipt_status::delivered)}, no_fallbacks(),
                         micros(t_receipt));
  BOOST_TEST_REQUIRE(
      store->apply({change(task.id, task_state::sending, task_state::sent, 1, t_sent)}, {})
          .size() == 1u);
  BOOST_TEST(task_of(*store, plan, task.id).state == task_state::delivered);
  auto due = due_events(*store, t_receipt + 10'000'000, 10);
  BOOST_TEST_REQUIRE(due.size() == 1u); // one per task at a time
  BOOST_TEST(due[0].type == "task.sent");
}

// An UNDELIVERED receipt before the SENT commit is acknowledged, so it must not depend on
// memory: that commit applies it and claims the fallback's task in the same transaction, and
// answers the fallback in its outcome for the writer to count and dispatch.
inline void an_early_undelivered_is_applied_by_the_sent_commit(store_backend& backend) {
  backend.open_store(); // migrates
  persistence::store_options options;
  options.takes_receipts = true;
  options.fallbacks = {{{"sms", "email"}}, test_id_secret};
  auto store = persistence::open_task_store(backend.url(), false, options);
  auto plan = make_plan("order-early-und", {"sms"});
  const auto& task = send_first(*store, plan, true);
  store->record_receipts({receipt(task, receipt_status::undelivered)}, options.fallbacks,
                         micros(t_receipt));
  persistence::unit_of_work sent;
  sent.changes.push_back({{change(task.id, task_state::sending, task_state::sent, 1, t_sent)}, {}});
  const auto outcome = store->commit(sent);
  BOOST_TEST_REQUIRE(outcome.applied.size() == 1u);
  BOOST_TEST(outcome.applied[0] == std::vector<std::string>{task.id});
  BOOST_TEST_REQUIRE(outcome.caught_up_fallbacks.size() == 1u);
  const auto& fallback = outcome.caught_up_fallbacks[0];
  BOOST_TEST(fallback.failed_channel == "sms");
  BOOST_TEST(fallback.task.channel == "email");
  auto view = store->find_message("", plan.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  BOOST_TEST_REQUIRE(view->tasks.size() == 2u); // the fallback task, PENDING until dispatched
  for (const auto& t : view->tasks)
    BOOST_TEST((t.channel == "email"
                    ? t.state == task_state::pending && t.task_id == fallback.task.task_id
                    : t.state == task_state::undelivered));
}

// Two tasks whose provider gave the same message id: a receipt naming only that id cannot tell
// them apart, so it is refused and changes neither.
inline void an_ambiguous_provider_message_id_changes_nothing(store_backend& backend) {
  auto store = backend.open_store();
  auto alice = make_plan("order-amb-1", {"sms"}, "alice");
  auto bob = make_plan("order-amb-2", {"sms"}, "bob");
  send_first(*store, alice, false, "accepted");
  send_first(*store, bob, false, "accepted");
  auto by_message_id = receipt(alice.tasks[0], receipt_status::undelivered);
  by_message_id.provider_request_id.clear();
  by_message_id.provider_message_id = "accepted";
  auto outcomes = store->record_receipts({by_message_id}, no_fallbacks(), micros(t_receipt));
  BOOST_TEST((outcomes[0].result == receipt_outcome::outcome::unknown_task));
  BOOST_TEST(task_of(*store, alice, alice.tasks[0].id).state == task_state::sent);
  BOOST_TEST(task_of(*store, bob, bob.tasks[0].id).state == task_state::sent);
}

} // namespace herald::test::receipt_contract

#define HERALD_RECEIPT_CONTRACT_TEST(name)                                                         \
  BOOST_AUTO_TEST_CASE(name) {                                                                     \
    ::herald::test::receipt_contract::name(*this);                                                 \
  }

/// Expands every receipt contract test into the enclosing fixture suite (a store_backend).
#define HERALD_RECEIPT_CONTRACT()                                                                  \
  HERALD_RECEIPT_CONTRACT_TEST(copies_in_any_order_end_in_one_state)                               \
  HERALD_RECEIPT_CONTRACT_TEST(read_before_delivered_stays_read)                                   \
  HERALD_RECEIPT_CONTRACT_TEST(a_receipt_before_the_sent_commit_is_applied_by_it)                  \
  HERALD_RECEIPT_CONTRACT_TEST(unknown_tasks_record_nothing)                                       \
  HERALD_RECEIPT_CONTRACT_TEST(the_provider_message_id_finds_the_task)                             \
  HERALD_RECEIPT_CONTRACT_TEST(undelivered_fails_over_once)                                        \
  HERALD_RECEIPT_CONTRACT_TEST(late_receipts_confirm_unconfirmed_tasks_only)                       \
  HERALD_RECEIPT_CONTRACT_TEST(stats_count_by_channel_state_and_window)                            \
  HERALD_RECEIPT_CONTRACT_TEST(early_receipt_events_keep_task_order)                               \
  HERALD_RECEIPT_CONTRACT_TEST(an_early_undelivered_is_applied_by_the_sent_commit)                 \
  HERALD_RECEIPT_CONTRACT_TEST(an_ambiguous_provider_message_id_changes_nothing)
