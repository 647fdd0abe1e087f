// Receipts against the built binary: a webhook channel calling `herald sim-provider`, which
// answers with its own message ids and posts Standard Webhooks signed receipts back to
// POST /v1/receipts/{channel}; GET /v1/messages/{id} and GET /v1/stats show where every task
// ended. And a SIGKILL while receipts stream in loses none that herald acknowledged.

#include "providers/webhook_signature.hpp"
#include "support/herald_process.hpp"
#include "support/herald_server.hpp"

#include <atomic>
#include <csignal>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

const std::string send_secret = "whsec_c2VuZC1zZWNyZXQtZm9yLXRlc3Rz";
const std::string receipt_secret = "whsec_cmVjZWlwdC1zZWNyZXQtZm9yLXRlc3Rz";

/// `herald sim-provider` on a free port, posting receipts to `receipt_to` (empty: none).
struct sim_provider {
  sim_provider(const temp_dir& dir, const std::string& receipt_to,
               std::vector<std::string> extra = {})
      : port(free_port()), process(arguments(receipt_to, std::move(extra)), dir.file("sim.log")) {
    BOOST_REQUIRE(process.wait_ready(host, port));
  }

  std::vector<std::string> arguments(const std::string& receipt_to,
                                     std::vector<std::string> extra) const {
    std::vector<std::string> args{"sim-provider", "--listen", host + ":" + std::to_string(port),
                                  "--dedupe-by-id"};
    if (!receipt_to.empty()) {
      for (const auto& arg : {std::string("--receipt-to"), receipt_to,
                              std::string("--receipt-secret"), receipt_secret})
        args.push_back(arg);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port) + path;
  }

  std::uint16_t port;
  herald_process process;
};

/// herald with webhook channels `names` calling the sim-provider, taking its receipts.
std::string receipts_config(const sim_provider& sim, const std::vector<std::string>& names,
                            int receipt_window_ms) {
  std::string channels;
  for (const auto& name : names) {
    if (!channels.empty())
      channels += ",";
    channels += R"({"name":")" + name + R"(","type":"webhook","url":")" + sim.url("/" + name) +
                R"(","secret":")" + send_secret + R"(","receipt_secret":")" + receipt_secret +
                R"(","status_url":")" + sim.url("/status") + R"(","receipt_window_ms":)" +
                std::to_string(receipt_window_ms) + "}";
  }
  return R"({"channels":[)" + channels + "]}";
}

std::string message_body(const std::string& biz_id, const std::vector<std::string>& channels) {
  json::object to;
  json::array names;
  for (const auto& channel : channels) {
    to[channel] = "+86138000" + biz_id.substr(biz_id.size() - 4);
    names.push_back(json::value(channel));
  }
  json::object body{{"biz_type", "RECEIPTS"}, {"biz_id", biz_id}, {"user_id", "u-" + biz_id},
                    {"channels", names},      {"to", to},         {"content", {{"body", "hi"}}}};
  return json::serialize(body);
}

json::array tasks_of(std::uint16_t port, const std::string& message_id) {
  auto response = request(host, port, "GET", "/v1/messages/" + message_id);
  if (response.status != 200)
    return {};
  return json::parse(response.body).at("tasks").as_array();
}

/// Polls every 50 ms until each message's tasks all satisfy `done`, at most `timeout`.
bool wait_for_tasks(std::uint16_t port, const std::vector<std::string>& message_ids,
                    const std::function<bool(const json::object&)>& done,
                    std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (const auto& id : message_ids) {
      auto tasks = tasks_of(port, id);
      all = !tasks.empty() && std::all_of(tasks.begin(), tasks.end(), [&](const json::value& t) {
        return done(t.as_object());
      });
      if (!all)
        break;
    }
    if (all)
      return true;
    std::this_thread::sleep_for(50ms); // polling a condition, bounded
  }
  return false;
}

std::string status_of(const json::object& task) {
  return std::string(task.at("status").as_string());
}

/// A provider's receipt as herald's contract has it, signed with the channel's secret.
http_response post_receipt(std::uint16_t port, const std::string& channel,
                           const std::string& provider_request_id, const std::string& status,
                           const std::string& webhook_id) {
  json::object data{{"provider_request_id", provider_request_id},
                    {"status", status},
                    {"occurred_at", "2026-12-03T10:00:00Z"}};
  auto body = json::serialize(json::object{{"type", "herald.receipt"}, {"data", data}});
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  auto key = *herald::providers::decode_webhook_secret(receipt_secret);
  return request(
      host, port, "POST", "/v1/receipts/" + channel, body,
      {{"Content-Type", "application/json"},
       {"webhook-id", webhook_id},
       {"webhook-timestamp", std::to_string(now)},
       {"webhook-signature", herald::providers::sign_webhook(key, webhook_id, now, body)}});
}

