// An inapp channel against the built binary: a send puts the message into the user's inbox in
// herald's own database (the task SENT, its provider message id the task id), the inbox pages
// newest first, marking an item read or clicked moves its task like a receipt, and a resend of
// a task whose SENT never landed (a crash) writes no second item.

#include "support/herald_server.hpp"

#include <cstdlib>
#include <string>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;

namespace {

const std::string inbox_config =
    R"({"channels":[{"name":"inapp","type":"inapp"},{"name":"sms","type":"simulated"}],)"
    R"("default_route":["inapp"]})";

std::string submit(running_herald& herald, const std::string& biz_id, int expected = 202) {
  json::object body{{"biz_type", "ORDER_SHIPPED"},
                    {"biz_id", biz_id},
                    {"user_id", "u-1"},
                    {"content", {{"title", "Order " + biz_id}, {"body", "订单 " + biz_id}}}};
  auto response = herald.post(json::serialize(body));
  BOOST_REQUIRE_EQUAL(response.status, expected);
  return std::string(json::parse(response.body).at("message_id").as_string());
}

json::object inbox(running_herald& herald, const std::string& query = {}) {
  auto response = herald.get("/v1/users/u-1/inbox" + query);
  BOOST_REQUIRE_EQUAL(response.status, 200);
  return json::parse(response.body).as_object();
}

std::string text(const json::value& value) {
  return std::string(value.as_string());
}

} // namespace

BOOST_AUTO_TEST_SUITE(inbox_tests)

BOOST_AUTO_TEST_CASE(a_send_lands_in_the_inbox_and_reading_it_moves_the_task) {
  running_herald herald{"", inbox_config};
  std::vector<std::string> messages;
  std::vector<std::string> tasks;
  for (const auto* biz_id : {"order-1", "order-2", "order-3"}) {
    messages.push_back(submit(herald, biz_id));
    const auto task = wait_for_status(herald, messages.back(), "SENT");
    tasks.push_back(text(task.at("task_id")));
    BOOST_TEST(text(task.at("provider_message_id")) == tasks.back());
    BOOST_TEST(text(task.at("recipient")) != ""); // the user id, masked
  }
  auto first = inbox(herald, "?limit=2");
  BOOST_TEST(first.at("unread_count").as_int64() == 3);
  const auto& items = first.at("items").as_array();
  BOOST_REQUIRE_EQUAL(items.size(), 2u);
  BOOST_TEST(text(items[0].at("task_id")) == tasks[2]); // newest first
  BOOST_TEST(text(items[0].at("title")) == "Order order-3");
  BOOST_TEST(text(items[0].at("body")) == "订单 order-3");
  BOOST_TEST(text(items[1].at("task_id")) == tasks[1]);
  auto second = inbox(herald, "?limit=2&after=" + text(first.at("next_after")));
  BOOST_REQUIRE_EQUAL(second.at("items").as_array().size(), 1u);
  BOOST_TEST(text(second.at("items").as_array()[0].at("task_id")) == tasks[0]);
  BOOST_TEST(second.at("next_after").is_null());

  auto read = herald.post_to("/v1/inbox/" + tasks[0] + "/read");
  BOOST_REQUIRE_EQUAL(read.status, 200);
  BOOST_TEST(text(json::parse(read.body).at("state")) == "READ");
  const auto task = first_task(herald, messages[0]);
  BOOST_TEST(text(task.at("status")) == "READ");
  BOOST_TEST(text(task.at("receipts").as_array().at(0).at("source")) == "inbox");
  auto unread = inbox(herald, "?unread=true");
  BOOST_TEST(unread.at("unread_count").as_int64() == 2);
  BOOST_TEST(unread.at("items").as_array().size() == 2u);

  auto clicked = herald.post_to("/v1/inbox/" + tasks[0] + "/clicked");
  BOOST_TEST(text(json::parse(clicked.body).at("state")) == "CLICKED");
  auto again = herald.post_to("/v1/inbox/" + tasks[0] + "/read"); // late, changes nothing
  BOOST_TEST(text(json::parse(again.body).at("state")) == "CLICKED");
  BOOST_TEST(json::parse(again.body).at("duplicate").as_bool());
  const auto page = inbox(herald);
  const auto& item = page.at("items").as_array().at(2);
  BOOST_TEST(item.at("read").as_bool());
  BOOST_TEST(item.as_object().contains("clicked_at"));
  BOOST_TEST(herald.post_to("/v1/inbox/tsk_000000000000000000000000/read").status == 404);

  // Resubmitting changes nothing: the same task, no second item.
  submit(herald, "order-1", 200);
  BOOST_TEST(inbox(herald).at("items").as_array().size() == 3u);
  BOOST_TEST(metric_sum(herald.metrics(), "herald_receipts_total", {"channel=\"inapp\""}) == 2);
}

BOOST_AUTO_TEST_CASE(a_first_run_on_the_embedded_default_fills_the_inbox) {
  running_herald herald{""}; // no --config: the embedded default, whose default route is inapp
  auto answer = herald.post(
      R"({"biz_type":"WELCOME","biz_id":"welcome-1","user_id":"u-1","content":{"body":"Hi"}})");
  BOOST_REQUIRE_EQUAL(answer.status, 202);
  const auto message = text(json::parse(answer.body).at("message_id"));
  const auto task = wait_for_status(herald, message, "SENT");
  BOOST_TEST(text(task.at("channel")) == "inapp");
  const auto listed = inbox(herald);
  BOOST_TEST(listed.at("unread_count").as_int64() == 1);
  BOOST_REQUIRE_EQUAL(listed.at("items").as_array().size(), 1u);
  BOOST_TEST(text(listed.at("items").as_array()[0].at("task_id")) == text(task.at("task_id")));
}

BOOST_AUTO_TEST_CASE(a_resend_after_a_crash_writes_no_second_item) {
  temp_dir dir{"herald-inbox"};
  const auto database = "sqlite:" + dir.file("herald.db");
  std::string message;
  std::string task_id;
  {
    running_herald first{database, inbox_config};
    message = submit(first, "order-9");
    task_id = text(wait_for_status(first, message, "SENT").at("task_id"));
  }
  // What a crash between the inbox write and the SENT commit leaves: the task SENDING under a
  // lease that ran out, its item written.
  write_file(
      dir.file("crash.py"),
      "import sqlite3, sys\n"
      "db = sqlite3.connect(sys.argv[1])\n"
      "db.execute(\"UPDATE tasks SET status = 'SENDING', lease_owner = 'gone/0000000000000000'"
      ", lease_until = 0, provider_message_id = NULL WHERE id = ?\", (sys.argv[2],))\n"
      "db.commit()\n");
  const auto command =
      "python3 '" + dir.file("crash.py") + "' '" + dir.file("herald.db") + "' '" + task_id + "'";
  BOOST_REQUIRE(std::system(command.c_str()) == 0);

  running_herald second{database, inbox_config};
  const auto task = wait_for_status(second, message, "SENT");
  BOOST_TEST(task.at("attempts").as_int64() == 2); // sent again, with the same task
  BOOST_TEST(text(task.at("provider_message_id")) == task_id);
  const auto page = inbox(second);
  BOOST_TEST(page.at("items").as_array().size() == 1u);
  BOOST_TEST(page.at("unread_count").as_int64() == 1);
  BOOST_TEST(
      metric_sum(second.metrics(), "herald_ambiguous_resends_total", {"channel=\"inapp\""}) == 1);
}

BOOST_AUTO_TEST_SUITE_END()
