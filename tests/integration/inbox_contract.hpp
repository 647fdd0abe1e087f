#pragma once

// What every task_store backend must do with the in-app inbox (migration 0006), written once and
// expanded by HERALD_INBOX_CONTRACT() into a SQLite and a PostgreSQL suite.

#include "receipt_contract.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

namespace herald::test::inbox_contract {

using domain::receipt_status;
using domain::task_state;
using receipt_contract::no_fallbacks;
using receipt_contract::send_first;
using receipt_contract::task_of;
using task_store_contract::make_plan;
using task_store_contract::micros;

constexpr std::int64_t t_item = 1'790'000'100'000'000;

/// The inbox's receipt for `task`: names the task itself, source inbox.
inline persistence::receipt_input inbox_receipt(const domain::task_record& task,
                                                receipt_status status, std::int64_t at) {
  persistence::receipt_input r;
  r.channel = task.channel;
  r.task_id = task.id;
  r.receipt.status = status;
  r.receipt.source = domain::receipt_source::inbox;
  r.receipt.occurred_at = micros(at);
  r.receipt.received_at = micros(at);
  return r;
}

inline persistence::inbox_query query_of(const std::string& user, std::size_t limit,
                                         const std::string& tenant = "default") {
  persistence::inbox_query q;
  q.tenant = tenant;
  q.user_id = user;
  q.limit = limit;
  return q;
}

// A send writes the task's own item once; a resend, even with another time, finds it.
inline void a_send_writes_one_item_keyed_by_the_task(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-i1", {"inapp"});
  store->claim({plan});
  const auto& task = plan.tasks.front();
  const std::vector<std::string> written = {task.id};
  BOOST_TEST(store->deliver_to_inbox({task.id, task.id, "tsk_unknown"}, micros(t_item)) == written,
             boost::test_tools::per_element());
  BOOST_TEST(store->deliver_to_inbox({task.id}, micros(t_item + 5'000'000)) == written,
             boost::test_tools::per_element());
  BOOST_TEST(store->deliver_to_inbox({}, micros(t_item)).empty());
  const auto page = store->list_inbox(query_of("to-inapp-u-123", 10));
  BOOST_REQUIRE_EQUAL(page.items.size(), 1u);
  const auto& item = page.items[0];
  BOOST_TEST(item.task_id == task.id);
  BOOST_TEST(item.tenant == "default");
  BOOST_TEST(item.channel == "inapp");
  BOOST_TEST(item.title == "Shipped");
  BOOST_TEST(item.body == "Order order-i1 shipped");
  BOOST_TEST((item.created_at == micros(t_item))); // the first write's
  BOOST_TEST(!item.read_at.has_value());
  BOOST_TEST(page.unread_count == 1u);
}

// Newest first, resumed after a cursor; other users and tenants never show.
inline void pages_are_newest_first_and_resume_after_the_cursor(store_backend& backend) {
  auto store = backend.open_store();
  std::vector<std::string> ids; // oldest first
  for (int i = 0; i < 5; ++i) {
    const auto plan = make_plan("order-p" + std::to_string(i), {"inapp"});
    store->claim({plan});
    // Two items share a time: the task id orders them.
    store->deliver_to_inbox({plan.tasks[0].id}, micros(t_item + (i == 4 ? 3 : i)));
    ids.push_back(plan.tasks[0].id);
  }
  std::sort(ids.begin() + 3, ids.end()); // the two items at t_item + 3, ascending by id
  const auto other_user = make_plan("order-x", {"inapp"}, "u-456");
  const auto other_tenant = make_plan("order-y", {"inapp"}, "u-123", "tenant-b");
  store->claim({other_user, other_tenant});
  store->deliver_to_inbox({other_user.tasks[0].id, other_tenant.tasks[0].id}, micros(t_item + 9));

  std::vector<std::string> seen;
  auto query = query_of("to-inapp-u-123", 2);
  for (int pages = 0; pages < 4; ++pages) {
    const auto page = store->list_inbox(query);
    BOOST_TEST(page.unread_count == 5u);
    for (const auto& item : page.items)
      seen.push_back(item.task_id);
    if (page.items.size() < 2)
      break;
    query.after =
        persistence::inbox_cursor{page.items.back().created_at, page.items.back().task_id};
  }
  const std::vector<std::string> newest_first(ids.rbegin(), ids.rend());
  BOOST_TEST(seen == newest_first, boost::test_tools::per_element());
  const auto tenant_b = store->list_inbox(query_of("to-inapp-u-123", 10, "tenant-b"));
  BOOST_REQUIRE_EQUAL(tenant_b.items.size(), 1u);
  BOOST_TEST(tenant_b.items[0].task_id == other_tenant.tasks[0].id);
  BOOST_TEST(!store->find_inbox_item("tenant-b", ids[0]).has_value());
  BOOST_TEST(store->find_inbox_item("default", ids[0]).has_value());
  BOOST_TEST(store->find_inbox_item("", ids[0]).has_value());
  BOOST_TEST(!store->find_inbox_item("", "tsk_unknown").has_value());
}

// Receipts from the inbox name the task, move it forward only and mark its item once.
inline void inbox_receipts_mark_items_and_move_tasks_monotonically(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-m1", {"inapp"});
  const auto& task = send_first(*store, plan);
  store->deliver_to_inbox({task.id}, micros(t_item));

  auto read = store->record_receipts({inbox_receipt(task, receipt_status::read, t_item + 10)},
                                     no_fallbacks(), micros(t_item + 10));
  BOOST_REQUIRE_EQUAL(read.size(), 1u);
  BOOST_TEST((read[0].result == persistence::receipt_outcome::outcome::applied));
  BOOST_TEST(read[0].first_time);
  BOOST_TEST(read[0].state == task_state::read);
  auto item = store->find_inbox_item("default", task.id);
  BOOST_REQUIRE(item.has_value());
  BOOST_TEST((item->read_at == micros(t_item + 10)));
  BOOST_TEST(!item->clicked_at.has_value());
  auto unread = query_of("to-inapp-u-123", 10);
  unread.unread_only = true;
  BOOST_TEST(store->list_inbox(unread).items.empty());
  BOOST_TEST(store->list_inbox(unread).unread_count == 0u);

  // Read again later: recorded before, nothing moves, the first read time stays.
  auto again = store->record_receipts({inbox_receipt(task, receipt_status::read, t_item + 20)},
                                      no_fallbacks(), micros(t_item + 20));
  BOOST_TEST((again[0].result == persistence::receipt_outcome::outcome::unchanged));
  BOOST_TEST(!again[0].first_time);
  BOOST_TEST((store->find_inbox_item("", task.id)->read_at == micros(t_item + 10)));

  auto clicked = store->record_receipts({inbox_receipt(task, receipt_status::clicked, t_item + 30),
                                         inbox_receipt(task, receipt_status::read, t_item + 40)},
                                        no_fallbacks(), micros(t_item + 40));
  BOOST_TEST(clicked[0].state == task_state::clicked);
  item = store->find_inbox_item("", task.id);
  BOOST_TEST((item->clicked_at == micros(t_item + 30)));
  BOOST_TEST((item->read_at == micros(t_item + 10)));
  BOOST_TEST(task_of(*store, plan, task.id).state == task_state::clicked);
  BOOST_TEST(task_of(*store, plan, task.id).receipts.size() == 2u);
}

// A click without a read first is a read too; a receipt naming the task under another channel
// finds nothing.
inline void a_click_is_a_read_and_the_channel_must_match(store_backend& backend) {
  auto store = backend.open_store();
  const auto plan = make_plan("order-c1", {"inapp"});
  const auto& task = send_first(*store, plan);
  store->deliver_to_inbox({task.id}, micros(t_item));
  auto wrong = inbox_receipt(task, receipt_status::clicked, t_item + 5);
  wrong.channel = "sms";
  const auto unknown = store->record_receipts({wrong}, no_fallbacks(), micros(t_item + 5));
  BOOST_TEST((unknown[0].result == persistence::receipt_outcome::outcome::unknown_task));
  BOOST_TEST(!store->find_inbox_item("", task.id)->read_at.has_value());
  store->record_receipts({inbox_receipt(task, receipt_status::clicked, t_item + 5)}, no_fallbacks(),
                         micros(t_item + 5));
  const auto item = store->find_inbox_item("", task.id);
  BOOST_TEST((item->read_at == micros(t_item + 5)));
  BOOST_TEST((item->clicked_at == micros(t_item + 5)));
  BOOST_TEST(store->list_inbox(query_of("to-inapp-u-123", 10)).unread_count == 0u);
}

} // namespace herald::test::inbox_contract

#define HERALD_INBOX_CONTRACT_TEST(name)                                                           \
  BOOST_AUTO_TEST_CASE(name) {                                                                     \
    ::herald::test::inbox_contract::name(*this);                                                   \
  }

/// Expands every inbox contract test into the enclosing fixture suite (a store_backend).
#define HERALD_INBOX_CONTRACT()                                                                    \
  HERALD_INBOX_CONTRACT_TEST(a_send_writes_one_item_keyed_by_the_task)                             \
  HERALD_INBOX_CONTRACT_TEST(pages_are_newest_first_and_resume_after_the_cursor)                   \
  HERALD_INBOX_CONTRACT_TEST(inbox_receipts_mark_items_and_move_tasks_monotonically)               \
  HERALD_INBOX_CONTRACT_TEST(a_click_is_a_read_and_the_channel_must_match)