std::vector<std::string> submit(std::uint16_t port, int count,
                                const std::vector<std::string>& channels,
                                const std::string& prefix) {
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    auto response =
        request(host, port, "POST", "/v1/messages",
                message_body(prefix + std::to_string(10000 + i), channels), json_headers());
    BOOST_REQUIRE_EQUAL(response.status, 202);
    ids.emplace_back(json::parse(response.body).at("message_id").as_string());
  }
  return ids;
}

/// `herald serve` on `port` with dir's herald.db and herald.json.
std::vector<std::string> serve_on_sqlite(std::uint16_t port, const temp_dir& dir) {
  return {"serve",
          "--listen",
          host + ":" + std::to_string(port),
          "--db",
          "sqlite:" + dir.file("herald.db"),
          "--config",
          dir.file("herald.json")};
}

/// herald.json: webhook channels sms (falling back to app) and app on `sim`, both taking
/// receipts for ten minutes, sms the default route.
std::string sms_falling_back_to_app(const sim_provider& sim) {
  std::string channels;
  for (const auto& [name, fallback] : {std::pair{"sms", "app"}, std::pair{"app", ""}})
    channels += std::string(channels.empty() ? "" : ",") + R"({"name":")" + name +
                R"(","type":"webhook","url":")" + sim.url("/" + std::string(name)) +
                R"(","secret":")" + send_secret + R"(","receipt_secret":")" + receipt_secret +
                R"(","receipt_window_ms":600000,"fallback":")" + fallback + "\"}";
  return R"({"channels":[)" + channels + R"(],"default_route":["sms"]})";
}

/// Submits a message sent on sms only, with an address on app for the fallback; its id.
std::string submit_on_sms_only(std::uint16_t port, const std::string& biz_id) {
  auto body = json::parse(message_body(biz_id, {"sms", "app"})).as_object();
  body["channels"] = json::array{"sms"};
  auto accepted =
      request(host, port, "POST", "/v1/messages", json::serialize(body), json_headers());
  BOOST_REQUIRE_EQUAL(accepted.status, 202);
  return std::string(json::parse(accepted.body).at("message_id").as_string());
}

} // namespace

BOOST_AUTO_TEST_SUITE(receipt_tests)

// The whole loop: the provider's message id is kept, duplicated and reordered receipts end
// every task DELIVERED or READ, and the stats add up.
BOOST_AUTO_TEST_CASE(provider_receipts_take_every_task_to_delivered_or_read) {
  temp_dir dir{"herald-receipts"};
  const auto port = free_port();
  const std::string herald_url = "http://127.0.0.1:" + std::to_string(port);
  sim_provider sim(dir, herald_url,
                   {"--receipt-delay-ms", "20", "--reorder-ms", "50", "--duplicate-receipts", "0.5",
                    "--read-rate", "0.3"});
  write_file(dir.file("herald.json"), receipts_config(sim, {"sms", "app"}, 600000));
  herald_process herald({"serve", "--listen", host + ":" + std::to_string(port), "--db",
                         "sqlite:" + dir.file("herald.db"), "--config", dir.file("herald.json")},
                        dir.file("herald.log"));
  BOOST_REQUIRE(herald.wait_ready(host, port));

  auto ids = submit(port, 40, {"sms", "app"}, "rcpt-");
  BOOST_TEST(wait_for_tasks(
                 port, ids,
                 [](const json::object& t) {
                   auto s = status_of(t);
                   return s == "DELIVERED" || s == "READ";
                 },
                 30s),
             herald.log());
  auto tasks = tasks_of(port, ids.front());
  BOOST_REQUIRE(!tasks.empty());
  const auto& task = tasks.front().as_object();
  BOOST_TEST(std::string(task.at("provider_message_id").as_string()).rfind("sim-", 0) == 0u);
  BOOST_TEST(!task.at("receipts").as_array().empty());

  auto stats = json::parse(request(host, port, "GET", "/v1/stats").body);
  const auto& total = stats.at("total").as_object();
  BOOST_TEST(total.at("accepted").to_number<int>() == 80);
  BOOST_TEST(total.at("delivered").to_number<int>() + total.at("read").to_number<int>() == 80);
  BOOST_TEST(total.at("delivery_rate").to_number<double>() == 1.0);
  auto metrics = request(host, port, "GET", "/metrics").body;
  BOOST_TEST(metric_sum(metrics, "herald_receipts_total", {"status=\"delivered\""}) == 80.0);
  BOOST_TEST(metric_sum(metrics, "herald_receipts_rejected_total") == 0.0);
}

