#pragma once

// What every task_store backend must do, written once. A suite per backend expands
// HERALD_TASK_STORE_CONTRACT() inside its BOOST_FIXTURE_TEST_SUITE, so SQLite and PostgreSQL
// run exactly the same checks.

#include "domain/keys.hpp"
#include "domain/message.hpp"
#include "persistence/connection.hpp"
#include "persistence/task_store.hpp"
#include "store_backends.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <soci/soci.h>

namespace herald::test::task_store_contract {

using domain::task_state;
using persistence::state_change;

inline domain::timestamp micros(std::int64_t value) {
  return domain::from_unix_micros(value);
}

/// The status events due at `at`, as a read: claimed by a test owner only until `at` itself,
/// so the next call hands them out again.
inline std::vector<persistence::status_event> due_events(persistence::task_store& store,
                                                         std::int64_t at, std::size_t limit) {
  return store.claim_due_events(
      {"reader/0000000000000000", micros(at), micros(at), std::nullopt, {}}, limit);
}

/// Keys the ids of the plans below, as an installation's secret does.
inline const domain::id_secret test_id_secret{"contract-test-installation"};

/// A message for `biz_id` with one task per channel, ids derived from the keys as herald does.
inline domain::message_plan make_plan(const std::string& biz_id,
                                      const std::vector<std::string>& channels,
                                      const std::string& user = "u-123",
                                      const std::string& tenant = "default") {
  domain::message_plan plan;
  auto& m = plan.message;
  m.key = domain::message_key{tenant, "ORDER_SHIPPED", biz_id, user};
  m.id = domain::message_id_for(m.key, test_id_secret);
  m.template_name = "order_shipped";
  m.params = {{"order_no", biz_id}, {"note", "quotes \" and \\ and 'ticks' and ünïcode"}};
  m.title = "Shipped";
  m.body = "Order " + biz_id + " shipped";
  m.category = domain::category::transactional;
  m.priority = domain::priority::high;
  m.send_at = micros(1'800'000'000'000'001);
  m.trace_id = "trace-" + biz_id;
  m.created_at = micros(1'790'000'000'123'456);
  for (const auto& channel : channels)
    m.recipients[channel] = "to-" + channel + "-" + user;
  m.recipients["email"] = user + "@example.com \"quoted\" ünïcode"; // an address without a task
  for (const auto& channel : channels) {
    plan.tasks.push_back(
        domain::task_of(m.key, channel, "to-" + channel + "-" + user, test_id_secret));
  }
  return plan;
}

inline std::uint64_t total_tasks(persistence::task_store& store) {
  std::uint64_t total = 0;
  for (const auto& count : store.count_by_state())
    total += count.count;
  return total;
}

inline std::uint64_t tasks_in(persistence::task_store& store, task_state state) {
  for (const auto& count : store.count_by_state())
    if (count.state == state)
      return count.count;
  return 0;
}

inline state_change change(const std::string& task_id, task_state from, task_state to,
                           std::uint32_t attempts = 0, std::int64_t at = 1'790'000'001'000'000,
                           std::string error = {}) {
  state_change c;
  c.task_id = task_id;
  c.from = from;
  c.to = to;
  c.attempts = attempts;
  c.last_error = std::move(error);
  c.at = micros(at);
  return c;
}

inline void migrations_are_idempotent(store_backend& backend) {
  const int version = persistence::migrate(backend.url());
  BOOST_TEST(version >= 1);
  BOOST_TEST(persistence::migrate(backend.url()) == version);
  BOOST_CHECK_NO_THROW(persistence::open_task_store(backend.url(), false));
  BOOST_CHECK_NO_THROW(persistence::open_task_store(backend.url(), true));
}

inline void unmigrated_database_is_refused(store_backend& backend) {
  const auto fresh = backend.fresh_database();
  try {
    persistence::open_task_store(fresh, false);
    BOOST_FAIL("an unmigrated database was accepted");
  } catch (const persistence::store_error& e) {
    BOOST_TEST(std::string(e.what()).find("database schema is at version 0, herald needs") !=
               std::string::npos);
    BOOST_TEST(std::string(e.what()).find("run herald migrate") != std::string::npos);
  }
}

inline void concurrent_migrations_agree(store_backend& backend) {
  const auto fresh = backend.fresh_database();
  constexpr int migrators = 4;
  std::vector<int> versions(migrators, -1);
  std::vector<std::string> errors(migrators);
  std::vector<std::thread> threads;
  for (int i = 0; i < migrators; ++i)
    threads.emplace_back([&, i] {
      try {
        versions[i] = persistence::migrate(fresh);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (auto& thread : threads)
    thread.join();
  for (int i = 0; i < migrators; ++i) {
    BOOST_TEST(errors[i] == "");
    BOOST_TEST(versions[i] == versions[0]);
  }
  BOOST_TEST(versions[0] >= 1);
}

inline void claim_creates_then_answers_duplicates(store_backend& backend) {
  auto store = backend.open_store();
  const auto a = make_plan("order-1", {"sms", "wechat", "app"});
  const auto b = make_plan("order-2", {"sms"});

  auto first = store->claim({a, b});
  BOOST_TEST_REQUIRE(first.size() == 2u);
  BOOST_TEST(first[0].message_id == a.message.id);
  BOOST_TEST_REQUIRE(first[0].tasks.size() == 3u);
  BOOST_TEST_REQUIRE(first[1].tasks.size() == 1u);
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST(first[0].tasks[i].task_id == a.tasks[i].id);
    BOOST_TEST(first[0].tasks[i].channel == a.tasks[i].channel);
    BOOST_TEST(first[0].tasks[i].created);
    BOOST_TEST((first[0].tasks[i].state == task_state::pending));
  }
  BOOST_TEST(first[1].tasks[0].created);

  BOOST_TEST(
      store->apply({change(a.tasks[1].id, task_state::pending, task_state::sending)}, {}).size() ==
      1u);

  // Resubmitted, in another order and with a new channel: old tasks answered, the new one made
  // — and answered with the message as first stored, whatever this body said.
  auto a_plus = make_plan("order-1", {"sms", "wechat", "app", "email"});
  a_plus.message.title = "a different title";
  a_plus.message.body = "a different body";
  auto second = store->claim({b, a_plus});
  BOOST_TEST(second[1].message.title == a.message.title);
  BOOST_TEST(second[1].message.body == a.message.body);
  BOOST_TEST(second[1].message.recipients == a.message.recipients);
  BOOST_TEST(first[0].message.title == a.message.title); // a new message: as planned
  BOOST_TEST_REQUIRE(second.size() == 2u);
  BOOST_TEST(second[0].message_id == b.message.id);
  BOOST_TEST(!second[0].tasks[0].created);
  BOOST_TEST(second[0].tasks[0].task_id == b.tasks[0].id);
  BOOST_TEST_REQUIRE(second[1].tasks.size() == 4u);
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST(!second[1].tasks[i].created);
    BOOST_TEST(second[1].tasks[i].task_id == a.tasks[i].id);
  }
  BOOST_TEST((second[1].tasks[0].state == task_state::pending));
  BOOST_TEST((second[1].tasks[1].state == task_state::sending)); // current state, not PENDING
  BOOST_TEST(second[1].tasks[3].created);
  BOOST_TEST(second[1].tasks[3].channel == "email");
  BOOST_TEST(total_tasks(*store) == 5u);
}

inline void same_key_twice_in_one_batch(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-7", {"sms", "app"});
  auto twice_in_plan = make_plan("order-8", {"sms", "sms"});

  auto results = store->claim({plan, plan, twice_in_plan});
  BOOST_TEST_REQUIRE(results.size() == 3u);
  for (std::size_t i = 0; i < 2; ++i) {
    BOOST_TEST(results[0].tasks[i].created);
    BOOST_TEST(!results[1].tasks[i].created);
    BOOST_TEST(results[1].tasks[i].task_id == results[0].tasks[i].task_id);
    BOOST_TEST((results[1].tasks[i].state == task_state::pending));
  }
  BOOST_TEST_REQUIRE(results[2].tasks.size() == 2u);
  BOOST_TEST(results[2].tasks[0].created);
  BOOST_TEST(!results[2].tasks[1].created);
  BOOST_TEST(results[2].tasks[0].task_id == results[2].tasks[1].task_id);
  BOOST_TEST(total_tasks(*store) == 3u);
}

// Two plans of one message in one claim (two batch items of one key, another channel and
// other content each): the message is stored from the first, and both are answered with it,
// so the second plan's new task is sent what recovery and GET will show.
inline void one_message_with_two_contents_in_one_batch(store_backend& backend) {
  auto store = backend.open_store();
  const auto first = make_plan("order-9", {"sms"});
  auto second = make_plan("order-9", {"app"});
  second.message.title = "Another title";
  second.message.body = "Another body";

  auto results = store->claim({first, second});
  BOOST_TEST_REQUIRE(results.size() == 2u);
  BOOST_TEST(results[1].tasks.at(0).created);
  for (const auto& result : results) {
    BOOST_TEST(result.message.title == first.message.title);
    BOOST_TEST(result.message.body == first.message.body);
  }
  auto view = store->find_message("default", first.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  BOOST_TEST(view->message.body == first.message.body);
  BOOST_TEST(view->tasks.size() == 2u);
}

inline void keys_are_not_null_and_unique(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-9", {"sms"});
  store->claim({plan});
  auto sql = persistence::connect(backend.url());

  const std::vector<std::string> key_columns = {"message_id", "tenant",  "biz_type",
                                                "biz_id",     "user_id", "channel"};
  for (const auto& column : key_columns) {
    std::map<std::string, std::string> values = {{"message_id", "'" + plan.message.id + "'"},
                                                 {"tenant", "'default'"},
                                                 {"biz_type", "'ORDER_SHIPPED'"},
                                                 {"biz_id", "'order-9'"},
                                                 {"user_id", "'u-123'"},
                                                 {"channel", "'null-test'"}};
    values[column] = "NULL";
    BOOST_TEST_CONTEXT("NULL " << column) {
      BOOST_CHECK_THROW(*sql << "INSERT INTO tasks (id, message_id, tenant, biz_type, biz_id, "
                                "user_id, channel, recipient, provider_request_id, status, "
                                "priority, created_at, updated_at) VALUES ('null-" +
                                    column + "', " + values["message_id"] + ", " +
                                    values["tenant"] + ", " + values["biz_type"] + ", " +
                                    values["biz_id"] + ", " + values["user_id"] + ", " +
                                    values["channel"] + ", 'r', 'p', 'PENDING', 'normal', 1, 1)",
                        soci::soci_error);
    }
  }
  // The same business key under another id: the unique key, not only the id, guards it.
  BOOST_CHECK_THROW(*sql << "INSERT INTO tasks (id, message_id, tenant, biz_type, biz_id, "
                            "user_id, channel, recipient, provider_request_id, status, priority, "
                            "created_at, updated_at) VALUES ('other-id', '" +
                                plan.message.id +
                                "', 'default', 'ORDER_SHIPPED', 'order-9', 'u-123', 'sms', 'r', "
                                "'p', 'PENDING', 'normal', 1, 1)",
                    soci::soci_error);
  BOOST_CHECK_THROW(*sql << "INSERT INTO messages (id, tenant, biz_type, biz_id, user_id, "
                            "category, priority, created_at) VALUES ('other-id', 'default', "
                            "'ORDER_SHIPPED', 'order-9', 'u-123', 'transactional', 'normal', 1)",
                    soci::soci_error);
  BOOST_CHECK_THROW(*sql << "INSERT INTO messages (id, tenant, biz_type, biz_id, user_id, "
                            "category, priority, created_at) VALUES ('m-null', NULL, "
                            "'ORDER_SHIPPED', 'order-10', 'u-123', 'transactional', 'normal', 1)",
                    soci::soci_error);
  // A task must belong to a message.
  BOOST_CHECK_THROW(*sql << "INSERT INTO tasks (id, message_id, tenant, biz_type, biz_id, "
                            "user_id, channel, recipient, provider_request_id, status, priority, "
                            "created_at, updated_at) VALUES ('orphan', 'no-such-message', "
                            "'default', 'ORDER_SHIPPED', 'order-11', 'u-123', 'sms', 'r', 'p', "
                            "'PENDING', 'normal', 1, 1)",
                    soci::soci_error);
  BOOST_TEST(total_tasks(*store) == 1u);
}

inline void apply_is_guarded_and_records_attempts(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-20", {"sms", "app"});
  store->claim({plan});
  const auto& sms = plan.tasks[0].id;
  const auto& app = plan.tasks[1].id;

  auto applied = store->apply({change(sms, task_state::pending, task_state::sending),
                               change(app, task_state::retry_wait, task_state::sending)},
                              {});
  BOOST_TEST(applied == std::vector<std::string>{sms}); // app was not in RETRY_WAIT
  // A stale `from` changes nothing.
  BOOST_TEST(store->apply({change(sms, task_state::pending, task_state::sending)}, {}).empty());

  // Two changes of one task in one batch apply in order; the attempt is appended with them.
  persistence::attempt_record attempt;
  attempt.task_id = sms;
  attempt.attempt_no = 1;
  attempt.provider_request_id = plan.tasks[0].provider_request_id;
  attempt.outcome = "retryable";
  attempt.detail = "gateway timeout";
  attempt.started_at = micros(1'790'000'002'000'000);
  attempt.finished_at = micros(1'790'000'002'500'000);
  auto wait = change(sms, task_state::sending, task_state::retry_wait, 1, 1'790'000'003'000'000,
                     "gateway timeout");
  wait.next_attempt_at = micros(1'790'000'060'000'000);
  applied = store->apply(
      {wait, change(sms, task_state::retry_wait, task_state::sending, 1, 1'790'000'004'000'000)},
      {attempt});
  BOOST_TEST(applied == (std::vector<std::string>{sms, sms}));
  // Recording the same attempt again (a replayed batch) is harmless.
  BOOST_TEST(store->apply({}, {attempt}).empty());

  auto view = store->find_message("default", plan.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  BOOST_TEST_REQUIRE(view->tasks.size() == 2u);
  auto sms_view = std::find_if(view->tasks.begin(), view->tasks.end(),
                               [&](const auto& t) { return t.task_id == sms; });
  BOOST_TEST_REQUIRE((sms_view != view->tasks.end()));
  BOOST_TEST((sms_view->state == task_state::sending));
  BOOST_TEST(sms_view->attempts == 1u);
  BOOST_TEST(sms_view->last_error == "gateway timeout"); // an empty error keeps the last one
  BOOST_TEST(!sms_view->next_attempt_at.has_value());
  BOOST_TEST(domain::to_unix_micros(sms_view->updated_at) == 1'790'000'004'000'000);
  BOOST_TEST_REQUIRE(sms_view->attempt_log.size() == 1u);
  const auto& logged = sms_view->attempt_log[0];
  BOOST_TEST(logged.attempt_no == 1u);
  BOOST_TEST(logged.outcome == "retryable");
  BOOST_TEST(logged.detail == "gateway timeout");
  BOOST_TEST(logged.provider_request_id == plan.tasks[0].provider_request_id);
  BOOST_TEST(domain::to_unix_micros(logged.started_at) == 1'790'000'002'000'000);
  BOOST_TEST(domain::to_unix_micros(logged.finished_at) == 1'790'000'002'500'000);
  BOOST_TEST(tasks_in(*store, task_state::sending) == 1u);
  BOOST_TEST(tasks_in(*store, task_state::pending) == 1u);
}

// The attempts rows of `task_id` in the store's database.
inline int attempt_rows(const store_backend& backend, const std::string& task_id) {
  auto sql = persistence::connect(backend.url());
  int rows = -1;
  *sql << "SELECT COUNT(*) FROM attempts WHERE task_id = :id", soci::use(task_id), soci::into(rows);
  return rows;
}

inline void first_success_is_recorded_on_the_task_row(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-25", {"sms", "app", "wechat", "email"});
  store->claim({plan});
  const auto& sms = plan.tasks[0];
  const auto& app = plan.tasks[1];
  const auto& wechat = plan.tasks[2];
  const auto& email = plan.tasks[3];
  const auto take = [](const domain::task_record& task, std::string token) {
    auto c = change(task.id, task_state::pending, task_state::sending, 0, 1'790'000'001'000'000);
    c.lease_owner = "node-a/0000000000000000";
    c.lease_until = micros(1'790'000'031'000'000);
    c.lease_token = std::move(token);
    return c;
  };
  const auto sent = [](const domain::task_record& task, std::string token,
                       std::optional<std::string> message_id) {
    auto c = change(task.id, task_state::sending, task_state::sent, 1, 1'790'000'002'500'000);
    c.lease_token = std::move(token);
    c.provider_message_id = std::move(message_id);
    return c;
  };
  const auto success = [](const domain::task_record& task, std::string detail) {
    persistence::attempt_record a;
    a.task_id = task.id;
    a.attempt_no = 1;
    a.provider_request_id = task.provider_request_id;
    a.outcome = "success";
    a.detail = std::move(detail);
    a.started_at = micros(1'790'000'002'000'000);
    a.finished_at = micros(1'790'000'002'500'000);
    return a;
  };
  BOOST_TEST(
      store->apply({take(sms, "t-sms"), take(app, "t-app"), take(email, "t-email")}, {}).size() ==
      3u);
  // sms: the provider echoed the request id; app: it gave its own message id; wechat: its SENT
  // change does not apply (never taken), so its attempt needs a row; email: a success with no
  // detail, which the row could not give back.
  const auto sms_sent = sent(sms, "t-sms", std::nullopt);
  const auto sms_success = success(sms, sms.provider_request_id);
  const auto applied =
      store->apply({sms_sent, sent(app, "t-app", "pm-app-1"),
                    sent(wechat, "t-wechat", std::nullopt), sent(email, "t-email", std::nullopt)},
                   {sms_success, success(app, "pm-app-1"),
                    success(wechat, wechat.provider_request_id), success(email, "")});
  BOOST_TEST(applied == (std::vector<std::string>{sms.id, app.id, email.id}));
  // The same commit again, its answer lost: applied again, still one attempt.
  BOOST_TEST(store->apply({sms_sent}, {sms_success}) == std::vector<std::string>{sms.id});
  BOOST_TEST(attempt_rows(backend, sms.id) == 0);
  BOOST_TEST(attempt_rows(backend, app.id) == 0);
  BOOST_TEST(attempt_rows(backend, wechat.id) == 1);
  BOOST_TEST(attempt_rows(backend, email.id) == 1);

  auto view = store->find_message("default", plan.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  std::map<std::string, persistence::task_view> by_channel;
  for (const auto& task : view->tasks)
    by_channel.emplace(task.channel, task);
  const auto only_attempt = [&](const std::string& channel) {
    const auto& log = by_channel.at(channel).attempt_log;
    BOOST_TEST_REQUIRE(log.size() == 1u);
    const auto& a = log[0];
    BOOST_TEST(a.task_id == by_channel.at(channel).task_id);
    BOOST_TEST(a.attempt_no == 1u);
    BOOST_TEST(a.outcome == "success");
    BOOST_TEST(a.provider_request_id == by_channel.at(channel).provider_request_id);
    BOOST_TEST(domain::to_unix_micros(a.started_at) == 1'790'000'002'000'000);
    BOOST_TEST(domain::to_unix_micros(a.finished_at) == 1'790'000'002'500'000);
    return a.detail;
  };
  BOOST_TEST(only_attempt("sms") == sms.provider_request_id);
  BOOST_TEST(only_attempt("app") == "pm-app-1");
  BOOST_TEST(only_attempt("wechat") == wechat.provider_request_id);
  BOOST_TEST(only_attempt("email") == "");
  BOOST_TEST((by_channel.at("wechat").state == task_state::pending));

  // Written again after the task moved on (DELIVERED; the answer of its SENT commit lost): the
  // change no longer applies, so the attempt gets its row, and the history still shows one
  // first call.
  BOOST_TEST(
      store->apply({change(sms.id, task_state::sent, task_state::delivered, 1)}, {}).size() == 1u);
  BOOST_TEST(store->apply({sms_sent}, {sms_success}).empty());
  BOOST_TEST(attempt_rows(backend, sms.id) == 1);
  const auto moved_on = store->find_message("default", plan.message.id);
  BOOST_TEST_REQUIRE(moved_on.has_value());
  for (const auto& task : moved_on->tasks)
    if (task.channel == "sms")
      BOOST_TEST(task.attempt_log.size() == 1u);

  // A later success (after a failure) is an attempts row, next to the first call's row.
  auto retry_plan = make_plan("order-26", {"sms"});
  store->claim({retry_plan});
  const auto& task = retry_plan.tasks[0];
  auto failure = success(task, "gateway timeout");
  failure.outcome = "retryable";
  auto second = success(task, task.provider_request_id);
  second.attempt_no = 2;
  auto wait = change(task.id, task_state::sending, task_state::retry_wait, 1);
  auto again = change(task.id, task_state::retry_wait, task_state::sending, 1);
  auto done = change(task.id, task_state::sending, task_state::sent, 2);
  BOOST_TEST(store->apply({take(task, "t-1"), wait, again, done}, {failure, second}).size() == 4u);
  BOOST_TEST(attempt_rows(backend, task.id) == 2);
  auto retried = store->find_message("default", retry_plan.message.id);
  BOOST_TEST_REQUIRE(retried.has_value());
  const auto& log = retried->tasks.at(0).attempt_log;
  BOOST_TEST_REQUIRE(log.size() == 2u);
  BOOST_TEST(log[0].outcome == "retryable");
  BOOST_TEST(log[1].outcome == "success");
  BOOST_TEST(log[1].attempt_no == 2u);
}

inline void find_message_returns_message_tasks_and_attempts(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-30", {"wechat", "app"});
  store->claim({plan});
  BOOST_TEST(!store->find_message("default", "no-such-message").has_value());

  auto view = store->find_message("default", plan.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  const auto& m = view->message;
  BOOST_TEST(m.id == plan.message.id);
  BOOST_TEST((m.key == plan.message.key));
  BOOST_TEST(m.template_name == "order_shipped");
  BOOST_TEST((m.params == plan.message.params));
  BOOST_TEST(m.title == "Shipped");
  BOOST_TEST(m.body == plan.message.body);
  BOOST_TEST((m.priority == domain::priority::high));
  BOOST_TEST((m.category == domain::category::transactional));
  BOOST_TEST((m.send_at == plan.message.send_at));
  BOOST_TEST(!m.expire_at.has_value());
  BOOST_TEST(m.trace_id == plan.message.trace_id);
  BOOST_TEST((m.created_at == plan.message.created_at));
  BOOST_TEST((m.recipients == plan.message.recipients));
  BOOST_TEST(m.recipients.size() == 3u);
  BOOST_TEST_REQUIRE(view->tasks.size() == 2u);
  BOOST_TEST(view->tasks[0].channel == "app"); // ordered by channel
  BOOST_TEST(view->tasks[0].recipient == "to-app-u-123");
  BOOST_TEST(view->tasks[0].provider_request_id == plan.tasks[1].provider_request_id);
  BOOST_TEST(view->tasks[0].attempts == 0u);
  BOOST_TEST(view->tasks[0].last_error == "");
  BOOST_TEST(view->tasks[0].attempt_log.empty());
  BOOST_TEST(view->tasks[1].channel == "wechat");
}

// Every unfinished task `which` selects, read `page_size` at a time from the start: each page
// at most that long, in task-id order.
inline std::vector<domain::delivery>
load_all_unfinished(persistence::task_store& store, std::size_t page_size, domain::timestamp now,
                    const persistence::unfinished_filter& which = {}) {
  std::vector<domain::delivery> all;
  std::string after;
  for (;;) {
    auto page = store.load_unfinished(after, page_size, now, which);
    BOOST_TEST_REQUIRE(page.size() <= page_size);
    if (page.empty())
      return all;
    after = page.back().task_id;
    all.insert(all.end(), std::make_move_iterator(page.begin()),
               std::make_move_iterator(page.end()));
  }
}

inline void load_unfinished_pages_in_id_order(store_backend& backend) {
  auto store = backend.open_store();
  std::vector<domain::message_plan> plans;
  for (int i = 0; i < 12; ++i)
    plans.push_back(make_plan("order-p" + std::to_string(i), {"sms", "app"}));
  store->claim(plans);
  // Five tasks finish; one waits for a retry, which is still unfinished.
  std::set<std::string> expected;
  std::vector<state_change> changes;
  for (int i = 0; i < 12; ++i) {
    for (const auto& task : plans[i].tasks)
      expected.insert(task.id);
    if (i < 5) {
      const auto& id = plans[i].tasks[0].id;
      changes.push_back(change(id, task_state::pending, task_state::sending));
      changes.push_back(change(id, task_state::sending, task_state::sent, 1));
      expected.erase(id);
    }
  }
  changes.push_back(change(plans[6].tasks[1].id, task_state::pending, task_state::sending));
  changes.push_back(change(plans[6].tasks[1].id, task_state::sending, task_state::retry_wait, 1));
  BOOST_TEST(store->apply(changes, {}).size() == changes.size());

  const auto seen = load_all_unfinished(*store, 5, micros(1'790'000'100'000'000));
  BOOST_TEST_REQUIRE(seen.size() == expected.size());
  std::vector<std::string> ids;
  for (const auto& d : seen)
    ids.push_back(d.task_id);
  BOOST_TEST((ids == std::vector<std::string>(expected.begin(), expected.end())));

  const auto retrying = std::find_if(
      seen.begin(), seen.end(), [&](const auto& d) { return d.task_id == plans[6].tasks[1].id; });
  BOOST_TEST_REQUIRE((retrying != seen.end()));
  BOOST_TEST((retrying->state == task_state::retry_wait));
  BOOST_TEST(retrying->attempts == 1u);
  BOOST_TEST(retrying->message_id == plans[6].message.id);
  BOOST_TEST(retrying->channel == "app");
  BOOST_TEST(retrying->recipient == "to-app-u-123");
  BOOST_TEST(retrying->title == "Shipped");
  BOOST_TEST(retrying->body == plans[6].message.body);
  BOOST_TEST(retrying->trace_id == plans[6].message.trace_id);
  BOOST_TEST((retrying->priority == domain::priority::high));
  BOOST_TEST((retrying->send_at == plans[6].message.send_at));
  BOOST_TEST((retrying->accepted_at == plans[6].message.created_at));
  BOOST_TEST((retrying->key == plans[6].message.key));
  BOOST_TEST((retrying->recipients == plans[6].message.recipients));
  BOOST_TEST(store->load_unfinished(ids.back(), 5, micros(1'790'000'100'000'000)).empty());

  BOOST_TEST(tasks_in(*store, task_state::sent) == 5u);
  BOOST_TEST(tasks_in(*store, task_state::retry_wait) == 1u);
  BOOST_TEST(tasks_in(*store, task_state::pending) == 18u);
  BOOST_CHECK_NO_THROW(store->ping());
}

inline const domain::timestamp lease_start = micros(1'790'000'010'000'000);
inline const domain::timestamp lease_end = micros(1'790'000'040'000'000);

inline state_change take_lease(const std::string& task_id, task_state from,
                               std::uint32_t attempts = 0) {
  auto c = change(task_id, from, task_state::sending, attempts, 1'790'000'010'000'000);
  c.lease_owner = "node-a";
  c.lease_until = lease_end;
  return c;
}

inline bool has_task(const std::vector<domain::delivery>& page, const std::string& task_id) {
  return std::any_of(page.begin(), page.end(), [&](const auto& d) { return d.task_id == task_id; });
}

// A restarted channel reloads only its own tasks: the channel filter pages through one
// channel's unfinished tasks (all three unfinished states) and nothing of the others; a sweep
// reads only the retries due by its horizon.
inline void load_unfinished_of_one_channel_or_due_by(store_backend& backend) {
  auto store = backend.open_store();
  std::vector<domain::message_plan> plans;
  for (int i = 0; i < 4; ++i)
    plans.push_back(make_plan("order-c" + std::to_string(i), {"sms", "app"}));
  store->claim(plans);
  const auto& retrying = plans[1].tasks[0].id;
  const auto& sending = plans[2].tasks[0].id;
  auto retry = change(retrying, task_state::sending, task_state::retry_wait, 1);
  retry.next_attempt_at = micros(1'790'000'600'000'000);
  std::vector<state_change> changes{change(retrying, task_state::pending, task_state::sending),
                                    retry,
                                    change(sending, task_state::pending, task_state::sending)};
  BOOST_TEST(store->apply(changes, {}).size() == changes.size());

  std::set<std::string> seen;
  for (const auto& d :
       load_all_unfinished(*store, 3, micros(1'890'000'000'000'000), {"sms", {}, {}})) {
    BOOST_TEST(d.channel == "sms");
    seen.insert(d.task_id);
  }
  std::set<std::string> expected;
  for (const auto& plan : plans)
    expected.insert(plan.tasks[0].id); // the sms task of each message
  BOOST_TEST((seen == expected));
  BOOST_TEST(store->load_unfinished("", 100, micros(1'890'000'000'000'000)).size() == 8u);

  // A sweep leaves retries due after its horizon to the retry timer.
  auto due_by = [&](std::int64_t horizon) {
    std::set<std::string> ids;
    for (const auto& d : store->load_unfinished("", 100, micros(1'890'000'000'000'000),
                                                {"sms", micros(horizon), {}}))
      ids.insert(d.task_id);
    return ids;
  };
  BOOST_TEST(due_by(1'790'000'599'999'999).count(retrying) == 0u);
  BOOST_TEST(due_by(1'790'000'599'999'999).size() == 3u);
  BOOST_TEST(due_by(1'790'000'600'000'000).count(retrying) == 1u);
}

// A cluster node sweeps only the partitions it owns: the filter narrows a recovery read to the
// tasks whose message id falls in them, pages through all of them, and owning none reads none.
inline void load_unfinished_of_some_partitions(store_backend& backend) {
  auto store = backend.open_store();
  std::vector<domain::message_plan> plans;
  for (int i = 0; i < 40; ++i)
    plans.push_back(make_plan("order-part" + std::to_string(i), {"sms", "app"}));
  store->claim(plans);
  // The partitions of the first half of the messages are "ours".
  std::set<domain::partition> ours;
  for (std::size_t i = 0; i < plans.size() / 2; ++i)
    ours.insert(domain::partition_of(plans[i].message.id).value());
  std::set<std::string> expected;
  for (const auto& plan : plans)
    if (ours.count(domain::partition_of(plan.message.id).value()) != 0)
      for (const auto& task : plan.tasks)
        expected.insert(task.id);
  const persistence::unfinished_filter owned{
      "", {}, std::vector<domain::partition>(ours.begin(), ours.end())};
  std::set<std::string> seen;
  for (const auto& d : load_all_unfinished(*store, 7, micros(1'890'000'000'000'000), owned)) {
    BOOST_TEST(ours.count(domain::partition_of(d.message_id).value()) == 1u);
    seen.insert(d.task_id);
  }
  BOOST_TEST((seen == expected));
  BOOST_TEST(expected.size() < 2 * plans.size()); // some tasks were left out
  const persistence::unfinished_filter none{"", {}, std::vector<domain::partition>{}};
  BOOST_TEST(store->load_unfinished("", 100, micros(1'890'000'000'000'000), none).empty());
}

// The retry timer holds ids only and reads tasks whole when due: load_deliveries answers the
// unfinished ones among the ids (a leased SENDING one once its lease ran out), whole, in id
// order; finished, unknown and repeated ids add nothing.
inline void load_deliveries_reads_unfinished_tasks_by_id(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-d1", {"sms", "app", "email", "wechat"});
  store->claim({plan});
  const auto& retrying = plan.tasks[0].id;
  const auto& leased = plan.tasks[1].id;
  const auto& sent = plan.tasks[2].id;
  const auto& pending = plan.tasks[3].id;
  auto retry = change(retrying, task_state::sending, task_state::retry_wait, 1);
  retry.next_attempt_at = micros(1'790'000'600'000'000);
  BOOST_TEST(store
                 ->apply({change(retrying, task_state::pending, task_state::sending), retry,
                          take_lease(leased, task_state::pending),
                          change(sent, task_state::pending, task_state::sending),
                          change(sent, task_state::sending, task_state::sent, 1)},
                         {})
                 .size() == 5u);
  const std::vector<std::string> asked{sent, pending, "tsk_unknown", leased, retrying, pending};
  auto ids_of = [](const std::vector<domain::delivery>& page) {
    std::vector<std::string> ids;
    for (const auto& d : page)
      ids.push_back(d.task_id);
    return ids;
  };
  auto sorted = [](std::vector<std::string> ids) {
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  auto during_lease = store->load_deliveries(asked, micros(1'790'000'039'999'999));
  BOOST_TEST((ids_of(during_lease) == sorted({pending, retrying})));
  auto after_lease = store->load_deliveries(asked, lease_end);
  BOOST_TEST((ids_of(after_lease) == sorted({pending, leased, retrying})));
  for (const auto& d : after_lease) {
    BOOST_TEST((d.key == plan.message.key));
    BOOST_TEST(d.title == plan.message.title);
    BOOST_TEST(d.body == plan.message.body);
    BOOST_TEST(!d.recipient.empty());
    BOOST_TEST(d.recipients.size() == plan.message.recipients.size());
    if (d.task_id == retrying) {
      BOOST_TEST((d.state == task_state::retry_wait));
      BOOST_TEST(d.attempts == 1u);
      BOOST_TEST((d.next_attempt_at == micros(1'790'000'600'000'000)));
    }
  }
  BOOST_TEST(store->load_deliveries({}, lease_end).empty());
}

inline void sending_tasks_come_back_when_their_lease_runs_out(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-l1", {"sms", "app", "email"});
  store->claim({plan});
  const auto& leased = plan.tasks[0].id;
  const auto& crashed = plan.tasks[1].id; // SENDING without a lease: taken over at once
  const auto& pending = plan.tasks[2].id;
  BOOST_TEST(store
                 ->apply({take_lease(leased, task_state::pending),
                          change(crashed, task_state::pending, task_state::sending)},
                         {})
                 .size() == 2u);

  auto before = store->load_unfinished("", 10, micros(1'790'000'039'999'999));
  BOOST_TEST(!has_task(before, leased));
  BOOST_TEST(has_task(before, crashed));
  BOOST_TEST(has_task(before, pending));
  auto at_end = store->load_unfinished("", 10, lease_end);
  BOOST_TEST(has_task(at_end, leased));
  auto after = store->load_unfinished("", 10, micros(1'790'000'050'000'000));
  BOOST_TEST_REQUIRE(has_task(after, leased));
  const auto& d =
      *std::find_if(after.begin(), after.end(), [&](const auto& x) { return x.task_id == leased; });
  BOOST_TEST((d.state == task_state::sending));
  BOOST_TEST((d.key == plan.message.key));

  // Taking it over needs the lease to have run out (or to be one's own).
  auto takeover = [&](const char* owner, std::int64_t at) {
    auto c = change(leased, task_state::sending, task_state::sending, 0, at);
    c.lease_owner = owner;
    c.lease_until = micros(at + 30'000'000);
    return c;
  };
  BOOST_TEST(store->apply({takeover("node-b", 1'790'000'039'000'000)}, {}).empty());
  BOOST_TEST(store->apply({takeover("node-a", 1'790'000'039'000'000)}, {}).size() == 1u);
  auto expired = 1'790'000'039'000'000 + 30'000'000; // node-a's renewed lease runs out
  BOOST_TEST(store->apply({takeover("node-b", expired)}, {}).size() == 1u);
  BOOST_TEST(store->apply({takeover("node-c", expired)}, {}).empty()); // node-b won it

  // Leaving SENDING releases the lease: back in RETRY_WAIT it is due whatever `now` says.
  auto wait = change(leased, task_state::sending, task_state::retry_wait, 1, 1'790'000'011'000'000);
  wait.next_attempt_at = micros(1'790'000'070'000'000);
  BOOST_TEST(store->apply({wait}, {}).size() == 1u);
  auto waiting = store->load_unfinished("", 10, lease_start);
  BOOST_TEST_REQUIRE(has_task(waiting, leased));
  const auto& w = *std::find_if(waiting.begin(), waiting.end(),
                                [&](const auto& x) { return x.task_id == leased; });
  BOOST_TEST((w.state == task_state::retry_wait));
  BOOST_TEST((w.next_attempt_at == wait.next_attempt_at));

  // A new lease, then SENT: the lease columns are cleared, not kept.
  BOOST_TEST(store->apply({take_lease(leased, task_state::retry_wait, 1)}, {}).size() == 1u);
  BOOST_TEST(!has_task(store->load_unfinished("", 10, lease_start), leased));
  BOOST_TEST(store->apply({change(leased, task_state::sending, task_state::sent, 2)}, {}).size() ==
             1u);
  auto sql = persistence::connect(backend.url());
  soci::indicator owner_null = soci::i_ok, until_null = soci::i_ok;
  std::string owner;
  long long until = 0;
  *sql << "SELECT lease_owner, lease_until FROM tasks WHERE id = :id", soci::use(leased),
      soci::into(owner, owner_null), soci::into(until, until_null);
  BOOST_TEST((owner_null == soci::i_null));
  BOOST_TEST((until_null == soci::i_null));
  BOOST_TEST(!has_task(store->load_unfinished("", 10, micros(1'890'000'000'000'000)), leased));
}

inline void lease_columns_are_written_as_given(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-l2", {"sms"});
  store->claim({plan});
  BOOST_TEST(store->apply({take_lease(plan.tasks[0].id, task_state::pending)}, {}).size() == 1u);
  auto sql = persistence::connect(backend.url());
  std::string owner;
  long long until = 0;
  *sql << "SELECT lease_owner, lease_until FROM tasks WHERE id = :id", soci::use(plan.tasks[0].id),
      soci::into(owner), soci::into(until);
  BOOST_TEST(owner == "node-a");
  BOOST_TEST(until == domain::to_unix_micros(lease_end));
}

// A new task that may go at once takes one of its channel's places and is inserted SENDING
// under the lease given, with its take's token; the others are inserted as ever.
inline void claim_inserts_tasks_that_go_at_once_taken(store_backend& backend) {
  using namespace std::chrono_literals;
  auto store = backend.open_store();
  const auto now = micros(1'800'000'000'000'001); // the plans' send_at: due
  persistence::claim_takes takes;
  takes.now = now;
  takes.token_prefix = "claim-test-";
  takes.by_channel["sms"] = {2, "node-a/0000000000000001", now + 60s};
  auto later = make_plan("order-k0", {"sms"});
  later.message.send_at = now + 1h; // not due: takes no place
  const auto first = make_plan("order-k1", {"sms", "app"});
  const auto second = make_plan("order-k2", {"sms"});
  const auto third = make_plan("order-k3", {"sms"});
  const auto results = store->claim({later, first, second, third}, takes);
  BOOST_TEST_REQUIRE(results.size() == 4u);
  const auto outcome = [&](std::size_t message, std::size_t task) -> const auto& {
    return results[message].tasks.at(task);
  };
  BOOST_TEST((outcome(0, 0).state == task_state::pending));
  BOOST_TEST(!outcome(0, 0).take_token);
  BOOST_TEST((outcome(1, 0).state == task_state::pending)); // answered as any new task
  BOOST_TEST(outcome(1, 0).take_token.value_or("") == "claim-test-" + first.tasks[0].id);
  BOOST_TEST(!outcome(1, 1).take_token); // app: no places offered
  BOOST_TEST(outcome(2, 0).take_token.has_value());
  BOOST_TEST((outcome(3, 0).state == task_state::pending)); // the places ran out
  BOOST_TEST(!outcome(3, 0).take_token);
  BOOST_TEST(tasks_in(*store, task_state::sending) == 2u);

  auto sql = persistence::connect(backend.url());
  std::string status, owner, token;
  long long until = 0;
  int attempts = -1;
  *sql
      << "SELECT status, lease_owner, lease_until, lease_token, attempts FROM tasks WHERE id = :id",
      soci::use(first.tasks[0].id), soci::into(status), soci::into(owner), soci::into(until),
      soci::into(token), soci::into(attempts);
  BOOST_TEST(status == "SENDING");
  BOOST_TEST(owner == "node-a/0000000000000001");
  BOOST_TEST(until == domain::to_unix_micros(now + 60s));
  BOOST_TEST(token == "claim-test-" + first.tasks[0].id);
  BOOST_TEST(attempts == 0);

  // A resubmission is found, not taken again.
  const auto again = store->claim({first}, takes);
  BOOST_TEST(!again.at(0).tasks.at(0).created);
  BOOST_TEST(!again.at(0).tasks.at(0).take_token);
  // Under its lease the taken task is no one else's; once the lease ran out, recovery finds it
  // SENDING (its call may have been made) like any other.
  const auto ids_of = [](const std::vector<domain::delivery>& tasks) {
    std::set<std::string> ids;
    for (const auto& t : tasks)
      ids.insert(t.task_id);
    return ids;
  };
  BOOST_TEST(ids_of(store->load_unfinished("", 100, now)).count(first.tasks[0].id) == 0u);
  const auto expired = store->load_unfinished("", 100, now + 61s);
  BOOST_TEST(ids_of(expired).count(first.tasks[0].id) == 1u);
  for (const auto& t : expired)
    if (t.task_id == first.tasks[0].id)
      BOOST_TEST((t.state == task_state::sending));
  // The outcome of the take applies with its token, as after a SENDING commit of the channel.
  auto sent = change(first.tasks[0].id, task_state::sending, task_state::sent, 1);
  sent.lease_token = token;
  BOOST_TEST(store->apply({sent}, {}).size() == 1u);
}

inline void next_attempt_at_round_trips(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-n1", {"sms"});
  store->claim({plan});
  const auto& id = plan.tasks[0].id;
  auto wait = change(id, task_state::sending, task_state::retry_wait, 1, 1'790'000'011'000'000);
  wait.next_attempt_at = micros(1'790'000'123'456'789);
  BOOST_TEST(
      store->apply({change(id, task_state::pending, task_state::sending), wait}, {}).size() == 2u);
  auto page = store->load_unfinished("", 10, lease_start);
  BOOST_TEST_REQUIRE(page.size() == 1u);
  BOOST_TEST((page[0].next_attempt_at == wait.next_attempt_at));
  BOOST_TEST(page[0].attempts == 1u);
  auto view = store->find_message("default", plan.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  BOOST_TEST((view->tasks.at(0).next_attempt_at == wait.next_attempt_at));
  // A pending task has none.
  const auto other = make_plan("order-n2", {"sms"});
  store->claim({other});
  bool found = false;
  for (const auto& d : store->load_unfinished("", 10, lease_start))
    if (d.task_id == other.tasks[0].id) {
      found = true;
      BOOST_TEST(!d.next_attempt_at.has_value());
    }
  BOOST_TEST(found);
}

inline void recipients_round_trip(store_backend& backend) {
  auto store = backend.open_store();
  auto plan = make_plan("order-r1", {"sms", "app"});
  plan.message.recipients["wechat"] = "openid-\x01-\n-\\-\"-'";
  store->claim({plan});
  auto view = store->find_message("default", plan.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  BOOST_TEST((view->message.recipients == plan.message.recipients));
  auto page = store->load_unfinished("", 10, lease_start);
  BOOST_TEST_REQUIRE(page.size() == 2u);
  for (const auto& d : page) {
    BOOST_TEST((d.recipients == plan.message.recipients));
    BOOST_TEST((d.key == plan.message.key));
  }
  // No recipients at all is an empty map, not an error.
  auto bare = make_plan("order-r2", {"sms"});
  bare.message.recipients.clear();
  store->claim({bare});
  BOOST_TEST(store->find_message("default", bare.message.id)->message.recipients.empty());
}

/// Drives a task to DEAD (or FAILED) through the states, with its attempts recorded.
inline void finish_badly(persistence::task_store& store, const domain::message_plan& plan,
                         std::size_t task, task_state end, std::uint32_t attempts) {
  const auto& t = plan.tasks.at(task);
  std::vector<state_change> changes;
  std::vector<persistence::attempt_record> records;
  task_state at = task_state::pending;
  for (std::uint32_t n = 1; n <= attempts; ++n) {
    changes.push_back(change(t.id, at, task_state::sending, n - 1));
    const bool last = n == attempts;
    const task_state next = last ? end : task_state::retry_wait;
    changes.push_back(change(t.id, task_state::sending, next, n, 1'790'000'020'000'000 + n,
                             "error " + std::to_string(n)));
    persistence::attempt_record a;
    a.task_id = t.id;
    a.attempt_no = n;
    a.provider_request_id = t.provider_request_id;
    a.outcome = last && end == task_state::failed ? "permanent" : "retryable";
    a.detail = "error " + std::to_string(n);
    a.started_at = micros(1'790'000'020'000'000);
    a.finished_at = micros(1'790'000'020'500'000);
    records.push_back(a);
    at = task_state::retry_wait;
  }
  BOOST_TEST_REQUIRE(store.apply(changes, records).size() == changes.size());
}

inline void dead_letters_are_listed_by_channel_and_paged(store_backend& backend) {
  auto store = backend.open_store();
  std::vector<domain::message_plan> plans;
  for (int i = 0; i < 6; ++i)
    plans.push_back(make_plan("order-d" + std::to_string(i), {"sms", "app"}));
  store->claim(plans);
  std::set<std::string> dead_sms, all_dead;
  for (int i = 0; i < 6; ++i) {
    if (i == 5)
      continue; // order-d5 stays pending
    // sms: DEAD after 3 attempts (FAILED after 1 for odd i); app: FAILED for i < 2.
    finish_badly(*store, plans[i], 0, i % 2 == 0 ? task_state::dead : task_state::failed,
                 i % 2 == 0 ? 3 : 1);
    dead_sms.insert(plans[i].tasks[0].id);
    all_dead.insert(plans[i].tasks[0].id);
    if (i < 2) {
      finish_badly(*store, plans[i], 1, task_state::failed, 1);
      all_dead.insert(plans[i].tasks[1].id);
    }
  }
  BOOST_TEST(store->list_dead_letters("default", {}, "", 0).empty());

  auto collect = [&](const std::string& channel, std::size_t page_size) {
    std::vector<persistence::dead_letter> seen;
    std::string after;
    for (;;) {
      auto page = store->list_dead_letters("default", {channel}, after, page_size);
      BOOST_TEST_REQUIRE(page.size() <= page_size);
      if (page.empty())
        break;
      seen.insert(seen.end(), page.begin(), page.end());
      after = page.back().task.task_id;
    }
    return seen;
  };
  auto every = collect("", 2);
  std::vector<std::string> ids;
  for (const auto& letter : every)
    ids.push_back(letter.task.task_id);
  BOOST_TEST((ids == std::vector<std::string>(all_dead.begin(), all_dead.end()))); // id order

  auto sms = collect("sms", 3);
  ids.clear();
  for (const auto& letter : sms) {
    ids.push_back(letter.task.task_id);
    BOOST_TEST(letter.task.channel == "sms");
  }
  BOOST_TEST((ids == std::vector<std::string>(dead_sms.begin(), dead_sms.end())));
  BOOST_TEST(collect("email", 5).empty());

  // Each letter carries its message id and its whole attempt log, in attempt order.
  for (const auto& letter : every) {
    const auto plan = std::find_if(plans.begin(), plans.end(), [&](const auto& p) {
      return std::any_of(p.tasks.begin(), p.tasks.end(),
                         [&](const auto& t) { return t.id == letter.task.task_id; });
    });
    BOOST_TEST_REQUIRE((plan != plans.end()));
    BOOST_TEST(letter.message_id == plan->message.id);
    BOOST_TEST((letter.task.state == task_state::dead || letter.task.state == task_state::failed));
    BOOST_TEST_REQUIRE(letter.task.attempt_log.size() == letter.task.attempts);
    for (std::size_t n = 0; n < letter.task.attempt_log.size(); ++n) {
      BOOST_TEST(letter.task.attempt_log[n].attempt_no == n + 1);
      BOOST_TEST(letter.task.attempt_log[n].task_id == letter.task.task_id);
    }
    BOOST_TEST(letter.task.last_error == "error " + std::to_string(letter.task.attempts));
  }
  const auto three = std::find_if(every.begin(), every.end(),
                                  [&](const auto& l) { return l.task.attempts == 3u; });
  BOOST_TEST_REQUIRE((three != every.end()));
  BOOST_TEST((three->task.state == task_state::dead));
  BOOST_TEST(three->task.attempt_log.at(2).detail == "error 3");
}

inline void replay_moves_a_dead_letter_back_once(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-x1", {"sms", "app"});
  store->claim({plan});
  finish_badly(*store, plan, 0, task_state::dead, 3);
  const auto& id = plan.tasks[0].id;
  const auto now = micros(1'790'000'500'000'000);

  auto first = store->replay("default", id, now);
  BOOST_TEST((first.result == persistence::replay_result::outcome::replayed));
  BOOST_TEST((first.state == task_state::pending));
  BOOST_TEST_REQUIRE(first.task.has_value());
  const auto& d = *first.task;
  BOOST_TEST(d.task_id == id);
  BOOST_TEST(d.message_id == plan.message.id);
  BOOST_TEST((d.key == plan.message.key));
  BOOST_TEST((d.recipients == plan.message.recipients));
  BOOST_TEST(d.channel == "sms");
  BOOST_TEST(d.recipient == plan.tasks[0].recipient);
  BOOST_TEST(d.provider_request_id == plan.tasks[0].provider_request_id); // same id, same key
  BOOST_TEST((d.state == task_state::pending));
  BOOST_TEST(d.attempts == 3u); // attempts are kept
  BOOST_TEST(!d.next_attempt_at.has_value());
  BOOST_TEST(d.body == plan.message.body);

  auto second = store->replay("default", id, now);
  BOOST_TEST((second.result == persistence::replay_result::outcome::not_replayable));
  BOOST_TEST((second.state == task_state::pending));
  BOOST_TEST(!second.task.has_value());

  // Not a dead letter (PENDING from the start): not replayable, nothing changed.
  auto pending = store->replay("default", plan.tasks[1].id, now);
  BOOST_TEST((pending.result == persistence::replay_result::outcome::not_replayable));
  BOOST_TEST((pending.state == task_state::pending));

  auto unknown = store->replay("default", "no-such-task", now);
  BOOST_TEST((unknown.result == persistence::replay_result::outcome::not_found));
  BOOST_TEST(!unknown.task.has_value());

  auto view = store->find_message("default", plan.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  const auto sms = std::find_if(view->tasks.begin(), view->tasks.end(),
                                [&](const auto& t) { return t.task_id == id; });
  BOOST_TEST_REQUIRE((sms != view->tasks.end()));
  BOOST_TEST((sms->state == task_state::pending));
  BOOST_TEST(sms->attempts == 3u);
  BOOST_TEST(sms->attempt_log.size() == 3u);
  BOOST_TEST(domain::to_unix_micros(sms->updated_at) == domain::to_unix_micros(now));
  BOOST_TEST(store->list_dead_letters("default", {}, "", 10).empty());
  BOOST_TEST(has_task(store->load_unfinished("", 10, now), id));

  // A FAILED task replays too; then, sent to DEAD again, it can be replayed again.
  finish_badly(*store, plan, 1, task_state::failed, 1);
  BOOST_TEST((store->replay("default", plan.tasks[1].id, now).result ==
              persistence::replay_result::outcome::replayed));
}

/// Of two stores replaying the same dead letter at once, exactly one replays it.
inline void concurrent_replays_replay_once(store_backend& backend) {
  auto store = backend.open_store();
  std::vector<domain::message_plan> plans;
  for (int i = 0; i < 20; ++i)
    plans.push_back(make_plan("order-cr" + std::to_string(i), {"sms"}));
  store->claim(plans);
  for (const auto& plan : plans)
    finish_badly(*store, plan, 0, task_state::failed, 1);
  constexpr int workers = 4;
  std::vector<int> replayed(workers, 0);
  std::vector<std::string> errors(workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      try {
        auto mine = persistence::open_task_store(backend.url(), false);
        for (const auto& plan : plans)
          if (mine->replay("default", plan.tasks[0].id, micros(1'790'000'600'000'000)).result ==
              persistence::replay_result::outcome::replayed)
            ++replayed[w];
      } catch (const std::exception& e) {
        errors[w] = e.what();
      }
    });
  for (auto& thread : threads)
    thread.join();
  int total = 0;
  for (int w = 0; w < workers; ++w) {
    BOOST_TEST(errors[w] == "");
    total += replayed[w];
  }
  BOOST_TEST(total == 20);
  BOOST_TEST(tasks_in(*store, task_state::pending) == 20u);
}

/// Failover in one transaction: the failing task moves on and the fallback task is claimed, or
/// (the task moved already) nothing is written at all.
inline void fail_over_applies_and_claims_together(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-f1", {"sms"});
  store->claim({plan});
  const auto& sms = plan.tasks[0].id;
  BOOST_TEST(store->apply({take_lease(sms, task_state::pending)}, {}).size() == 1u);
  auto page = store->load_unfinished("", 10, micros(1'890'000'000'000'000));
  BOOST_TEST_REQUIRE(page.size() == 1u);
  const persistence::fallback_routes to_email{{{"sms", "email"}}, test_id_secret};
  const auto fallback_id = domain::task_of(plan.message.key, "email", "", test_id_secret).id;

  persistence::attempt_record attempt;
  attempt.task_id = sms;
  attempt.attempt_no = 1;
  attempt.provider_request_id = plan.tasks[0].provider_request_id;
  attempt.outcome = "permanent";
  attempt.detail = "unknown number";
  attempt.started_at = micros(1'790'000'020'000'000);
  attempt.finished_at = micros(1'790'000'020'100'000);
  auto failed =
      change(sms, task_state::sending, task_state::failed, 1, 1'790'000'021'000'000, "unknown");
  auto failed_over = store->fail_over(failed, {attempt}, page[0], to_email);
  BOOST_TEST_REQUIRE((failed_over.result == persistence::failover_result::outcome::failed_over));
  BOOST_TEST_REQUIRE(failed_over.chain.size() == 1u);
  const auto& result = failed_over.chain[0].claim;
  BOOST_TEST(result.message_id == plan.message.id);
  BOOST_TEST_REQUIRE(result.tasks.size() == 1u);
  BOOST_TEST(result.tasks[0].created);
  BOOST_TEST(result.tasks[0].channel == "email");
  BOOST_TEST(result.tasks[0].task_id == fallback_id);

  // Again, from a state the task has left: nothing applies, nothing is written.
  auto again = store->fail_over(failed, {attempt}, page[0], to_email);
  BOOST_TEST((again.result == persistence::failover_result::outcome::moved_on));
  BOOST_TEST(again.chain.empty());
  auto view = store->find_message("default", plan.message.id);
  BOOST_TEST_REQUIRE(view.has_value());
  BOOST_TEST_REQUIRE(view->tasks.size() == 2u);
  BOOST_TEST(view->tasks[0].channel == "email");
  BOOST_TEST(view->tasks[0].recipient == plan.message.recipients.at("email"));
  BOOST_TEST((view->tasks[1].state == task_state::failed));
  BOOST_TEST(view->tasks[1].attempt_log.size() == 1u);
  BOOST_TEST(total_tasks(*store) == 2u);

  // A change that does not apply writes neither its attempts nor the fallback.
  const auto other = make_plan("order-f2", {"sms"});
  store->claim({other});
  auto stale = change(other.tasks[0].id, task_state::sending, task_state::failed, 1);
  attempt.task_id = other.tasks[0].id;
  auto other_failed = page[0];
  other_failed.task_id = other.tasks[0].id;
  other_failed.message_id = other.message.id;
  other_failed.key = other.message.key;
  BOOST_TEST((store->fail_over(stale, {attempt}, other_failed, to_email).result ==
              persistence::failover_result::outcome::moved_on));
  BOOST_TEST(store->find_message("default", other.message.id)->tasks.at(0).attempt_log.empty());
  BOOST_TEST(total_tasks(*store) == 3u);
}

/// A failover whose fallback task exists already would send nothing new: nothing is written,
/// the failing task keeps its state (the outside drill lost 231 of 250 SMS this way).
inline void fail_over_to_an_existing_task_writes_nothing(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-f3", {"sms", "email"});
  store->claim({plan});
  const auto& sms = plan.tasks[0].id;
  auto page = store->load_unfinished("", 10, micros(1'790'000'020'000'000));
  const auto pending_sms =
      *std::find_if(page.begin(), page.end(), [&](const auto& d) { return d.task_id == sms; });
  auto suppress = change(sms, task_state::pending, task_state::suppressed, 0, 1'790'000'031'000'000,
                         "failed over to email");
  auto outcome = store->fail_over(suppress, {}, pending_sms, {{{"sms", "email"}}, test_id_secret});
  BOOST_TEST((outcome.result == persistence::failover_result::outcome::fallback_exists));
  BOOST_TEST(outcome.chain.empty());
  BOOST_TEST(tasks_in(*store, task_state::pending) == 2u);
  BOOST_TEST(tasks_in(*store, task_state::suppressed) == 0u);
  BOOST_TEST(total_tasks(*store) == 2u);
}

/// A change sent again with its take's token after its answer was lost is answered as applied;
/// another take's token, or none, is refused as before.
inline void a_change_resent_with_its_token_applies_again(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-t1", {"sms"});
  store->claim({plan});
  const auto& sms = plan.tasks[0].id;
  auto take = take_lease(sms, task_state::pending);
  take.lease_token = "take-1";
  BOOST_TEST(store->apply({take}, {}).size() == 1u);
  BOOST_TEST(store->apply({take}, {}).size() == 1u); // the same take again: already applied
  auto other = take;
  other.lease_token = "take-2";
  BOOST_TEST(store->apply({other}, {}).empty());
  auto untokened = take;
  untokened.lease_token.reset();
  BOOST_TEST(store->apply({untokened}, {}).empty());

  auto sent = change(sms, task_state::sending, task_state::sent, 1, 1'790'000'011'000'000);
  sent.lease_token = "take-1";
  BOOST_TEST(store->apply({sent}, {}).size() == 1u);
  BOOST_TEST(store->apply({sent}, {}).size() == 1u);
  BOOST_TEST(store->apply({take}, {}).empty()); // the take's SENDING is behind the task now
  BOOST_TEST(tasks_in(*store, task_state::sent) == 1u);
}

/// Once another take holds a task (its lease ran out and a sweep took it), a late outcome of
/// the old take is refused: it would overwrite the new take's send.
inline void an_outcome_of_a_superseded_take_is_refused(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-t2", {"sms"});
  store->claim({plan});
  const auto& sms = plan.tasks[0].id;
  auto first = take_lease(sms, task_state::pending);
  first.lease_token = "take-1";
  BOOST_TEST_REQUIRE(store->apply({first}, {}).size() == 1u);
  auto second = change(sms, task_state::sending, task_state::sending, 0, 1'890'000'000'000'000);
  second.lease_owner = "node-b";
  second.lease_until = micros(1'890'000'060'000'000);
  second.lease_token = "take-2";
  BOOST_TEST_REQUIRE(store->apply({second}, {}).size() == 1u); // the first lease ran out

  auto late = change(sms, task_state::sending, task_state::retry_wait, 1, 1'890'000'001'000'000);
  late.lease_token = "take-1";
  BOOST_TEST(store->apply({late}, {}).empty());
  auto sent = change(sms, task_state::sending, task_state::sent, 1, 1'890'000'002'000'000);
  sent.lease_token = "take-2";
  BOOST_TEST(store->apply({sent}, {}).size() == 1u);
  BOOST_TEST(tasks_in(*store, task_state::sent) == 1u);
}

/// A failover sent again with its token after its answer was lost is recognised: the fallback
/// task it finds is the one its first commit created, so the answer is failed_over (with that
/// task, marked repeated), never fallback_exists.
inline void a_failover_sent_again_is_recognised(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-f4", {"sms"});
  store->claim({plan});
  const auto& sms = plan.tasks[0].id;
  auto page = store->load_unfinished("", 10, micros(1'790'000'020'000'000));
  BOOST_TEST_REQUIRE(page.size() == 1u);
  const persistence::fallback_routes to_email{{{"sms", "email"}}, test_id_secret};
  auto suppress = change(sms, task_state::pending, task_state::suppressed, 0, 1'790'000'031'000'000,
                         "failed over to email");
  suppress.lease_token = "failover-1";
  const auto first = store->fail_over(suppress, {}, page[0], to_email);
  BOOST_TEST_REQUIRE((first.result == persistence::failover_result::outcome::failed_over));
  BOOST_TEST(!first.repeated);
  const auto again = store->fail_over(suppress, {}, page[0], to_email);
  BOOST_TEST_REQUIRE((again.result == persistence::failover_result::outcome::failed_over));
  BOOST_TEST(again.repeated); // what it created was counted and dispatched the first time
  BOOST_TEST_REQUIRE(again.chain.size() == 1u);
  BOOST_TEST(again.chain.at(0).claim.tasks.at(0).created);
  BOOST_TEST(again.chain.at(0).claim.tasks.at(0).task_id ==
             first.chain.at(0).claim.tasks.at(0).task_id);
  BOOST_TEST(total_tasks(*store) == 2u);
  auto untokened = suppress;
  untokened.lease_token.reset();
  BOOST_TEST((store->fail_over(untokened, {}, page[0], to_email).result ==
              persistence::failover_result::outcome::moved_on));
}

/// release_leases ends this owner's leases on SENDING tasks only, so recovery takes them at
/// once; other owners' leases and other states are left alone.
inline void released_leases_come_back_at_once(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-r1", {"sms", "app", "email"});
  store->claim({plan});
  const auto& mine = plan.tasks[0].id;
  const auto& theirs = plan.tasks[1].id;
  const auto& earlier = plan.tasks[2].id;
  auto their_take = take_lease(theirs, task_state::pending);
  their_take.lease_owner = "node-a2/00000000000001f2"; // a name that merely starts like ours
  auto earlier_take = take_lease(earlier, task_state::pending);
  earlier_take.lease_owner = "node-a/0000000000009c0d"; // one of our earlier processes
  BOOST_TEST(
      store->apply({take_lease(mine, task_state::pending), their_take, earlier_take}, {}).size() ==
      3u);
  const auto now = micros(1'790'000'020'000'000);
  BOOST_TEST(!has_task(store->load_unfinished("", 10, now), mine));

  BOOST_TEST(store->release_leases("node-a", now) == 2u);
  auto page = store->load_unfinished("", 10, now);
  BOOST_TEST(has_task(page, mine));
  BOOST_TEST(has_task(page, earlier));
  BOOST_TEST(!has_task(page, theirs));
  BOOST_TEST(store->release_leases("node-a", now) == 0u);

  // A process of node "node-a/x" (port-0 names carry a "/") is not one of node-a's.
  const auto other_plan = make_plan("order-r2", {"sms"});
  store->claim({other_plan});
  auto nested = take_lease(other_plan.tasks[0].id, task_state::pending);
  nested.lease_owner = "node-a/x/0000000000000abc";
  BOOST_TEST(store->apply({nested}, {}).size() == 1u);
  BOOST_TEST(store->release_leases("node-a", now) == 0u);
}

/// Tasks suppressed by failover are dead letters too: listed, and replayable once.
inline void suppressed_tasks_are_listed_and_replayable(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-s1", {"sms"});
  store->claim({plan});
  const auto& sms = plan.tasks[0].id;
  BOOST_TEST(store
                 ->apply({change(sms, task_state::pending, task_state::suppressed, 0,
                                 1'790'000'011'000'000, "failed over to app: circuit open")},
                         {})
                 .size() == 1u);
  auto letters = store->list_dead_letters("", {"sms"}, "", 10);
  BOOST_TEST_REQUIRE(letters.size() == 1u);
  BOOST_TEST((letters[0].task.state == task_state::suppressed));
  BOOST_TEST(letters[0].task.last_error == "failed over to app: circuit open");
  const auto now = micros(1'790'000'500'000'000);
  BOOST_TEST((store->replay("", sms, now).result == persistence::replay_result::outcome::replayed));
  BOOST_TEST(
      (store->replay("", sms, now).result == persistence::replay_result::outcome::not_replayable));
  BOOST_TEST(tasks_in(*store, task_state::pending) == 1u);
}

/// Invariant 1 under contention: eight connections claim the same 1,000 keys at once.
inline void concurrent_claims_create_each_key_once(store_backend& backend) {
  constexpr int workers = 8;
  constexpr std::size_t plans_per_batch = 50; // 100 tasks per claim
  std::vector<domain::message_plan> plans;
  std::map<std::string, std::string> expected; // task id -> channel
  for (int i = 0; i < 500; ++i) {
    plans.push_back(
        make_plan("order-c" + std::to_string(i), {"sms", "app"}, "u-" + std::to_string(i % 7)));
    for (const auto& task : plans.back().tasks)
      expected.emplace(task.id, task.channel);
  }
  BOOST_TEST_REQUIRE(expected.size() == 1000u);
  backend.open_store(); // migrate once, up front

  std::mutex mutex;
  std::condition_variable go;
  int ready = 0;
  std::vector<std::vector<persistence::claim_outcome>> outcomes(workers);
  std::vector<std::string> errors(workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        auto store = persistence::open_task_store(backend.url(), false);
        auto mine = plans;
        std::shuffle(mine.begin(), mine.end(), std::mt19937(static_cast<unsigned>(w + 1)));
        {
          std::unique_lock<std::mutex> lock(mutex);
          ++ready;
          go.notify_all();
          go.wait(lock, [&] { return ready == workers; });
        }
        for (std::size_t at = 0; at < mine.size(); at += plans_per_batch) {
          std::vector<domain::message_plan> batch(
              mine.begin() + static_cast<std::ptrdiff_t>(at),
              mine.begin() +
                  static_cast<std::ptrdiff_t>(std::min(at + plans_per_batch, mine.size())));
          for (auto& result : store->claim(batch))
            for (auto& outcome : result.tasks)
              outcomes[w].push_back(std::move(outcome));
        }
      } catch (const std::exception& e) {
        errors[w] = e.what();
        std::lock_guard<std::mutex> lock(mutex);
        ready = workers; // never leave the others waiting
        go.notify_all();
      }
    });
  }
  for (auto& thread : threads)
    thread.join();

  std::map<std::string, int> created;
  for (int w = 0; w < workers; ++w) {
    BOOST_TEST(errors[w] == "");
    BOOST_TEST(outcomes[w].size() == 1000u);
    for (const auto& outcome : outcomes[w]) {
      auto it = expected.find(outcome.task_id);
      BOOST_TEST_REQUIRE((it != expected.end()));
      BOOST_TEST(it->second == outcome.channel);
      BOOST_TEST((outcome.state == task_state::pending));
      created[outcome.task_id] += outcome.created ? 1 : 0;
    }
  }
  BOOST_TEST(created.size() == 1000u);
  int created_once = 0;
  for (const auto& [id, count] : created)
    created_once += count == 1 ? 1 : 0;
  BOOST_TEST(created_once == 1000);
  auto store = backend.open_store();
  BOOST_TEST(total_tasks(*store) == 1000u);
}

/// Look-ups, listings and replays see only the tenant asked for; an empty tenant sees all.
/// Another tenant's message or task answers exactly as an unknown one.
inline void reads_and_replays_are_scoped_to_a_tenant(store_backend& backend) {
  auto store = backend.open_store();
  const auto mine = make_plan("order-t1", {"sms"}, "u-1", "tenant-a");
  const auto theirs = make_plan("order-t1", {"sms"}, "u-1", "tenant-b");
  store->claim({mine, theirs});
  finish_badly(*store, mine, 0, task_state::dead, 1);
  finish_badly(*store, theirs, 0, task_state::dead, 1);

  BOOST_TEST(store->find_message("tenant-a", mine.message.id).has_value());
  BOOST_TEST(!store->find_message("tenant-a", theirs.message.id).has_value());
  BOOST_TEST(store->find_message("", theirs.message.id).has_value());

  auto letters = store->list_dead_letters("tenant-a", {}, "", 10);
  BOOST_TEST_REQUIRE(letters.size() == 1u);
  BOOST_TEST(letters[0].task.task_id == mine.tasks[0].id);
  BOOST_TEST(store->list_dead_letters("tenant-a", {"sms"}, "", 10).size() == 1u);
  BOOST_TEST(store->list_dead_letters("tenant-c", {}, "", 10).empty());
  BOOST_TEST(store->list_dead_letters("", {}, "", 10).size() == 2u);

  const auto now = micros(1'790'000'500'000'000);
  auto refused = store->replay("tenant-a", theirs.tasks[0].id, now);
  BOOST_TEST((refused.result == persistence::replay_result::outcome::not_found));
  BOOST_TEST(!refused.task.has_value());
  BOOST_TEST(store->list_dead_letters("tenant-b", {}, "", 10).size() == 1u); // left alone
  BOOST_TEST((store->replay("tenant-b", theirs.tasks[0].id, now).result ==
              persistence::replay_result::outcome::replayed));
  BOOST_TEST((store->replay("", mine.tasks[0].id, now).result ==
              persistence::replay_result::outcome::replayed));
}

// The reconciler's read: a channel's SENT tasks whose last change is at or before the window's
// edge, oldest first (ties by id), paged by (sent_at, id), each with the receipts recorded for
// it — e.g. an UNDELIVERED that came while the task was still SENDING and waits to be applied.
inline void sent_tasks_past_their_window_are_read_oldest_first(store_backend& backend) {
  auto store = backend.open_store();
  std::vector<domain::message_plan> plans;
  for (const auto* biz_id : {"order-r1", "order-r2", "order-r3", "order-r4", "order-r5"})
    plans.push_back(make_plan(biz_id, {"sms", "app"}));
  store->claim(plans);
  auto sms = [&](std::size_t i) { return plans[i].tasks[0].id; };
  auto app = [&](std::size_t i) { return plans[i].tasks[1].id; };
  constexpr std::int64_t t0 = 1'790'000'100'000'000;
  auto send_at = [&](const std::string& task_id, std::int64_t at) {
    BOOST_REQUIRE_EQUAL(
        store
            ->apply({change(task_id, task_state::pending, task_state::sending, 0, at - 1),
                     change(task_id, task_state::sending, task_state::sent, 1, at)},
                    {})
            .size(),
        2u);
  };
  // r1 sent first; r2 and r3 at the same moment; r4 after the edge; r5 still SENDING.
  send_at(sms(0), t0 + 10);
  BOOST_REQUIRE_EQUAL(
      store->apply({change(sms(1), task_state::pending, task_state::sending, 0, t0 + 19)}, {})
          .size(),
      1u);
  persistence::receipt_input early;
  early.channel = "sms";
  early.provider_request_id = plans[1].tasks[0].provider_request_id;
  early.receipt = {domain::receipt_status::undelivered, domain::receipt_source::callback,
                   micros(t0 + 19), micros(t0 + 19), "handset off"};
  const auto waiting = store->record_receipts({early}, {}, micros(t0 + 19));
  BOOST_REQUIRE_EQUAL(waiting.size(), 1u);
  BOOST_TEST((waiting[0].result == persistence::receipt_outcome::outcome::waiting));
  BOOST_REQUIRE_EQUAL(
      store->apply({change(sms(1), task_state::sending, task_state::sent, 1, t0 + 20)}, {}).size(),
      1u);
  send_at(sms(2), t0 + 20);
  send_at(sms(3), t0 + 40);
  BOOST_REQUIRE_EQUAL(
      store->apply({change(sms(4), task_state::pending, task_state::sending, 0, t0 + 5)}, {})
          .size(),
      1u);
  send_at(app(0), t0 + 5); // another channel's

  const auto edge = micros(t0 + 30);
  const auto all = store->load_awaiting_receipt("sms", edge, {}, 10, std::nullopt);
  std::vector<std::string> ids;
  for (const auto& a : all)
    ids.push_back(a.task.task_id);
  const std::pair<std::string, std::string> tied = std::minmax(sms(1), sms(2));
  const std::vector<std::string> expected{sms(0), tied.first, tied.second};
  BOOST_TEST(ids == expected, boost::test_tools::per_element());
  for (const auto& a : all) {
    BOOST_TEST((a.task.state == task_state::sent));
    BOOST_TEST(a.task.channel == "sms");
    BOOST_TEST(a.task.attempts == 1u);
    BOOST_TEST(a.task.trace_id.rfind("trace-order-r", 0) == 0u);
    BOOST_TEST(!a.task.provider_request_id.empty());
    if (a.task.task_id == sms(1)) {
      BOOST_REQUIRE_EQUAL(a.receipts.size(), 1u);
      BOOST_TEST((a.receipts[0].status == domain::receipt_status::undelivered));
      BOOST_TEST((a.receipts[0].source == domain::receipt_source::callback));
      BOOST_TEST((a.receipts[0].occurred_at == micros(t0 + 19)));
      BOOST_TEST(a.receipts[0].detail == "handset off");
      BOOST_TEST((a.sent_at == micros(t0 + 20)));
    } else {
      BOOST_TEST(a.receipts.empty());
    }
  }
  BOOST_TEST((all[0].sent_at == micros(t0 + 10)));

  // Paged: the cursor resumes after the last (sent_at, id) read, also inside a tie.
  auto first = store->load_awaiting_receipt("sms", edge, {}, 2, std::nullopt);
  BOOST_REQUIRE_EQUAL(first.size(), 2u);
  auto rest = store->load_awaiting_receipt(
      "sms", edge, {first.back().sent_at, first.back().task.task_id}, 2, std::nullopt);
  BOOST_REQUIRE_EQUAL(rest.size(), 1u);
  BOOST_TEST(rest[0].task.task_id == tied.second);
  BOOST_TEST(store->load_awaiting_receipt("sms", edge, {}, 0, std::nullopt).empty());
  BOOST_TEST(store->load_awaiting_receipt("wechat", edge, {}, 10, std::nullopt).empty());

  // Settled tasks are no longer read.
  BOOST_REQUIRE_EQUAL(
      store->apply({change(sms(0), task_state::sent, task_state::unconfirmed, 1, t0 + 50)}, {})
          .size(),
      1u);
  const auto later = store->load_awaiting_receipt("sms", micros(t0 + 60), {}, 10, std::nullopt);
  BOOST_REQUIRE_EQUAL(later.size(), 3u);
  BOOST_TEST(later.back().task.task_id == sms(3));
}

} // namespace herald::test::task_store_contract

/// Expands every contract test into the enclosing fixture suite (fixture: a store_backend).
#define HERALD_TASK_STORE_CONTRACT_TEST(name)                                                      \
  BOOST_AUTO_TEST_CASE(name) {                                                                     \
    ::herald::test::task_store_contract::name(*this);                                              \
  }

#define HERALD_TASK_STORE_CONTRACT()                                                               \
  HERALD_TASK_STORE_CONTRACT_TEST(migrations_are_idempotent)                                       \
  HERALD_TASK_STORE_CONTRACT_TEST(unmigrated_database_is_refused)                                  \
  HERALD_TASK_STORE_CONTRACT_TEST(concurrent_migrations_agree)                                     \
  HERALD_TASK_STORE_CONTRACT_TEST(claim_creates_then_answers_duplicates)                           \
  HERALD_TASK_STORE_CONTRACT_TEST(same_key_twice_in_one_batch)                                     \
  HERALD_TASK_STORE_CONTRACT_TEST(one_message_with_two_contents_in_one_batch)                      \
  HERALD_TASK_STORE_CONTRACT_TEST(keys_are_not_null_and_unique)                                    \
  HERALD_TASK_STORE_CONTRACT_TEST(apply_is_guarded_and_records_attempts)                           \
  HERALD_TASK_STORE_CONTRACT_TEST(first_success_is_recorded_on_the_task_row)                       \
  HERALD_TASK_STORE_CONTRACT_TEST(find_message_returns_message_tasks_and_attempts)                 \
  HERALD_TASK_STORE_CONTRACT_TEST(load_unfinished_pages_in_id_order)                               \
  HERALD_TASK_STORE_CONTRACT_TEST(load_unfinished_of_one_channel_or_due_by)                        \
  HERALD_TASK_STORE_CONTRACT_TEST(load_unfinished_of_some_partitions)                              \
  HERALD_TASK_STORE_CONTRACT_TEST(load_deliveries_reads_unfinished_tasks_by_id)                    \
  HERALD_TASK_STORE_CONTRACT_TEST(sending_tasks_come_back_when_their_lease_runs_out)               \
  HERALD_TASK_STORE_CONTRACT_TEST(lease_columns_are_written_as_given)                              \
  HERALD_TASK_STORE_CONTRACT_TEST(claim_inserts_tasks_that_go_at_once_taken)                       \
  HERALD_TASK_STORE_CONTRACT_TEST(next_attempt_at_round_trips)                                     \
  HERALD_TASK_STORE_CONTRACT_TEST(recipients_round_trip)                                           \
  HERALD_TASK_STORE_CONTRACT_TEST(dead_letters_are_listed_by_channel_and_paged)                    \
  HERALD_TASK_STORE_CONTRACT_TEST(replay_moves_a_dead_letter_back_once)                            \
  HERALD_TASK_STORE_CONTRACT_TEST(concurrent_replays_replay_once)                                  \
  HERALD_TASK_STORE_CONTRACT_TEST(reads_and_replays_are_scoped_to_a_tenant)                        \
  HERALD_TASK_STORE_CONTRACT_TEST(fail_over_applies_and_claims_together)                           \
  HERALD_TASK_STORE_CONTRACT_TEST(fail_over_to_an_existing_task_writes_nothing)                    \
  HERALD_TASK_STORE_CONTRACT_TEST(a_change_resent_with_its_token_applies_again)                    \
  HERALD_TASK_STORE_CONTRACT_TEST(an_outcome_of_a_superseded_take_is_refused)                      \
  HERALD_TASK_STORE_CONTRACT_TEST(a_failover_sent_again_is_recognised)                             \
  HERALD_TASK_STORE_CONTRACT_TEST(released_leases_come_back_at_once)                               \
  HERALD_TASK_STORE_CONTRACT_TEST(suppressed_tasks_are_listed_and_replayable)                      \
  HERALD_TASK_STORE_CONTRACT_TEST(concurrent_claims_create_each_key_once)                          \
  HERALD_TASK_STORE_CONTRACT_TEST(sent_tasks_past_their_window_are_read_oldest_first)