// A SIGKILL while receipts stream in: every receipt herald answered 200 is in the database
// after the restart (a 2xx means committed); the rest the provider sends again.
BOOST_AUTO_TEST_CASE(a_sigkill_loses_no_acknowledged_receipt) {
  temp_dir dir{"herald-receipt-kill"};
  const auto port = free_port();
  sim_provider sim(dir, "");
  write_file(dir.file("herald.json"), receipts_config(sim, {"sms"}, 0));
  const auto serve = serve_on_sqlite(port, dir);
  constexpr int messages = 300;
  std::vector<std::string> ids;
  std::vector<std::string> request_ids;
  std::set<std::string> acknowledged;
  {
    herald_process first(serve, dir.file("first.log"));
    BOOST_REQUIRE(first.wait_ready(host, port));
    ids = submit(port, messages, {"sms"}, "kill-");
    BOOST_REQUIRE(wait_for_tasks(
        port, ids, [](const json::object& t) { return status_of(t) == "SENT"; }, 30s));
    for (const auto& id : ids)
      request_ids.emplace_back(tasks_of(port, id).at(0).at("provider_request_id").as_string());

    // Four senders post one receipt per task; the kill lands while they are at it.
    std::mutex mutex;
    std::atomic<int> next{0};
    std::atomic<int> answered{0};
    std::vector<std::thread> senders;
    for (int s = 0; s < 4; ++s)
      senders.emplace_back([&] {
        for (int i = next++; i < messages; i = next++) {
          try {
            auto response = post_receipt(port, "sms", request_ids[i], "delivered",
                                         "msg_kill_" + std::to_string(i));
            if (response.status == 200) {
              std::lock_guard<std::mutex> lock(mutex);
              acknowledged.insert(request_ids[i]);
            }
          } catch (const std::exception&) {
            // herald is gone (killed midway through this one): not acknowledged
          }
          ++answered;
        }
      });
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (answered < messages / 3 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms); // polling a condition, bounded
    first.signal(SIGKILL);
    for (auto& sender : senders)
      sender.join();
    BOOST_REQUIRE(first.wait_exit(10s).has_value());
  }
  BOOST_TEST_MESSAGE("acknowledged before the kill: " << acknowledged.size() << " of " << messages);
  BOOST_REQUIRE(!acknowledged.empty());
  BOOST_TEST(acknowledged.size() < static_cast<std::size_t>(messages)); // the kill came midway

  herald_process second(serve, dir.file("second.log"));
  BOOST_REQUIRE(second.wait_ready(host, port));
  int delivered = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto task = tasks_of(port, ids[i]).at(0).as_object();
    bool recorded = !task.at("receipts").as_array().empty();
    if (acknowledged.count(request_ids[i]) != 0) {
      BOOST_TEST(recorded, "acknowledged receipt lost for " << request_ids[i]);
      BOOST_TEST(status_of(task) == "DELIVERED");
    }
    delivered += status_of(task) == "DELIVERED" ? 1 : 0;
  }
  BOOST_TEST(delivered >= static_cast<int>(acknowledged.size()));
  // The provider sends the unanswered ones again: each lands once.
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (acknowledged.count(request_ids[i]) != 0)
      continue;
    auto response =
        post_receipt(port, "sms", request_ids[i], "delivered", "msg_kill_" + std::to_string(i));
    BOOST_TEST(response.status == 200);
  }
  auto stats = json::parse(request(host, port, "GET", "/v1/stats").body);
  BOOST_TEST(stats.at("total").at("delivered").to_number<int>() == messages);
}

// Hostile and stray callbacks: refused or answered without changing anything.
BOOST_AUTO_TEST_CASE(stray_and_replayed_receipts_change_nothing) {
  temp_dir dir{"herald-receipt-stray"};
  const auto port = free_port();
  sim_provider sim(dir, "");
  write_file(dir.file("herald.json"), receipts_config(sim, {"sms"}, 0));
  herald_process herald({"serve", "--listen", host + ":" + std::to_string(port), "--db",
                         "sqlite:" + dir.file("herald.db"), "--config", dir.file("herald.json")},
                        dir.file("herald.log"));
  BOOST_REQUIRE(herald.wait_ready(host, port));
  auto ids = submit(port, 1, {"sms"}, "stray-");
  BOOST_REQUIRE(wait_for_tasks(
      port, ids, [](const json::object& t) { return status_of(t) == "SENT"; }, 30s));
  std::string request_id(tasks_of(port, ids[0]).at(0).at("provider_request_id").as_string());

  BOOST_TEST(post_receipt(port, "sms", "hrq_unknown", "delivered", "msg_a").status == 404);
  auto first = post_receipt(port, "sms", request_id, "delivered", "msg_b");
  BOOST_TEST(first.status == 200);
  auto replayed = post_receipt(port, "sms", request_id, "delivered", "msg_b");
  BOOST_TEST(replayed.status == 200);
  BOOST_TEST(json::parse(replayed.body).at("duplicate").as_bool());
  auto task = tasks_of(port, ids[0]).at(0).as_object();
  BOOST_TEST(status_of(task) == "DELIVERED");
  BOOST_TEST(task.at("receipts").as_array().size() == 1u);
  auto metrics = request(host, port, "GET", "/metrics").body;
  BOOST_TEST(metric_sum(metrics, "herald_receipts_rejected_total", {"reason=\"unknown_task\""}) ==
             1.0);
  BOOST_TEST(metric_sum(metrics, "herald_receipts_total", {"status=\"delivered\""}) == 1.0);
  BOOST_TEST(herald.log().find("receipts.unknown_task") == std::string::npos); // not at info
}

// Receipts the provider never sends: past the receipt window the reconciler asks the provider
// that has a status API and records its word (source query); a channel without one ends
// UNCONFIRMED. Counted in herald_reconciled_total.
BOOST_AUTO_TEST_CASE(receipts_the_provider_drops_are_reconciled) {
  temp_dir dir{"herald-reconcile"};
  const auto port = free_port();
  sim_provider sim(dir, "http://127.0.0.1:" + std::to_string(port),
                   {"--receipt-delay-ms", "20", "--drop-receipts", "1"});
  auto config = json::parse(receipts_config(sim, {"sms", "app"}, 500)).as_object();
  config["channels"].as_array()[1].as_object().erase("status_url"); // app cannot be asked
  config["receipts"] = json::object{{"reconcile_interval_ms", 100}};
  write_file(dir.file("herald.json"), json::serialize(config));
  herald_process herald({"serve", "--listen", host + ":" + std::to_string(port), "--db",
                         "sqlite:" + dir.file("herald.db"), "--config", dir.file("herald.json")},
                        dir.file("herald.log"));
  BOOST_REQUIRE(herald.wait_ready(host, port));

  auto ids = submit(port, 10, {"sms", "app"}, "reconcile-");
  BOOST_TEST(wait_for_tasks(
                 port, ids,
                 [](const json::object& t) {
                   auto s = status_of(t);
                   return t.at("channel").as_string() == "sms"
                              ? s == "DELIVERED" || s == "READ" || s == "UNDELIVERED"
                              : s == "UNCONFIRMED";
                 },
                 30s),
             herald.log());
  for (const auto& task : tasks_of(port, ids.front())) {
    const auto& receipts = task.at("receipts").as_array();
    if (task.at("channel").as_string() == "sms") {
      BOOST_REQUIRE(!receipts.empty());
      BOOST_TEST(receipts[0].at("source").as_string() == "query");
    } else {
      BOOST_TEST(receipts.empty());
    }
  }
  auto metrics = request(host, port, "GET", "/metrics").body;
  BOOST_TEST(metric_sum(metrics, "herald_reconciled_total", {"channel=\"sms\""}) == 10.0);
  BOOST_TEST(metric_sum(metrics, "herald_reconciled_total",
                        {"channel=\"app\"", "outcome=\"unconfirmed\""}) == 10.0);
  BOOST_TEST(metric_sum(metrics, "herald_receipts_total") == 0.0); // none came by callback
}

// An UNDELIVERED receipt for a SENT task fails it over in the receipt's transaction; the new
// task is sent, and counted like every created task (the receipt path once left it out of
// herald_tasks_created_total).
BOOST_AUTO_TEST_CASE(an_undelivered_receipt_fails_over_and_counts_the_fallback_task) {
  temp_dir dir{"herald-receipt-undelivered"};
  const auto port = free_port();
  sim_provider sim(dir, "", {}); // it reports nothing by itself: the test posts the receipt
  write_file(dir.file("herald.json"), sms_falling_back_to_app(sim));
  herald_process herald(serve_on_sqlite(port, dir), dir.file("herald.log"));
  BOOST_REQUIRE(herald.wait_ready(host, port));
  const std::vector<std::string> ids{submit_on_sms_only(port, "undelivered-20000")};
  BOOST_REQUIRE(wait_for_tasks(
      port, ids, [](const json::object& t) { return status_of(t) == "SENT"; }, 10s));
  const std::string request_id(tasks_of(port, ids[0]).at(0).at("provider_request_id").as_string());
  BOOST_REQUIRE_EQUAL(post_receipt(port, "sms", request_id, "undelivered", "msg_gone").status, 200);

  const bool fallback_sent = wait_for_tasks(
      port, ids,
      [](const json::object& t) {
        return t.at("channel").as_string() == "sms" ? status_of(t) == "UNDELIVERED"
                                                    : status_of(t) == "SENT";
      },
      10s);
  const auto tasks = tasks_of(port, ids[0]);
  BOOST_TEST(fallback_sent, json::serialize(tasks));
  BOOST_TEST(tasks.size() == 2u, json::serialize(tasks));
  const auto metrics = request(host, port, "GET", "/metrics").body;
  BOOST_TEST(metric_sum(metrics, "herald_failovers_total", {"from=\"sms\"", "to=\"app\""}) == 1.0);
  BOOST_TEST(metric_sum(metrics, "herald_tasks_created_total", {"channel=\"app\""}) == 1.0);
  BOOST_TEST(metric_sum(metrics, "herald_tasks_created_total", {"channel=\"sms\""}) == 1.0);
}

// An UNDELIVERED receipt for a task still SENDING is answered 200 "waiting": committed, so a
// SIGKILL before the SENT commit loses nothing — the SENT commit after the restart applies it
// and claims the fallback task (a review found it once lived only in the receipt actor's memory).
BOOST_AUTO_TEST_CASE(an_acknowledged_undelivered_receipt_survives_a_sigkill_before_sent) {
  temp_dir dir{"herald-receipt-undelivered-kill"};
  const auto port = free_port();
  // The provider answers after 1.5 s (within the 2 s call timeout), so the task sits in
  // SENDING long enough for the receipt to come first; it reports nothing by itself.
  sim_provider sim(dir, "", {"--latency-ms", "1500", "--undelivered-rate", "1"});
  write_file(dir.file("herald.json"), sms_falling_back_to_app(sim));
  const auto serve = serve_on_sqlite(port, dir);
  std::vector<std::string> ids;
  {
    herald_process first(serve, dir.file("first.log"));
    BOOST_REQUIRE(first.wait_ready(host, port));
    ids.push_back(submit_on_sms_only(port, "undelivered-kill-10000"));
    BOOST_REQUIRE(wait_for_tasks(
        port, ids, [](const json::object& t) { return status_of(t) == "SENDING"; }, 10s));
    std::string request_id(tasks_of(port, ids[0]).at(0).at("provider_request_id").as_string());
    auto answer = post_receipt(port, "sms", request_id, "undelivered", "msg_undelivered");
    BOOST_REQUIRE_EQUAL(answer.status, 200);
    BOOST_REQUIRE(json::parse(answer.body).at("result").as_string() == "waiting");
    first.signal(SIGKILL);
    BOOST_REQUIRE(first.wait_exit(10s).has_value());
  }
  herald_process second(serve, dir.file("second.log"));
  BOOST_REQUIRE(second.wait_ready(host, port));
  // The lease runs out, the call is made again (the provider dedupes it), the task is SENT:
  // the acknowledged UNDELIVERED must then take it on to its fallback channel.
  bool failed_over = wait_for_tasks(
      port, ids,
      [](const json::object& t) {
        return t.at("channel").as_string() != "sms" || status_of(t) == "UNDELIVERED";
      },
      30s);
  auto tasks = tasks_of(port, ids[0]);
  BOOST_TEST(failed_over, json::serialize(tasks));
  BOOST_TEST(tasks.size() == 2u, "no fallback task on app: " << json::serialize(tasks));
}

BOOST_AUTO_TEST_SUITE_END()
