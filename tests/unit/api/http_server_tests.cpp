#include "api/authenticator.hpp"
#include "api/http_server.hpp"
#include "api/routes.hpp"
#include "api/service.hpp"
#include "domain/template_definition.hpp"
#include "domain/time.hpp"
#include "observability/log.hpp"
#include "observability/metrics.hpp"
#include "providers/webhook_signature.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/raw_socket.hpp"

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald;
using test::header_list;
using test::http_connection;
namespace json = boost::json;

namespace {

/// Stands in for the actor system: remembers task ids in memory and answers every call from
/// its own thread, as the real service may. `hold()` keeps submit answers back until
/// `release()`, to have requests in flight on purpose.
class memory_service final : public api::service {
public:
  memory_service() {
    rules_.channels = {"sms", "wechat", "app", "email", "inapp"};
    rules_.routes["ORDER_SHIPPED"].channels = {"sms", "app"};
    worker_ = std::thread([this] { work(); });
  }

  ~memory_service() override { shutdown(); }

  /// Answers everything still queued, then ends the worker; idempotent.
  void shutdown() {
    release();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (worker_.joinable())
      worker_.join();
  }

  const domain::routing_rules& rules() const override { return rules_; }

  const domain::id_secret& id_secret() const override { return id_secret_; }

  void submit(domain::message_plan plan,
              std::function<void(std::variant<persistence::claim_result, api::service_error>)> done)
      override {
    enqueue(
        [this, plan = std::move(plan), done = std::move(done)] {
          if (failure) {
            done(*failure);
            return;
          }
          done(claim(plan));
        },
        true);
  }

  /// Claims the plans one after the other (the real store: in one transaction); remembers
  /// each batch's size in `batch_sizes`.
  void submit_batch(
      std::vector<domain::message_plan> plans,
      std::function<void(std::variant<std::vector<persistence::claim_result>, api::service_error>)>
          done) override {
    enqueue(
        [this, plans = std::move(plans), done = std::move(done)] {
          batch_sizes.push_back(plans.size());
          if (failure) {
            done(*failure);
            return;
          }
          std::vector<persistence::claim_result> results;
          for (const auto& plan : plans)
            results.push_back(claim(plan));
          done(std::move(results));
        },
        true);
  }

  void find_message(std::string tenant, std::string message_id,
                    std::function<void(
                        std::variant<std::optional<persistence::message_view>, api::service_error>)>
                        done) override {
    enqueue(
        [this, tenant, message_id, done = std::move(done)] {
          remember_tenant(tenant);
          auto it = messages_.find(message_id);
          if (it == messages_.end()) {
            done(std::optional<persistence::message_view>{});
            return;
          }
          persistence::message_view view;
          view.message = it->second.message;
          for (const auto& task : it->second.tasks) {
            persistence::task_view item;
            item.task_id = task.id;
            item.channel = task.channel;
            item.recipient = task.recipient;
            item.provider_request_id = task.provider_request_id;
            view.tasks.push_back(item);
          }
          done(std::optional<persistence::message_view>(view));
        },
        false);
  }

  /// One dead letter, "tsk_dead" on sms, until it is replayed.
  void list_dead_letters(
      std::string tenant, persistence::dead_letter_filter filter, std::string after,
      std::size_t limit,
      std::function<void(std::variant<std::vector<persistence::dead_letter>, api::service_error>)>
          done) override {
    enqueue(
        [this, tenant, filter, after, limit, done = std::move(done)] {
          remember_tenant(tenant);
          std::vector<persistence::dead_letter> page;
          if (!replayed_ && (filter.channel.empty() || filter.channel == "sms") &&
              filter.coverage.value_or(domain::coverage::none) == domain::coverage::none &&
              after < "tsk_dead" && limit > 0) {
            persistence::dead_letter letter;
            letter.message_id = "msg_dead";
            letter.task.task_id = "tsk_dead";
            letter.task.channel = "sms";
            letter.task.recipient = "+8613800000000";
            letter.task.state = domain::task_state::dead;
            letter.task.attempts = 6;
            page.push_back(letter);
          }
          done(std::move(page));
        },
        false);
  }

  /// Knows one task, "tsk_sent" on sms (provider request id "hrq_sent"): SENT until a receipt.
  void
  record_receipt(persistence::receipt_input receipt,
                 std::function<void(std::variant<persistence::receipt_outcome, api::service_error>)>
                     done) override {
    enqueue(
        [this, receipt = std::move(receipt), done = std::move(done)] {
          receipts.push_back(receipt);
          persistence::receipt_outcome outcome;
          const bool inbox_task = receipt.channel == "inapp" && receipt.task_id == "tsk_inbox";
          if (inbox_task ||
              (receipt.channel == "sms" && receipt.provider_request_id == "hrq_sent")) {
            outcome.task_id = inbox_task ? "tsk_inbox" : "tsk_sent";
            outcome.result = persistence::receipt_outcome::outcome::applied;
            outcome.first_time = receipts.size() == 1;
            outcome.state = domain::state_of(receipt.receipt.status);
          }
          done(outcome);
        },
        false);
  }

  /// Admits a seal whose key is new or was stored with the same digest, as the store does.
  void admit_push(domain::push_seal seal,
                  std::function<void(std::variant<bool, api::service_error>)> done) override {
    enqueue(
        [this, seal = std::move(seal), done = std::move(done)] {
          auto [stored, added] =
              seals.emplace(std::tuple{seal.channel, seal.signed_at, seal.nonce}, seal.digest);
          done(added || stored->second == seal.digest);
        },
        false);
  }

  /// sms: 3 SENT and 1 DELIVERED tasks, whatever the query (remembered in `stats_asked`).
  void cluster(std::function<void(domain::cluster_view)> done) override {
    enqueue(
        [done = std::move(done)] {
          domain::member_view self{
              "n1", "127.0.0.1:7101", true, domain::parse_rfc3339("2026-12-04T10:00:00Z"), 171, 2};
          domain::member_view peer{"n2", "127.0.0.1:7102", false, std::nullopt, 85, 0};
          done({"n1", 256, {self, peer}, {{"127.0.0.1:7102", true}, {"127.0.0.1:7103", false}}});
        },
        false);
  }

  void stats(persistence::stats_query which,
             std::function<void(std::variant<persistence::stats_report, api::service_error>)> done)
      override {
    enqueue(
        [this, which = std::move(which), done = std::move(done)] {
          stats_asked.push_back(which);
          done(persistence::stats_report{
              {{"sms",
                {{domain::task_state::sent, 3}, {domain::task_state::delivered, 1}},
                {},
                {}}},
              2});
        },
        false);
  }

  void replay_dead_letter(
      std::string tenant, std::string task_id,
      std::function<void(std::variant<persistence::replay_result, api::service_error>)> done)
      override {
    enqueue(
        [this, tenant, task_id, done = std::move(done)] {
          remember_tenant(tenant);
          persistence::replay_result result;
          using outcome = persistence::replay_result::outcome;
          if (task_id != "tsk_dead") {
            result.result = outcome::not_found;
          } else {
            result.result = replayed_ ? outcome::not_replayable : outcome::replayed;
            result.state = domain::task_state::pending;
            replayed_ = true;
          }
          done(result);
        },
        false);
  }

  /// One inbox item, "tsk_inbox" on inapp for u-123 of tenant "default", whatever the query
  /// (remembered in `inbox_asked`).
  void list_inbox(persistence::inbox_query which,
                  std::function<void(std::variant<persistence::inbox_page, api::service_error>)>
                      done) override {
    enqueue(
        [this, which = std::move(which), done = std::move(done)] {
          inbox_asked.push_back(which);
          persistence::inbox_page page;
          page.items.push_back(inbox_item());
          page.unread_count = 1;
          done(page);
        },
        false);
  }

  void find_inbox_item(
      std::string tenant, std::string task_id,
      std::function<void(std::variant<std::optional<persistence::inbox_item>, api::service_error>)>
          done) override {
    enqueue(
        [this, tenant, task_id, done = std::move(done)] {
          remember_tenant(tenant);
          const bool found = task_id == "tsk_inbox" && (tenant.empty() || tenant == "default");
          done(found ? std::optional<persistence::inbox_item>(inbox_item()) : std::nullopt);
        },
        false);
  }

  static persistence::inbox_item inbox_item() {
    persistence::inbox_item item;
    item.task_id = "tsk_inbox";
    item.tenant = "default";
    item.user_id = "u-123";
    item.channel = "inapp";
    item.title = "Shipped";
    item.body = "Order 1 is on its way";
    item.created_at = *domain::parse_rfc3339("2026-12-01T09:00:00Z");
    return item;
  }

  /// Every zone but "Mars/Olympus_Mons" exists.
  bool known_time_zone(const std::string& name) const override {
    return name != "Mars/Olympus_Mons";
  }

  /// Profiles in memory, by tenant and user id.
  void find_user(
      std::string tenant, std::string user_id,
      std::function<void(std::variant<std::optional<domain::user_profile>, api::service_error>)>
          done) override {
    enqueue(
        [this, tenant, user_id, done = std::move(done)] {
          auto it = users_.find({tenant, user_id});
          done(it == users_.end() ? std::nullopt : std::optional(it->second));
        },
        false);
  }

  void update_user(
      std::string tenant, std::string user_id, domain::user_patch patch,
      std::function<void(std::variant<domain::user_profile, api::service_error>)> done) override {
    enqueue(
        [this, tenant, user_id, patch = std::move(patch), done = std::move(done)] {
          if (failure) {
            done(*failure);
            return;
          }
          auto it = users_.find({tenant, user_id});
          auto current = it == users_.end() ? std::nullopt : std::optional(it->second);
          auto user = domain::apply_patch(current, tenant, user_id, patch,
                                          *domain::parse_rfc3339("2026-12-01T09:00:00Z"));
          users_[{tenant, user_id}] = user;
          done(user);
        },
        false);
  }

  /// Stored templates in memory: the catalog is what save and delete leave, as on a node.
  std::shared_ptr<const domain::template_catalog> stored_templates() const override {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    return std::make_shared<const domain::template_catalog>(catalog_);
  }

  void save_template(std::string tenant, std::string code, domain::template_definition definition,
                     std::function<void(std::variant<domain::stored_template, api::service_error>)>
                         done) override {
    enqueue(
        [this, tenant, code, definition = std::move(definition), done = std::move(done)] {
          auto& versions = templates_[{tenant, code}];
          versions.push_back(
              domain::stored_template{tenant, code, static_cast<std::uint32_t>(versions.size() + 1),
                                      definition, *domain::parse_rfc3339("2026-12-01T09:00:00Z")});
          {
            std::lock_guard<std::mutex> lock(catalog_mutex_);
            catalog_.put(versions.back());
          }
          done(versions.back());
        },
        false);
  }

  void find_template(
      std::string tenant, std::string code, std::uint32_t version,
      std::function<void(std::variant<std::optional<domain::stored_template>, api::service_error>)>
          done) override {
    enqueue(
        [this, tenant, code, version, done = std::move(done)] {
          auto it = templates_.find({tenant, code});
          if (it == templates_.end() || it->second.empty())
            return done(std::nullopt);
          const auto wanted = version == 0 ? it->second.size() : version;
          done(wanted <= it->second.size() ? std::optional(it->second[wanted - 1]) : std::nullopt);
        },
        false);
  }

  void delete_template(std::string tenant, std::string code,
                       std::function<void(std::variant<bool, api::service_error>)> done) override {
    enqueue(
        [this, tenant, code, done = std::move(done)] {
          const bool removed = templates_.erase({tenant, code}) > 0;
          {
            std::lock_guard<std::mutex> lock(catalog_mutex_);
            catalog_.erase(tenant, code);
          }
          done(removed);
        },
        false);
  }

  void readiness(std::function<void(bool, std::string)> done) override {
    enqueue([this, done = std::move(done)] { done(ready, ready ? "" : "database unreachable"); },
            false);
  }

  void hold() {
    std::lock_guard<std::mutex> lock(mutex_);
    holding_ = true;
  }

  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      holding_ = false;
      for (auto& job : held_)
        jobs_.push_back(std::move(job));
      held_.clear();
    }
    wake_.notify_all();
  }

  std::size_t held() {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_.size();
  }

  /// Waits until `count` requests are held back, at most 5 s; whether they are.
  bool wait_held(std::size_t count) {
    for (int i = 0; i < 500 && held() < count; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10)); // polling, bounded
    return held() == count;
  }

  std::atomic<bool> ready{true};

  /// The tenant the last look-up, listing or replay was scoped to.
  std::string last_tenant() {
    std::lock_guard<std::mutex> lock(tenant_mutex_);
    return last_tenant_;
  }
  std::optional<api::service_error> failure; // set before the requests it applies to
  // Written by the worker before it answers; read by the test after the answer came.
  std::vector<persistence::receipt_input> receipts;
  std::map<std::tuple<std::string, std::int64_t, std::string>, std::string> seals; ///< -> digest
  std::vector<persistence::stats_query> stats_asked;
  std::vector<persistence::inbox_query> inbox_asked;
  std::vector<std::size_t> batch_sizes; ///< plans of each submit_batch, in order

private:
  void enqueue(std::function<void()> job, bool holdable) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      (holdable && holding_ ? held_ : jobs_).push_back(std::move(job));
    }
    wake_.notify_all();
  }

  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty())
        return;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  persistence::claim_result claim(const domain::message_plan& plan) { // worker thread only
    persistence::claim_result result;
    result.message_id = plan.message.id;
    for (const auto& task : plan.tasks) {
      bool created = tasks_.emplace(task.id, task).second;
      result.tasks.push_back({task.id, task.channel, domain::task_state::pending, created,
                              std::nullopt, task.recipient});
    }
    messages_.emplace(plan.message.id, plan);
    return result;
  }

  void remember_tenant(const std::string& tenant) {
    std::lock_guard<std::mutex> lock(tenant_mutex_);
    last_tenant_ = tenant;
  }

  domain::routing_rules rules_;
  domain::id_secret id_secret_{"unit-test-installation"};
  std::mutex tenant_mutex_;
  std::string last_tenant_;
  std::map<std::string, domain::task_record> tasks_;     // worker thread only
  std::map<std::string, domain::message_plan> messages_; // worker thread only
  bool replayed_ = false;                                // worker thread only
  // Profiles by tenant and user id; worker thread only.
  std::map<std::pair<std::string, std::string>, domain::user_profile> users_;
  // Every version of every template; worker thread only. The catalog is read by HTTP threads.
  std::map<std::pair<std::string, std::string>, std::vector<domain::stored_template>> templates_;
  mutable std::mutex catalog_mutex_;
  domain::template_catalog catalog_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  std::deque<std::function<void()>> held_;
  bool holding_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

/// The sms channel takes receipts signed with this secret's key.
const std::string receipt_secret = "whsec_c2VjcmV0LWtleS1mb3ItcmVjZWlwdHM=";

/// A provider whose callbacks sign no request (as WeChat's): every one is "verified", sealed
/// under its query's `nonce` with its method and body, and answered with its `echo` (text).
class sealing_provider final : public providers::provider_adapter {
public:
  void send(providers::provider_request, providers::provider_callback) override {}
  bool takes_callbacks() const override { return true; }

  providers::callback_reading
  read_callback(const providers::callback_request& request) const override {
    providers::callback_reading reading;
    reading.result = providers::callback_reading::kind::reply;
    const auto nonce = request.query.substr(0, request.query.find('&'));
    const auto echo = request.query.find("&echo=");
    reading.reply_body = echo == std::string::npos ? "ok" : request.query.substr(echo + 6);
    reading.seal = domain::seal_push("pushes", 1796119200, nonce, request.method, request.body,
                                     std::chrono::seconds{300});
    return reading;
  }
};

api::routes_options routes_options_for(const api::http_options& options,
                                       bool metrics_on_api_listener) {
  api::routes_options routes;
  routes.max_json_depth = options.max_json_depth;
  routes.metrics_on_api_listener = metrics_on_api_listener;
  routes.receipt_keys["sms"] = *providers::decode_webhook_secret(receipt_secret);
  routes.callback_adapters["pushes"] = std::make_shared<sealing_provider>();
  return routes;
}

/// The real server and routes on an ephemeral port, over the in-memory service; open access
/// unless `auth` is given.
struct server_fixture {
  explicit server_fixture(api::http_options options = small_options(),
                          const api::authenticator* auth = nullptr,
                          bool metrics_on_api_listener = true)
      : clock(*domain::parse_rfc3339("2026-12-01T10:00:00Z")),
        routes(service, counters, clock, auth ? *auth : open,
               routes_options_for(options, metrics_on_api_listener)),
        server(options, routes.handler()) {
    server.start();
    port = server.port();
  }

  // The service answers its last callbacks before the routes and metrics they use go away,
  // as the real actor system must.
  ~server_fixture() {
    server.stop();
    service.shutdown();
  }

  static api::http_options small_options() {
    api::http_options options;
    options.port = 0;
    options.io_threads = 2;
    return options;
  }

  test::http_response post(const std::string& body, header_list headers = test::json_headers()) {
    return test::request("127.0.0.1", port, "POST", "/v1/messages", body, headers);
  }

  test::http_response get(const std::string& target, header_list headers = {}) {
    return test::request("127.0.0.1", port, "GET", target, {}, headers);
  }

  test::http_response request(const std::string& method, const std::string& target,
                              const std::string& body, header_list headers) {
    return test::request("127.0.0.1", port, method, target, body, headers);
  }

  memory_service service;
  herald::metrics counters;
  domain::manual_clock clock;
  api::open_access open;
  api::routes routes;
  api::http_server server;
  std::uint16_t port = 0;
};

const std::string shipped =
    R"({"biz_type":"ORDER_SHIPPED","biz_id":"o-1","user_id":"u-1","channels":["sms","app"],)"
    R"("to":{"sms":"+8613800000000","app":"device-token-1"},)"
    R"("content":{"title":"t","body":"b"}})";

json::object error_of(const test::http_response& response) {
  BOOST_TEST(response.header("content-type") == "application/json");
  auto body = json::parse(response.body);
  return body.as_object().at("error").as_object();
}

std::string text(const json::value& value) {
  return json::value_to<std::string>(value);
}

bool is_hex32(const std::string& id) {
  return id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

/// Keeps the request logs of these tests off the console unless something is wrong.
struct quiet_logs {
  quiet_logs() { log::init(log::level::warn); }
};

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(quiet_logs);

BOOST_AUTO_TEST_SUITE(http_server_tests)

BOOST_FIXTURE_TEST_CASE(health_endpoint_answers, server_fixture) {
  auto response = get("/healthz");
  BOOST_TEST(response.status == 200);
  BOOST_TEST(response.body == R"({"status":"ok"})");
  BOOST_TEST(response.header("content-type") == "application/json");
  BOOST_TEST(is_hex32(response.header("x-trace-id")));
}

BOOST_FIXTURE_TEST_CASE(readiness_follows_the_service, server_fixture) {
  BOOST_TEST(get("/readyz").status == 200);
  BOOST_TEST(get("/readyz").body == R"({"status":"ready"})");
  service.ready = false;
  auto response = get("/readyz");
  BOOST_TEST(response.status == 503);
  BOOST_TEST(response.body == R"({"status":"not_ready","reason":"database unreachable"})");
}

BOOST_FIXTURE_TEST_CASE(accepts_then_reports_duplicates, server_fixture) {
  auto first = post(shipped);
  BOOST_TEST(first.status == 202);
  auto second = post(shipped);
  BOOST_TEST(second.status == 200);

  auto a = json::parse(first.body).as_object();
  auto b = json::parse(second.body).as_object();
  BOOST_TEST(text(a.at("message_id")) == text(b.at("message_id")));
  BOOST_REQUIRE(a.at("tasks").as_array().size() == 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& ta = a.at("tasks").as_array()[i].as_object();
    const auto& tb = b.at("tasks").as_array()[i].as_object();
    BOOST_TEST(text(ta.at("task_id")) == text(tb.at("task_id")));
    BOOST_TEST(ta.at("duplicate").as_bool() == false);
    BOOST_TEST(tb.at("duplicate").as_bool() == true);
    BOOST_TEST(text(ta.at("status")) == "PENDING");
  }
  BOOST_TEST(text(a.at("tasks").as_array()[0].at("channel")) == "sms");
  BOOST_TEST(text(a.at("trace_id")) == first.header("x-trace-id"));

  // The message is visible, recipients masked.
  auto view = get("/v1/messages/" + text(a.at("message_id")));
  BOOST_TEST(view.status == 200);
  BOOST_TEST(view.body.find("***0000") != std::string::npos, view.body);
  BOOST_TEST(view.body.find("13800000000") == std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(content_type_must_be_json, server_fixture) {
  auto plain = post(shipped, {{"Content-Type", "text/plain"}});
  BOOST_TEST(plain.status == 415);
  BOOST_TEST(text(error_of(plain).at("code")) == "unsupported_media_type");
  BOOST_TEST(post(shipped, {}).status == 415);
  BOOST_TEST(post(shipped, {{"Content-Type", "application/jsonx"}}).status == 415);
  BOOST_TEST(post(shipped, {{"Content-Type", "Application/JSON; charset=utf-8"}}).status == 202);
}

BOOST_FIXTURE_TEST_CASE(body_over_the_limit_is_413, server_fixture) {
  http_connection connection("127.0.0.1", port);
  auto response =
      connection.request("POST", "/v1/messages", std::string(65537, ' '), test::json_headers());
  BOOST_TEST(response.status == 413);
  BOOST_TEST(text(error_of(response).at("code")) == "payload_too_large");
  BOOST_TEST(response.closes());
  BOOST_TEST(connection.closed_by_peer());

  // Exactly at the limit is read and judged on its content.
  auto at_limit = post(std::string(65536, ' '));
  BOOST_TEST(at_limit.status == 400);
  BOOST_TEST(get("/healthz").status == 200);
}

BOOST_FIXTURE_TEST_CASE(chunked_body_over_the_limit_is_413, server_fixture) {
  std::string chunk(40000, ' ');
  std::ostringstream raw;
  raw << "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      << "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 2; ++i)
    raw << std::hex << chunk.size() << "\r\n" << chunk << "\r\n";
  raw << "0\r\n\r\n";
  http_connection connection("127.0.0.1", port);
  BOOST_TEST(connection.raw(raw.str()).status == 413);
}

BOOST_FIXTURE_TEST_CASE(oversized_headers_are_refused, server_fixture) {
  auto response = get("/healthz", {{"X-Padding", std::string(20000, 'a')}});
  BOOST_TEST(response.status == 431);
  BOOST_TEST(text(error_of(response).at("code")) == "headers_too_large");
}

BOOST_FIXTURE_TEST_CASE(malformed_json_is_400, server_fixture) {
  auto response = post(R"({"biz_type":"ORDER_SHIPPED",)");
  BOOST_TEST(response.status == 400);
  auto error = error_of(response);
  BOOST_TEST(text(error.at("code")) == "invalid_request");
  BOOST_TEST(text(error.at("message")).rfind("malformed JSON", 0) == 0u);
}

BOOST_FIXTURE_TEST_CASE(deep_nesting_is_400, server_fixture) {
  std::string deep = R"({"biz_type":"T","biz_id":"b","user_id":"u","params":{"x":)";
  deep += std::string(31, '[') + std::string(31, ']') + "}}"; // 33 levels in total
  auto response = post(deep);
  BOOST_TEST(response.status == 400);
  BOOST_TEST(text(error_of(response).at("message")).find("too deep") != std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(business_errors_keep_their_status, server_fixture) {
  auto response = post(R"({"biz_type":"X","biz_id":"b","user_id":"u","channels":["fax"],)"
                       R"("to":{"fax":"1"},"content":{"body":"b"}})");
  BOOST_TEST(response.status == 422);
  auto error = error_of(response);
  BOOST_TEST(text(error.at("code")) == "unknown_channel");
  BOOST_TEST(text(error.at("field")) == "channels[0]");
}

BOOST_FIXTURE_TEST_CASE(service_errors_keep_their_status, server_fixture) {
  service.failure = api::service_error{503, "overloaded", "ingest queue full", ""};
  auto response = post(shipped);
  BOOST_TEST(response.status == 503);
  BOOST_TEST(response.header("retry-after") == "1");
  BOOST_TEST(text(error_of(response).at("code")) == "overloaded");
}

BOOST_FIXTURE_TEST_CASE(unknown_paths_are_404, server_fixture) {
  auto response = get("/nope");
  BOOST_TEST(response.status == 404);
  BOOST_TEST(text(error_of(response).at("code")) == "not_found");
  BOOST_TEST(get("/v1/messages/unknown-id").status == 404);
  BOOST_TEST(get("/v1/messages/").status == 404);
  BOOST_TEST(get("/v1/messages/a/b").status == 404);
  BOOST_TEST(get("/v1/messages/%00").status == 404);
}

BOOST_FIXTURE_TEST_CASE(wrong_methods_are_405, server_fixture) {
  auto response = test::request("127.0.0.1", port, "DELETE", "/v1/messages");
  BOOST_TEST(response.status == 405);
  BOOST_TEST(response.header("allow") == "GET, POST");
  BOOST_TEST(text(error_of(response).at("code")) == "method_not_allowed");

  auto post_health = test::request("127.0.0.1", port, "POST", "/healthz", "{}");
  BOOST_TEST(post_health.status == 405);
  BOOST_TEST(post_health.header("allow") == "GET");
  BOOST_TEST(test::request("127.0.0.1", port, "DELETE", "/v1/messages/x").status == 405);
  BOOST_TEST(test::request("127.0.0.1", port, "PUT", "/metrics").status == 405);
}

BOOST_FIXTURE_TEST_CASE(keep_alive_serves_several_requests, server_fixture) {
  http_connection connection("127.0.0.1", port);
  auto first = connection.request("GET", "/healthz");
  BOOST_TEST(first.status == 200);
  BOOST_TEST(!first.closes());
  BOOST_TEST(connection.request("POST", "/v1/messages", "{", test::json_headers()).status == 400);
  BOOST_TEST(connection.request("POST", "/v1/messages", shipped, test::json_headers()).status ==
             202);
  BOOST_TEST(connection.request("GET", "/nope").status == 404);
  BOOST_TEST(connection.request("GET", "/healthz").status == 200);
}

BOOST_FIXTURE_TEST_CASE(trace_id_is_echoed, server_fixture) {
  auto by_request_id =
      post(shipped, {{"Content-Type", "application/json"}, {"X-Request-Id", "req-123"}});
  BOOST_TEST(by_request_id.header("x-trace-id") == "req-123");
  BOOST_TEST(text(json::parse(by_request_id.body).at("trace_id")) == "req-123");

  auto by_traceparent =
      get("/healthz", {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
                       {"X-Request-Id", "ignored"}});
  BOOST_TEST(by_traceparent.header("x-trace-id") == "4bf92f3577b34da6a3ce929d0e0e4736");

  auto bad_traceparent =
      get("/healthz", {{"traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
                       {"X-Request-Id", "fallback"}});
  BOOST_TEST(bad_traceparent.header("x-trace-id") == "fallback");

  auto unsafe = get("/healthz", {{"X-Request-Id", "has space"}});
  BOOST_TEST(is_hex32(unsafe.header("x-trace-id")));
  auto too_long = get("/healthz", {{"X-Request-Id", std::string(65, 'a')}});
  BOOST_TEST(is_hex32(too_long.header("x-trace-id")));

  auto error = post("{", {{"Content-Type", "application/json"}, {"X-Request-Id", "e-1"}});
  BOOST_TEST(error.header("x-trace-id") == "e-1");
}

BOOST_FIXTURE_TEST_CASE(metrics_are_prometheus_text, server_fixture) {
  BOOST_TEST(post(shipped).status == 202);
  auto response = get("/metrics");
  BOOST_TEST(response.status == 200);
  BOOST_TEST(response.header("content-type") == "text/plain; version=0.0.4");
  BOOST_TEST(response.body.find("herald_messages_received_total 1") != std::string::npos,
             response.body);
  BOOST_TEST(response.body.find("herald_ingest_latency_seconds") != std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(malformed_http_is_400, server_fixture) {
  http_connection connection("127.0.0.1", port);
  auto response = connection.raw("GARBAGE\x01 / HTTP/1.1\r\n\r\n");
  BOOST_TEST(response.status == 400);
  BOOST_TEST(text(error_of(response).at("code")) == "invalid_request");
  BOOST_TEST(get("/healthz").status == 200);
}

BOOST_FIXTURE_TEST_CASE(expect_continue_is_honoured, server_fixture) {
  http_connection connection("127.0.0.1", port);
  auto response = connection.raw("POST /v1/messages HTTP/1.1\r\nHost: x\r\n"
                                 "Content-Type: application/json\r\nExpect: 100-continue\r\n"
                                 "Content-Length: 1\r\n\r\n{");
  // The interim 100 comes first; the client reads it as a response of its own.
  BOOST_TEST(response.status == 100);
}

BOOST_AUTO_TEST_CASE(overload_is_503_and_drain_waits) {
  auto options = server_fixture::small_options();
  options.max_in_flight = 1;
  server_fixture fixture(options);
  fixture.service.hold();

  std::optional<test::http_response> first;
  std::thread client([&] { first = fixture.post(shipped); });
  BOOST_REQUIRE(fixture.service.wait_held(1));
  BOOST_TEST(fixture.server.in_flight() == 1u);

  auto second = fixture.post(shipped);
  BOOST_TEST(second.status == 503);
  BOOST_TEST(second.header("retry-after") == "1");
  BOOST_TEST(text(error_of(second).at("code")) == "overloaded");

  BOOST_TEST(!fixture.server.wait_idle(std::chrono::milliseconds(50)));
  fixture.service.release();
  BOOST_TEST(fixture.server.wait_idle(std::chrono::seconds(10)));
  client.join();
  BOOST_REQUIRE(first.has_value());
  BOOST_TEST(first->status == 202);
}

BOOST_AUTO_TEST_CASE(answers_after_the_client_left_do_not_crash) {
  server_fixture fixture;
  fixture.service.hold();
  {
    http_connection connection("127.0.0.1", fixture.port);
    std::string raw = "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Content-Length: " +
                      std::to_string(shipped.size()) + "\r\n\r\n" + shipped;
    connection.send(raw);
    BOOST_REQUIRE(fixture.service.wait_held(1));
  }
  fixture.service.release();
  BOOST_TEST(fixture.server.wait_idle(std::chrono::seconds(10)));
  BOOST_TEST(fixture.get("/healthz").status == 200);
}

BOOST_AUTO_TEST_CASE(answers_after_stop_do_not_crash) {
  auto fixture = std::make_unique<server_fixture>();
  fixture->service.hold();
  std::thread client([&, port = fixture->port] {
    try {
      test::request("127.0.0.1", port, "POST", "/v1/messages", shipped, test::json_headers());
    } catch (...) {
      // The server went away: expected.
    }
  });
  BOOST_REQUIRE(fixture->service.wait_held(1));
  fixture->server.stop_accepting();
  BOOST_TEST(!fixture->server.wait_idle(std::chrono::milliseconds(20)));
  fixture->server.stop();
  fixture->service.release(); // answers into a stopped server
  client.join();
  fixture.reset();
}

BOOST_AUTO_TEST_CASE(stop_accepting_refuses_new_connections) {
  server_fixture fixture;
  BOOST_TEST(fixture.get("/healthz").status == 200);
  fixture.server.stop_accepting();
  BOOST_CHECK_THROW(fixture.get("/healthz"), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(a_taken_port_is_a_clear_error) {
  server_fixture first;
  api::http_options options = server_fixture::small_options();
  options.port = first.port;
  api::http_server second(options, first.routes.handler());
  try {
    second.start();
    BOOST_FAIL("start() on a taken port must throw");
  } catch (const std::system_error& e) {
    BOOST_TEST(std::string(e.what()).find("127.0.0.1:" + std::to_string(first.port)) !=
                   std::string::npos,
               e.what());
  }
}

// The port is bound from the start (one another process listens on is found before the
// database is opened), but a client is refused until the server starts rather than left
// waiting in a backlog.
BOOST_AUTO_TEST_CASE(a_bound_listener_refuses_clients_until_the_server_starts) {
  api::bound_listener listener{"127.0.0.1", 0};
  const auto port = listener.port();
  BOOST_TEST(!test::raw_socket{port}.open());
  server_fixture unused; // routes to serve with
  api::http_options options = server_fixture::small_options();
  options.port = port;
  api::http_server server(options, unused.routes.handler());
  server.start(std::move(listener));
  BOOST_TEST(test::request("127.0.0.1", port, "GET", "/healthz").status == 200);
  server.stop();
}

BOOST_AUTO_TEST_CASE(recipients_never_reach_the_log) {
  std::ostringstream lines;
  log::init_to_stream(log::level::debug, lines);
  {
    server_fixture fixture;
    BOOST_TEST(
        fixture.post(shipped, {{"Content-Type", "application/json"}, {"X-Request-Id", "log-1"}})
            .status == 202);
    BOOST_TEST(fixture
                   .post(R"({"biz_type":"ORDER_SHIPPED","biz_id":"o-2","user_id":"u-1",)"
                         R"("channels":["sms"],"to":{"sms":"+8613900000000"}})")
                   .status == 400);
  }
  log::init(log::level::warn);
  auto text = lines.str();
  BOOST_TEST(text.find("log-1") != std::string::npos, text);
  BOOST_TEST(text.find("13800000000") == std::string::npos);
  BOOST_TEST(text.find("13900000000") == std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(dead_letters_are_listed_with_masked_recipients, server_fixture) {
  auto page = get("/v1/dead-letters?channel=sms&limit=1");
  BOOST_TEST(page.status == 200);
  auto body = boost::json::parse(page.body).as_object();
  BOOST_TEST(body.at("dead_letters").as_array().size() == 1u);
  auto& letter = body.at("dead_letters").as_array()[0].as_object();
  BOOST_TEST(letter.at("message_id").as_string() == "msg_dead");
  BOOST_TEST(letter.at("status").as_string() == "DEAD");
  BOOST_TEST(letter.at("recipient").as_string() == "***0000");
  BOOST_TEST(body.at("next_after").as_string() == "tsk_dead"); // a full page may go on

  auto other = boost::json::parse(get("/v1/dead-letters?channel=app").body).as_object();
  BOOST_TEST(other.at("dead_letters").as_array().empty());
  BOOST_TEST(other.at("next_after").is_null());
}

// Without keys a read sees every tenant, or the one `tenant=` names (as /v1/stats does).
BOOST_FIXTURE_TEST_CASE(dead_letters_are_listed_for_the_tenant_named, server_fixture) {
  BOOST_TEST(get("/v1/dead-letters").status == 200);
  BOOST_TEST(service.last_tenant() == "");
  BOOST_TEST(get("/v1/dead-letters?tenant=acme&limit=5").status == 200);
  BOOST_TEST(service.last_tenant() == "acme");
  auto refused = get("/v1/dead-letters?tenant=%00");
  BOOST_TEST(refused.status == 400);
  BOOST_TEST(refused.body.find("\"tenant\"") != std::string::npos, refused.body);
}

BOOST_FIXTURE_TEST_CASE(a_bad_dead_letter_query_is_refused, server_fixture) {
  for (auto target :
       {"/v1/dead-letters?limit=0", "/v1/dead-letters?limit=1001", "/v1/dead-letters?limit=x",
        "/v1/dead-letters?channel=%00", "/v1/dead-letters?limit=10&limit=abc",
        "/v1/dead-letters?channel=a&channel=b"}) {
    auto response = get(target);
    BOOST_TEST(response.status == 400, target);
    BOOST_TEST(response.body.find("invalid_request") != std::string::npos, target);
  }
  BOOST_TEST(request("POST", "/v1/dead-letters", "", {}).status == 405);
}

BOOST_FIXTURE_TEST_CASE(a_query_key_given_twice_is_named_only_when_it_is_utf8, server_fixture) {
  auto named = get("/v1/dead-letters?limit=1&\xc3\xbc=1&\xc3\xbc=2");
  BOOST_TEST(named.status == 400);
  BOOST_TEST(text(error_of(named).at("field")) == "\xc3\xbc");
  BOOST_TEST(text(error_of(named).at("message")).find("given twice") != std::string::npos);
  // A JSON body cannot carry the bytes of a name that is not UTF-8 (the parser would refuse it).
  for (auto target : {"/v1/dead-letters?k\xff=1&k\xff=2", "/v1/stats?\xc0\xaf&\xc0\xaf"}) {
    auto unnamed = get(target);
    BOOST_TEST(unnamed.status == 400);
    const auto error = error_of(unnamed);
    BOOST_TEST(text(error.at("code")) == "invalid_request");
    BOOST_TEST(text(error.at("message")).find("given twice") != std::string::npos, target);
    BOOST_TEST(!error.contains("field"));
  }
}

BOOST_FIXTURE_TEST_CASE(query_keys_are_read_as_sent_and_only_from_the_query, server_fixture) {
  // An escaped name is another key to a proxy that decodes names ("te%6Eant" is "tenant").
  for (auto target : {"/v1/dead-letters?ch%61nnel=sms&channel=app", "/v1/stats?a+b=1",
                      "/v1/users/u-1/inbox?te%6Eant=x&tenant=y"}) {
    auto escaped = get(target);
    BOOST_TEST(escaped.status == 400, target);
    BOOST_TEST(text(error_of(escaped).at("message")).find("not escaped") != std::string::npos);
  }
  // Empty pairs name nothing; a fragment is no query (without "?") and no part of one.
  BOOST_TEST(get("/v1/dead-letters?limit=5&&channel=sms&").status == 200);
  BOOST_TEST(get("/v1/stats#channel=app").status == 200);
  BOOST_TEST(get("/v1/stats?channel=sms#&channel=app").status == 200);
  BOOST_REQUIRE(service.stats_asked.size() == 2u);
  BOOST_TEST(service.stats_asked[0].channel == "");
  BOOST_TEST(service.stats_asked[1].channel == "sms");
}

BOOST_FIXTURE_TEST_CASE(a_dead_letter_is_replayed_once, server_fixture) {
  auto first = request("POST", "/v1/dead-letters/tsk_dead/replay", "", {});
  BOOST_TEST(first.status == 202);
  BOOST_TEST(first.body.find(R"("replayed":true)") != std::string::npos);
  auto second = request("POST", "/v1/dead-letters/tsk_dead/replay", "", {});
  BOOST_TEST(second.status == 409);
  BOOST_TEST(second.body.find("not_replayable") != std::string::npos);
  BOOST_TEST(request("POST", "/v1/dead-letters/tsk_nope/replay", "", {}).status == 404);
  BOOST_TEST(get("/v1/dead-letters/tsk_dead/replay").status == 405);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

/// The real server over a handler that only counts and answers 200, to see which requests
/// reached the application at all.
struct counting_server {
  counting_server()
      : server(server_fixture::small_options(),
               [this](api::http_request request, api::respond_fn respond) {
                 {
                   std::lock_guard<std::mutex> lock(mutex);
                   targets.emplace_back(request.target());
                 }
                 api::http_response response{boost::beast::http::status::ok, 11};
                 response.body() = "handled";
                 respond(std::move(response));
               }) {
    server.start();
  }

  std::vector<std::string> handled() {
    std::lock_guard<std::mutex> lock(mutex);
    return targets;
  }

  std::mutex mutex;
  std::vector<std::string> targets;
  api::http_server server;
};

const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";

/// A POST whose framing headers are `framing`, followed on the same connection by the bytes
/// a front proxy could have taken for the body of this request.
std::string framed_post(const std::string& framing) {
  return "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + framing +
         "\r\n" + smuggled;
}

/// Sends `raw` and checks herald refused it with 400 and closed the connection, and that
/// neither the request nor what follows it reached the handler.
void expect_refused_and_closed(const std::string& raw) {
  counting_server server;
  http_connection connection("127.0.0.1", server.server.port(), std::chrono::seconds(5));
  auto response = connection.raw(raw);
  BOOST_TEST(response.status == 400);
  BOOST_TEST(response.closes());
  BOOST_TEST(connection.closed_by_peer(std::chrono::seconds(2)));
  // The connection is gone, so nothing more of it can reach the handler.
  BOOST_TEST(server.handled().empty());
  if (response.status == 400)
    BOOST_TEST(text(error_of(response).at("code")) == "invalid_request");
}

/// Writes `bytes` on a fresh connection and returns everything the server sends until it
/// closes; gives up (and fails the test) after 5 s. For answers a response parser would
/// misread, such as a HEAD response announcing a body it does not carry.
std::string everything_until_close(std::uint16_t port, const std::string& bytes) {
  namespace asio = boost::asio;
  asio::io_context ioc;
  boost::beast::tcp_stream stream(ioc);
  stream.expires_after(std::chrono::seconds(5));
  stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  asio::write(stream, asio::buffer(bytes));
  std::string received;
  auto buffer = asio::dynamic_buffer(received);
  boost::beast::error_code ec;
  stream.expires_after(std::chrono::seconds(5));
  std::function<void()> read_more = [&] {
    stream.async_read_some(buffer.prepare(4096), [&](boost::beast::error_code e, std::size_t n) {
      buffer.commit(n);
      if (e)
        ec = e;
      else
        read_more();
    });
  };
  read_more();
  ioc.run();
  BOOST_TEST((ec == asio::error::eof), ec.message());
  return received;
}

} // namespace

BOOST_AUTO_TEST_SUITE(http_idle_timeout_tests)

BOOST_AUTO_TEST_CASE(a_connection_that_never_speaks_is_closed) {
  auto options = server_fixture::small_options();
  options.idle_timeout = std::chrono::seconds(1);
  server_fixture fixture(options);
  http_connection silent("127.0.0.1", fixture.port, std::chrono::seconds(5));
  const auto connected = std::chrono::steady_clock::now();
  BOOST_TEST(silent.closed_by_peer(std::chrono::seconds(4)));
  BOOST_TEST((std::chrono::steady_clock::now() - connected >= std::chrono::milliseconds(900)));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(http_head_tests)

BOOST_FIXTURE_TEST_CASE(head_answers_headers_without_a_body, server_fixture) {
  const auto get_response = get("/healthz");
  const std::string answer =
      everything_until_close(port, "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                                   "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  // First the HEAD answer: the GET's status and Content-Length, then at once the next response.
  const auto end_of_head = answer.find("\r\n\r\n");
  BOOST_REQUIRE(end_of_head != std::string::npos);
  const std::string head = answer.substr(0, end_of_head + 4);
  BOOST_TEST(head.rfind("HTTP/1.1 200 OK\r\n", 0) == 0u, head);
  BOOST_TEST(head.find("Content-Length: " + std::to_string(get_response.body.size()) + "\r\n") !=
                 std::string::npos,
             head);
  BOOST_TEST(head.find("Content-Type: application/json") != std::string::npos, head);
  const std::string rest = answer.substr(head.size());
  BOOST_TEST(rest.rfind("HTTP/1.1 200 OK\r\n", 0) == 0u, rest);
  BOOST_TEST(rest.find(get_response.body) != std::string::npos, rest);

  // An error answer to HEAD carries no body either.
  const std::string not_found =
      everything_until_close(port, "HEAD /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  BOOST_TEST(not_found.rfind("HTTP/1.1 404", 0) == 0u, not_found);
  BOOST_TEST(not_found.size() == not_found.find("\r\n\r\n") + 4, not_found);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(http_framing_tests)

BOOST_AUTO_TEST_CASE(transfer_codings_other_than_chunked_are_refused) {
  const std::string length = "Content-Length: " + std::to_string(smuggled.size()) + "\r\n";
  for (const std::string coding : {"identity", "gzip", "chunked, identity", "chunked, chunked"}) {
    const std::string encoding = "Transfer-Encoding: " + coding + "\r\n";
    BOOST_TEST_CONTEXT("Transfer-Encoding: " << coding << " without Content-Length") {
      expect_refused_and_closed(framed_post(encoding));
    }
    BOOST_TEST_CONTEXT("Transfer-Encoding: " << coding << " then Content-Length") {
      expect_refused_and_closed(framed_post(encoding + length));
    }
    BOOST_TEST_CONTEXT("Content-Length then Transfer-Encoding: " << coding) {
      expect_refused_and_closed(framed_post(length + encoding));
    }
  }
}

BOOST_AUTO_TEST_CASE(chunked_with_content_length_is_refused) {
  const std::string chunked_smuggle = "0\r\n\r\n" + smuggled;
  const std::string length = "Content-Length: " + std::to_string(chunked_smuggle.size()) + "\r\n";
  const std::string head =
      "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  expect_refused_and_closed(head + "Transfer-Encoding: chunked\r\n" + length + "\r\n" +
                            chunked_smuggle);
  expect_refused_and_closed(head + length + "Transfer-Encoding: chunked\r\n\r\n" + chunked_smuggle);
}

BOOST_AUTO_TEST_CASE(transfer_encoding_in_http_1_0_is_refused) {
  counting_server server;
  http_connection connection("127.0.0.1", server.server.port(), std::chrono::seconds(5));
  auto response = connection.raw("POST /v1/messages HTTP/1.0\r\nHost: x\r\n"
                                 "Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 "0\r\n\r\n" +
                                 smuggled);
  BOOST_TEST(response.status == 400);
  // An HTTP/1.0 answer without "Connection: keep-alive" closes; and the connection is gone.
  BOOST_TEST(response.header("connection") != "keep-alive");
  BOOST_TEST(connection.closed_by_peer(std::chrono::seconds(2)));
  BOOST_TEST(server.handled().empty());
}

BOOST_AUTO_TEST_CASE(folded_header_lines_are_refused) {
  // The parser would join the lines; a proxy that does not would frame the body differently.
  expect_refused_and_closed(framed_post("Transfer-Encoding:\r\n chunked\r\n") + "0\r\n\r\n");
  expect_refused_and_closed(framed_post("Content-Length:\r\n\t5\r\n"));
  expect_refused_and_closed(framed_post("X-Note: a\r\n b\r\n"));
}

BOOST_AUTO_TEST_CASE(a_header_block_of_bare_line_feeds_is_refused_at_once) {
  // Its end ("\n\n") is no end of headers: without the check it waited for the idle timeout.
  expect_refused_and_closed("POST /v1/messages HTTP/1.1\nHost: x\nContent-Length: 0\n\n");
}

BOOST_AUTO_TEST_CASE(an_endless_chunk_header_is_refused_within_the_header_limit) {
  // Neither the header nor the body limit counts a chunk-size line's extension: only the
  // bounded read buffer stops it (without it, memory grew by 1.5 GB in 24 s).
  const std::string endless_extension = "1;e=" + std::string(64 * 1024, 'a');
  expect_refused_and_closed("POST /v1/messages HTTP/1.1\r\nHost: x\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n" +
                            endless_extension);
}

BOOST_AUTO_TEST_CASE(split_transfer_encoding_headers_are_refused) {
  expect_refused_and_closed(
      framed_post("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n") + "0\r\n\r\n");
}

BOOST_AUTO_TEST_CASE(duplicate_or_conflicting_content_length_is_refused) {
  expect_refused_and_closed(framed_post("Content-Length: 0\r\nContent-Length: 0\r\n"));
  expect_refused_and_closed(framed_post("Content-Length: 0, 0\r\n"));
  expect_refused_and_closed(framed_post("Content-Length: 0\r\nContent-Length: 5\r\n"));
}

BOOST_AUTO_TEST_CASE(plain_chunked_and_plain_length_still_work) {
  counting_server server;
  http_connection connection("127.0.0.1", server.server.port(), std::chrono::seconds(5));
  BOOST_TEST(connection
                 .raw("POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "2\r\n{}\r\n0\r\n\r\n")
                 .status == 200);
  BOOST_TEST(
      connection.raw("POST /length HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}").status ==
      200);
  BOOST_TEST(server.handled() == (std::vector<std::string>{"/chunked", "/length"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

/// The server with a body budget of 256 KiB: four bodies of 60000 bytes leave it 22144.
struct small_budget_server : server_fixture {
  small_budget_server() : server_fixture(options()) {}

  static api::http_options options() {
    auto options = small_options();
    options.max_body_bytes_in_flight = 256 * 1024;
    return options;
  }
};

/// A chunked POST /v1/messages of `body` in chunks of 10000 bytes.
std::string chunked_post(const std::string& body) {
  std::ostringstream out;
  out << "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Transfer-Encoding: chunked\r\n\r\n";
  for (std::size_t at = 0; at < body.size(); at += 10000) {
    const auto chunk = body.substr(at, 10000);
    out << std::hex << chunk.size() << "\r\n" << chunk << "\r\n";
  }
  out << "0\r\n\r\n";
  return out.str();
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(http_body_budget_tests, small_budget_server)

BOOST_AUTO_TEST_CASE(a_chunked_body_reserves_as_it_grows_and_is_refused_when_the_budget_is_full) {
  // Four bodies announced and never sent hold 240000 bytes of the budget.
  std::vector<std::unique_ptr<test::raw_socket>> holders;
  for (int i = 0; i < 4; ++i) {
    holders.push_back(std::make_unique<test::raw_socket>(port));
    holders.back()->send_some("POST /v1/messages HTTP/1.1\r\nHost: x\r\n"
                              "Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n");
  }
  // A 30000-byte chunked body takes its first step (one read buffer, 20480 bytes), which fits,
  // and is refused at the second, which does not, before the rest of it is read.
  const std::string padded = shipped + std::string(30000, ' ');
  BOOST_TEST(test::eventually(
      [&] {
        http_connection connection("127.0.0.1", port, std::chrono::seconds(5));
        const auto response = connection.raw(chunked_post(padded));
        return response.status == 503 && text(error_of(response).at("code")) == "overloaded" &&
               response.header("retry-after") == "1";
      },
      std::chrono::seconds(5)));

  // Their room comes back as they close; 202, not 200: the refused copy stored nothing.
  holders.clear();
  BOOST_TEST(test::eventually(
      [&] {
        http_connection connection("127.0.0.1", port, std::chrono::seconds(5));
        return connection.raw(chunked_post(padded)).status == 202;
      },
      std::chrono::seconds(5)));
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

/// The server with room for two connections.
struct two_connection_server : server_fixture {
  two_connection_server() : server_fixture(options()) {}

  static api::http_options options() {
    auto options = small_options();
    options.max_connections = 2;
    return options;
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(http_connection_cap_tests, two_connection_server)

BOOST_AUTO_TEST_CASE(an_idle_connection_gives_way_to_a_new_one) {
  http_connection oldest("127.0.0.1", port, std::chrono::seconds(5));
  http_connection younger("127.0.0.1", port, std::chrono::seconds(5));
  BOOST_TEST(younger.request("GET", "/healthz").status == 200);

  // Both slots are taken by connections waiting for a request: the oldest makes room.
  BOOST_TEST(get("/healthz").status == 200);
  BOOST_TEST(oldest.closed_by_peer(std::chrono::seconds(5)));
  BOOST_TEST(get("/healthz").status == 200);
}

BOOST_AUTO_TEST_CASE(over_the_cap_with_nothing_idle_is_503) {
  service.hold();
  std::vector<std::thread> clients;
  std::atomic<int> accepted{0};
  for (int i = 0; i < 2; ++i)
    clients.emplace_back([&] {
      const int status = post(shipped).status; // one creates, the other finds it
      accepted += status == 202 || status == 200 ? 1 : 0;
    });
  BOOST_REQUIRE(service.wait_held(2));

  auto refused = get("/healthz");
  BOOST_TEST(refused.status == 503);
  BOOST_TEST(refused.header("retry-after") == "1");
  BOOST_TEST(refused.closes());
  BOOST_TEST(text(error_of(refused).at("code")) == "overloaded");

  service.release();
  for (auto& client : clients)
    client.join();
  BOOST_TEST(accepted.load() == 2);
  BOOST_TEST(get("/healthz").status == 200);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

/// A key text of the documented shape whose secret is `fill` repeated.
std::string key_text(const std::string& id, char fill) {
  return domain::api_key_text(id, std::string(64, fill));
}

domain::api_key stored_key(const std::string& id, char fill, const std::string& tenant,
                           const std::string& scopes) {
  domain::api_key key;
  key.id = id;
  key.tenant = tenant;
  key.scopes = *domain::parse_scopes(scopes);
  key.hash = domain::api_key_hash(key_text(id, fill));
  return key;
}

header_list bearer(const std::string& key, header_list headers = {}) {
  headers.emplace_back("Authorization", "Bearer " + key);
  return headers;
}

/// The server with API keys: "acme" may do everything, "reader" only read, one key revoked.
struct keyed_fixture {
  keyed_fixture() {
    auto revoked_key = stored_key("00000000000000cc", 'c', "acme", "submit,read,admin");
    revoked_key.revoked_at = domain::timestamp{};
    keys.replace({stored_key("00000000000000aa", 'a', "acme", "submit,read,admin"),
                  stored_key("00000000000000bb", 'b', "acme", "read"),
                  stored_key("00000000000000ee", 'e', "acme", "ops"), revoked_key});
  }

  const std::string acme = key_text("00000000000000aa", 'a');
  const std::string reader = key_text("00000000000000bb", 'b');
  const std::string operations = key_text("00000000000000ee", 'e');
  const std::string revoked = key_text("00000000000000cc", 'c');
  api::api_key_table keys;
  server_fixture http{server_fixture::small_options(), &keys};
};

} // namespace

BOOST_AUTO_TEST_SUITE(routes_auth_tests)

BOOST_FIXTURE_TEST_CASE(no_wrong_or_revoked_key_is_401_with_a_challenge, keyed_fixture) {
  const std::string wrong_secret = key_text("00000000000000aa", 'f');
  for (const auto& headers : {header_list{}, bearer(wrong_secret), bearer(revoked),
                              bearer("not-a-key"), header_list{{"Authorization", "Basic eA=="}}}) {
    for (const auto& [method, target] :
         {std::pair{"GET", "/v1/messages/msg_1"}, std::pair{"GET", "/v1/dead-letters"},
          std::pair{"POST", "/v1/dead-letters/tsk_dead/replay"}}) {
      auto response = http.request(method, target, "", headers);
      BOOST_TEST(response.status == 401, method << " " << target);
      BOOST_TEST(response.header("www-authenticate") == "Bearer");
      BOOST_TEST(text(error_of(response).at("code")) == "unauthorized");
    }
    header_list post_headers = headers;
    post_headers.emplace_back("Content-Type", "application/json");
    BOOST_TEST(http.post(shipped, post_headers).status == 401);
  }
  BOOST_TEST(http.get("/v1/messages/msg_1", bearer(acme)).status == 404);
}

BOOST_FIXTURE_TEST_CASE(a_key_without_a_tenant_is_refused, keyed_fixture) {
  // An empty tenant would read as "every tenant": such a row (written by hand) is no key.
  keys.replace({stored_key("00000000000000dd", 'd', "", "submit,read,admin")});
  auto refused = http.get("/v1/dead-letters", bearer(key_text("00000000000000dd", 'd')));
  BOOST_TEST(refused.status == 401);
}

BOOST_FIXTURE_TEST_CASE(health_and_readiness_need_no_key, keyed_fixture) {
  BOOST_TEST(http.get("/healthz").status == 200);
  BOOST_TEST(http.get("/readyz").status == 200);
}

BOOST_FIXTURE_TEST_CASE(each_route_needs_its_scope, keyed_fixture) {
  auto refused = http.post(shipped, bearer(reader, test::json_headers()));
  BOOST_TEST(refused.status == 403);
  BOOST_TEST(text(error_of(refused).at("code")) == "forbidden");
  BOOST_TEST(http.request("POST", "/v1/dead-letters/tsk_dead/replay", "", bearer(reader)).status ==
             403);
  BOOST_TEST(http.get("/v1/dead-letters", bearer(reader)).status == 200);
  // Node-wide figures that count every tenant's work: `ops`, which neither read nor admin has.
  for (auto target : {"/v1/channels", "/v1/cluster"}) {
    BOOST_TEST(http.get(target, bearer(reader)).status == 403, target);
    auto refused_admin = http.get(target, bearer(acme));
    BOOST_TEST(refused_admin.status == 403, target);
    BOOST_TEST(text(error_of(refused_admin).at("message")).find("'ops'") != std::string::npos);
    BOOST_TEST(http.get(target, bearer(operations)).status == 200, target);
  }
  BOOST_TEST(http.get("/v1/stats", bearer(operations)).status == 403); // ops reads no tenant's data
  BOOST_TEST(http.request("POST", "/v1/dead-letters/tsk_dead/replay", "", bearer(acme)).status ==
             202);
  // Replayed already and not failed again: nothing to replay.
  BOOST_TEST(http.request("POST", "/v1/dead-letters/tsk_dead/replay", "", bearer(acme)).status ==
             409);
}

BOOST_FIXTURE_TEST_CASE(the_key_decides_the_tenant, keyed_fixture) {
  auto accepted = http.post(shipped, bearer(acme, test::json_headers()));
  BOOST_REQUIRE(accepted.status == 202);
  auto id = text(json::parse(accepted.body).as_object().at("message_id"));
  auto view = http.get("/v1/messages/" + id, bearer(acme));
  BOOST_REQUIRE(view.status == 200);
  BOOST_TEST(text(json::parse(view.body).as_object().at("tenant")) == "acme");
  BOOST_TEST(http.service.last_tenant() == "acme");

  std::string named = shipped;
  named.insert(1, R"("tenant":"acme",)");
  BOOST_TEST(http.post(named, bearer(acme, test::json_headers())).status == 200);

  std::string other = shipped;
  other.insert(1, R"("tenant":"default",)");
  auto refused = http.post(other, bearer(acme, test::json_headers()));
  BOOST_TEST(refused.status == 403);
  BOOST_TEST(text(error_of(refused).at("field")) == "tenant");
}

BOOST_FIXTURE_TEST_CASE(listings_and_replays_are_scoped_to_the_key_tenant, keyed_fixture) {
  BOOST_TEST(http.get("/v1/dead-letters", bearer(acme)).status == 200);
  BOOST_TEST(http.service.last_tenant() == "acme");
  http.request("POST", "/v1/dead-letters/tsk_dead/replay", "", bearer(acme));
  BOOST_TEST(http.service.last_tenant() == "acme");
}

BOOST_AUTO_TEST_CASE(open_access_acts_for_any_tenant) {
  server_fixture http;
  BOOST_TEST(http.get("/v1/dead-letters").status == 200);
  BOOST_TEST(http.service.last_tenant().empty());
}

BOOST_AUTO_TEST_CASE(metrics_move_to_their_own_listener) {
  server_fixture http{server_fixture::small_options(), nullptr, false};
  BOOST_TEST(http.get("/metrics").status == 404);
  api::http_server metrics_server{server_fixture::small_options(), http.routes.metrics_handler()};
  metrics_server.start();
  auto scraped = test::request("127.0.0.1", metrics_server.port(), "GET", "/metrics");
  BOOST_TEST(scraped.status == 200);
  BOOST_TEST(scraped.body.find("herald_messages_received_total") != std::string::npos);
  BOOST_TEST(test::request("127.0.0.1", metrics_server.port(), "GET", "/v1/dead-letters").status ==
             404);
  metrics_server.stop();
}

// --- POST /v1/receipts/{channel}: Standard Webhooks signed provider callbacks ---

namespace {

// The fixture's clock: 2026-12-01T10:00:00Z.
constexpr std::int64_t fixture_unix_seconds = 1796119200;

std::string receipt_body(const std::string& status = "delivered") {
  return R"({"type":"herald.receipt","data":{"provider_request_id":"hrq_sent","status":")" +
         status + R"(","occurred_at":"2026-12-01T09:59:58Z","detail":"handset +8613800000000"}})";
}

header_list signed_headers(const std::string& body, std::int64_t timestamp = fixture_unix_seconds,
                           const std::string& secret = receipt_secret,
                           const std::string& id = "msg_receipt_1") {
  auto key = *providers::decode_webhook_secret(secret);
  return {{"Content-Type", "application/json"},
          {"webhook-id", id},
          {"webhook-timestamp", std::to_string(timestamp)},
          {"webhook-signature", providers::sign_webhook(key, id, timestamp, body)}};
}

std::string error_code(const test::http_response& response) {
  return std::string(boost::json::parse(response.body).at("error").at("code").as_string());
}

} // namespace

BOOST_AUTO_TEST_CASE(a_signed_receipt_is_recorded_and_answered_after_the_service) {
  server_fixture f;
  auto body = receipt_body();
  auto response = f.request("POST", "/v1/receipts/sms", body, signed_headers(body));
  BOOST_TEST(response.status == 200);
  auto answer = boost::json::parse(response.body);
  BOOST_TEST(answer.at("task_id").as_string() == "tsk_sent");
  BOOST_TEST(answer.at("state").as_string() == "DELIVERED");
  BOOST_TEST(answer.at("result").as_string() == "applied");
  BOOST_REQUIRE(f.service.receipts.size() == 1u);
  const auto& recorded = f.service.receipts.front();
  BOOST_TEST(recorded.channel == "sms");
  BOOST_TEST(recorded.provider_request_id == "hrq_sent");
  BOOST_TEST(domain::to_string(recorded.receipt.status) == "delivered");
  BOOST_TEST(domain::to_string(recorded.receipt.source) == "callback");
  BOOST_TEST(domain::format_rfc3339(recorded.receipt.occurred_at) == "2026-12-01T09:59:58.000000Z");
}

BOOST_AUTO_TEST_CASE(a_signature_with_several_entries_passes_when_one_matches) {
  server_fixture f;
  auto body = receipt_body();
  auto headers = signed_headers(body);
  headers.back().second = "v1,bm90LXRoZS1zaWduYXR1cmU= " + headers.back().second;
  BOOST_TEST(f.request("POST", "/v1/receipts/sms", body, headers).status == 200);
}

BOOST_AUTO_TEST_CASE(bad_missing_or_stale_signatures_are_401_and_record_nothing) {
  server_fixture f;
  auto body = receipt_body();
  auto wrong_key = signed_headers(body, fixture_unix_seconds, "whsec_b3RoZXIta2V5");
  auto missing = signed_headers(body);
  missing.pop_back();
  auto stale = signed_headers(body, fixture_unix_seconds - 301);
  auto future = signed_headers(body, fixture_unix_seconds + 301);
  auto tampered = signed_headers(body);
  auto not_a_number = signed_headers(body);
  not_a_number[2].second = "1796119200.5";
  const std::vector<std::pair<header_list, std::string>> cases = {
      {wrong_key, "invalid_signature"},  {missing, "missing_signature"},
      {stale, "stale_timestamp"},        {future, "stale_timestamp"},
      {not_a_number, "stale_timestamp"},
  };
  for (const auto& [headers, code] : cases) {
    auto response = f.request("POST", "/v1/receipts/sms", body, headers);
    BOOST_TEST(response.status == 401);
    BOOST_TEST(error_code(response) == code);
  }
  // The signature covers the body: the same headers over another body fail.
  auto other = receipt_body("read");
  auto response = f.request("POST", "/v1/receipts/sms", other, tampered);
  BOOST_TEST(response.status == 401);
  BOOST_TEST(error_code(response) == "invalid_signature");
  // Within the tolerance either way is accepted.
  BOOST_TEST(
      f.request("POST", "/v1/receipts/sms", body, signed_headers(body, fixture_unix_seconds - 299))
          .status == 200);
  BOOST_TEST(f.service.receipts.size() == 1u);
  auto metrics = f.counters.render();
  BOOST_TEST(
      metrics.find(R"(herald_receipts_rejected_total{channel="sms",reason="stale_timestamp"} 3)") !=
      std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_channel_without_a_receipt_secret_is_404_and_unlabelled) {
  server_fixture f;
  auto body = receipt_body();
  auto response = f.request("POST", "/v1/receipts/wechat", body, signed_headers(body));
  BOOST_TEST(response.status == 404);
  BOOST_TEST(f.counters.render().find("wechat") == std::string::npos);
  BOOST_TEST(f.request("GET", "/v1/receipts/sms", "", {}).status == 405);
}

// A callback whose signature covers no request is acted on only once the service admitted its
// seal: the handshake's query carries no POST, a push's no other body; WeChat's repeat does.
BOOST_AUTO_TEST_CASE(a_sealed_callback_is_answered_only_once_its_seal_is_admitted) {
  server_fixture f;
  auto handshake = f.get("/v1/receipts/pushes?n1&echo=<b>hello</b>");
  BOOST_TEST(handshake.status == 200);
  BOOST_TEST(handshake.body == "<b>hello</b>");
  BOOST_TEST(handshake.header("content-type") == "text/plain");
  BOOST_TEST(handshake.header("x-content-type-options") == "nosniff");
  auto lifted = f.request("POST", "/v1/receipts/pushes?n1", "<xml>forged</xml>", {});
  BOOST_TEST(lifted.status == 401);
  BOOST_TEST(error_code(lifted) == "replayed_signature");

  BOOST_TEST(f.request("POST", "/v1/receipts/pushes?n2", "<xml>push</xml>", {}).status == 200);
  BOOST_TEST(f.request("POST", "/v1/receipts/pushes?n2", "<xml>push</xml>", {}).status == 200);
  BOOST_TEST(f.request("POST", "/v1/receipts/pushes?n2", "<xml>other</xml>", {}).status == 401);
  BOOST_TEST(
      f.counters.render().find(
          R"(herald_receipts_rejected_total{channel="pushes",reason="replayed_signature"} 2)") !=
      std::string::npos);
}

BOOST_AUTO_TEST_CASE(malformed_signed_receipts_are_400_naming_the_field) {
  server_fixture f;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type":"herald.receipt","data":{"status":"delivered","occurred_at":"2026-12-01T09:59:58Z"}})",
       "data.provider_request_id"},
      {R"({"type":"herald.receipt","data":{"provider_request_id":"hrq_sent","status":"lost","occurred_at":"2026-12-01T09:59:58Z"}})",
       "data.status"},
      {R"({"type":"herald.receipt","data":{"provider_request_id":"hrq_sent","status":"read","occurred_at":"yesterday"}})",
       "data.occurred_at"},
      {R"({"type":"other","data":{}})", "type"},
      {R"({"type":"herald.receipt","data":{"provider_request_id":"hrq_sent","provider_request_id":"hrq_x","status":"read","occurred_at":"2026-12-01T09:59:58Z"}})",
       "data.provider_request_id"},
      {R"({"type":"herald.receipt","data":{"provider_request_id":7,"status":"read","occurred_at":"2026-12-01T09:59:58Z"}})",
       "data.provider_request_id"},
      {R"({"type":"herald.receipt","data":{"provider_request_id":"hrq_sent","status":"read","occurred_at":"2026-12-01T09:59:58Z","extra":1}})",
       "data.extra"},
      {R"({"type":"herald.receipt","data":{"provider_request_id":"hrq_sent\u0000x","status":"read","occurred_at":"2026-12-01T09:59:58Z"}})",
       "data.provider_request_id"},
      {R"({"type":"herald.receipt","data":{"provider_message_id":"SM 1","status":"read","occurred_at":"2026-12-01T09:59:58Z"}})",
       "data.provider_message_id"},
  };
  for (const auto& [body, field] : cases) {
    auto response = f.request("POST", "/v1/receipts/sms", body, signed_headers(body));
    BOOST_TEST(response.status == 400, body);
    BOOST_TEST(boost::json::parse(response.body).at("error").at("field").as_string() == field,
               body);
  }
  auto not_json = std::string("{");
  BOOST_TEST(f.request("POST", "/v1/receipts/sms", not_json, signed_headers(not_json)).status ==
             400);
  BOOST_TEST(f.service.receipts.empty());
}

BOOST_AUTO_TEST_CASE(a_receipt_for_an_unknown_task_is_404_and_counted) {
  server_fixture f;
  std::string body =
      R"({"type":"herald.receipt","data":{"provider_message_id":"SM-unknown","status":"delivered","occurred_at":"2026-12-01T09:59:58Z"}})";
  auto response = f.request("POST", "/v1/receipts/sms", body, signed_headers(body));
  BOOST_TEST(response.status == 404);
  BOOST_TEST(error_code(response) == "unknown_task");
  BOOST_TEST(f.service.receipts.size() == 1u);
}

// --- GET /v1/stats ---

BOOST_AUTO_TEST_CASE(stats_add_up_and_give_the_delivery_rate) {
  server_fixture f;
  auto response = f.get("/v1/stats?channel=sms&from=2026-12-01T00:00:00Z&to=2026-12-02T00:00:00Z");
  BOOST_TEST(response.status == 200);
  auto body = boost::json::parse(response.body);
  const auto& sms = body.at("channels").at(0);
  BOOST_TEST(sms.at("channel").as_string() == "sms");
  BOOST_TEST(sms.at("accepted").to_number<int>() == 4);
  BOOST_TEST(sms.at("sent").to_number<int>() == 3);
  BOOST_TEST(sms.at("delivered").to_number<int>() == 1);
  BOOST_TEST(sms.at("pending").to_number<int>() == 0);
  BOOST_TEST(sms.at("delivery_rate").to_number<double>() == 0.25);
  BOOST_TEST(body.at("total").at("accepted").to_number<int>() == 4);
  BOOST_TEST(body.at("total").at("messages").to_number<int>() == 2); // the store's count
  BOOST_TEST(!sms.as_object().contains("messages"));
  BOOST_TEST(body.at("from").as_string() == "2026-12-01T00:00:00.000000Z");
  BOOST_REQUIRE(f.service.stats_asked.size() == 1u);
  BOOST_TEST(f.service.stats_asked.front().channel == "sms");
  BOOST_TEST(f.service.stats_asked.front().from.has_value());
}

BOOST_AUTO_TEST_CASE(the_cluster_view_lists_members_and_peers) {
  server_fixture f;
  auto response = f.get("/v1/cluster");
  BOOST_TEST(response.status == 200);
  auto body = boost::json::parse(response.body);
  BOOST_TEST(body.at("node_id").as_string() == "n1");
  BOOST_TEST(body.at("partitions").to_number<int>() == 256);
  const auto& members = body.at("members").as_array();
  BOOST_REQUIRE(members.size() == 2u);
  BOOST_TEST(members[0].at("self").as_bool());
  BOOST_TEST(members[0].at("partitions_owned").to_number<int>() == 171);
  BOOST_TEST(members[0].at("in_flight").to_number<int>() == 2);
  BOOST_TEST(members[0].at("last_heartbeat").as_string() == "2026-12-04T10:00:00.000000Z");
  BOOST_TEST(members[1].at("last_heartbeat").is_null());
  BOOST_TEST(members[1].at("address").as_string() == "127.0.0.1:7102");
  BOOST_TEST(body.at("peers").at(1).at("connected").as_bool() == false);
  BOOST_TEST(f.request("POST", "/v1/cluster", "{}", test::json_headers()).status == 405);
}

BOOST_AUTO_TEST_CASE(stats_take_percent_encoded_times) {
  server_fixture f;
  auto response = f.get("/v1/stats?from=2026-12-01T08%3A00%3A00%2B08%3A00#top");
  BOOST_TEST(response.status == 200);
  BOOST_REQUIRE(f.service.stats_asked.size() == 1u);
  BOOST_TEST(domain::format_rfc3339(*f.service.stats_asked.front().from) ==
             "2026-12-01T00:00:00.000000Z");
  BOOST_TEST(f.get("/v1/stats?from=2026-12-01T08%3").status == 400);
}

BOOST_AUTO_TEST_CASE(stats_refuse_bad_windows) {
  server_fixture f;
  for (const auto* target :
       {"/v1/stats?from=yesterday", "/v1/stats?from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z",
        "/v1/stats?channel=a&channel=b", "/v1/stats?channel=%27"}) {
    auto response = f.get(target);
    BOOST_TEST(response.status == 400, target);
  }
  BOOST_TEST(f.service.stats_asked.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(routes_inbox_tests)

BOOST_AUTO_TEST_CASE(an_inbox_page_is_read_with_its_query_checked) {
  server_fixture f;
  auto response = f.get("/v1/users/u%20123/inbox?unread=true&limit=5&after=1796119200000000.tsk_a");
  BOOST_REQUIRE(response.status == 200);
  auto body = json::parse(response.body).as_object();
  BOOST_TEST(text(body.at("user_id")) == "u 123");
  BOOST_TEST(body.at("unread_count").to_number<int>() == 1);
  BOOST_TEST(body.at("next_after").is_null()); // fewer items than the limit
  const auto& item = body.at("items").as_array().at(0).as_object();
  BOOST_TEST(text(item.at("task_id")) == "tsk_inbox");
  BOOST_TEST(text(item.at("title")) == "Shipped");
  BOOST_TEST(text(item.at("created_at")) == "2026-12-01T09:00:00.000000Z");
  BOOST_TEST(item.at("read").as_bool() == false);
  BOOST_TEST(!item.contains("read_at"));
  BOOST_REQUIRE(f.service.inbox_asked.size() == 1u);
  const auto& asked = f.service.inbox_asked.front();
  BOOST_TEST(asked.tenant == "default"); // no keys: `tenant`, else "default"
  BOOST_TEST(asked.user_id == "u 123");
  BOOST_TEST(asked.unread_only);
  BOOST_TEST(asked.limit == 5u);
  BOOST_REQUIRE(asked.after.has_value());
  BOOST_TEST(asked.after->task_id == "tsk_a");
  BOOST_TEST(domain::format_rfc3339(asked.after->created_at) == "2026-12-01T10:00:00.000000Z");

  auto full = json::parse(f.get("/v1/users/u-123/inbox?limit=1&tenant=acme").body).as_object();
  BOOST_TEST(text(full.at("next_after")) == "1796115600000000.tsk_inbox");
  BOOST_TEST(f.service.inbox_asked.back().tenant == "acme");
  BOOST_TEST(f.service.inbox_asked.back().limit == 1u);
}

BOOST_AUTO_TEST_CASE(a_bad_inbox_query_is_400_naming_the_field) {
  server_fixture f;
  for (const auto& [target, field] :
       {std::pair{"/v1/users/u-1/inbox?limit=0", "limit"},
        std::pair{"/v1/users/u-1/inbox?limit=101", "limit"},
        std::pair{"/v1/users/u-1/inbox?unread=yes", "unread"},
        std::pair{"/v1/users/u-1/inbox?after=tsk_1", "after"},
        std::pair{"/v1/users/u-1/inbox?after=12.tsk%201", "after"},
        std::pair{"/v1/users/u-1/inbox?limit=1&limit=2", "limit"},
        std::pair{"/v1/users/u%00x/inbox", "user_id"}, std::pair{"/v1/users/%ff/inbox", "user_id"},
        std::pair{"/v1/users/u%2/inbox", "user_id"},
        std::pair{"/v1/users/u-1/inbox?tenant=a%00b", "tenant"},
        std::pair{"/v1/users/u-1/inbox?tenant=%ff", "tenant"},
        std::pair{"/v1/users/u-1/inbox?tenant=a%2", "tenant"},
        std::pair{"/v1/users/u-1/inbox?tenant=", "tenant"}}) {
    auto response = f.get(target);
    BOOST_TEST(response.status == 400, target);
    BOOST_TEST(text(error_of(response).at("field")) == field, target);
  }
  BOOST_TEST(f.service.inbox_asked.empty());
  // A tenant is any name a submission may carry, form-encoded like the other parameters.
  BOOST_TEST(f.get("/v1/users/u-1/inbox?tenant=acme+corp%2B").status == 200);
  BOOST_REQUIRE(f.service.inbox_asked.size() == 1u);
  BOOST_TEST(f.service.inbox_asked.back().tenant == "acme corp+");
  BOOST_TEST(f.get("/v1/users/u-1/inbox/stream").status == 404);
  BOOST_TEST(f.request("POST", "/v1/users/u-1/inbox", "", {}).status == 405);
}

BOOST_AUTO_TEST_CASE(marking_an_item_records_an_inbox_receipt_after_the_service) {
  server_fixture f;
  auto read = f.request("POST", "/v1/inbox/tsk_inbox/read", "", {});
  BOOST_REQUIRE(read.status == 200);
  auto answer = json::parse(read.body);
  BOOST_TEST(answer.at("task_id").as_string() == "tsk_inbox");
  BOOST_TEST(answer.at("state").as_string() == "READ");
  BOOST_REQUIRE(f.service.receipts.size() == 1u);
  const auto& recorded = f.service.receipts.front();
  BOOST_TEST(recorded.channel == "inapp");
  BOOST_TEST(recorded.task_id == "tsk_inbox");
  BOOST_TEST(recorded.provider_request_id.empty());
  BOOST_TEST(domain::to_string(recorded.receipt.source) == "inbox");
  BOOST_TEST(domain::format_rfc3339(recorded.receipt.occurred_at) == "2026-12-01T10:00:00.000000Z");
  auto clicked = f.request("POST", "/v1/inbox/tsk_inbox/clicked", "", {});
  BOOST_TEST(json::parse(clicked.body).at("state").as_string() == "CLICKED");
  BOOST_TEST(f.request("POST", "/v1/inbox/tsk_other/read", "", {}).status == 404);
  BOOST_TEST(f.request("POST", "/v1/inbox/tsk%20x/read", "", {}).status == 404);
  BOOST_TEST(f.get("/v1/inbox/tsk_inbox/read").status == 405);
  BOOST_TEST(f.service.receipts.size() == 2u); // nothing recorded for the refused ones
}

BOOST_AUTO_TEST_CASE(stats_without_keys_count_the_named_tenant_or_every_tenant) {
  server_fixture f;
  BOOST_TEST(f.get("/v1/stats").status == 200);
  BOOST_TEST(f.get("/v1/stats?tenant=acme+corp&channel=sms").status == 200);
  BOOST_TEST(f.get("/v1/stats?tenant=%ff").status == 400);
  BOOST_REQUIRE(f.service.stats_asked.size() == 2u);
  BOOST_TEST(f.service.stats_asked[0].tenant == ""); // every tenant, as other reads
  BOOST_TEST(f.service.stats_asked[1].tenant == "acme corp");
  BOOST_TEST(f.service.stats_asked[1].channel == "sms");
}

BOOST_FIXTURE_TEST_CASE(stats_are_the_key_tenants, keyed_fixture) {
  BOOST_TEST(http.get("/v1/stats", bearer(reader)).status == 200);
  BOOST_TEST(http.get("/v1/stats?tenant=acme", bearer(reader)).status == 200);
  auto other = http.get("/v1/stats?tenant=default", bearer(reader));
  BOOST_TEST(other.status == 403);
  BOOST_TEST(text(error_of(other).at("field")) == "tenant");
  BOOST_REQUIRE(http.service.stats_asked.size() == 2u);
  BOOST_TEST(http.service.stats_asked[0].tenant == "acme");
  BOOST_TEST(http.service.stats_asked[1].tenant == "acme");
}

BOOST_FIXTURE_TEST_CASE(the_inbox_is_the_key_tenants_and_needs_read, keyed_fixture) {
  BOOST_TEST(http.get("/v1/users/u-1/inbox", bearer(reader)).status == 200);
  BOOST_TEST(http.service.inbox_asked.back().tenant == "acme");
  BOOST_TEST(http.get("/v1/users/u-1/inbox?tenant=acme", bearer(reader)).status == 200);
  auto other = http.get("/v1/users/u-1/inbox?tenant=default", bearer(reader));
  BOOST_TEST(other.status == 403);
  BOOST_TEST(text(error_of(other).at("field")) == "tenant");
  BOOST_TEST(http.get("/v1/users/u-1/inbox").status == 401);
  // tsk_inbox is tenant default's: for acme it does not exist.
  BOOST_TEST(http.request("POST", "/v1/inbox/tsk_inbox/read", "", bearer(reader)).status == 404);
  BOOST_TEST(http.service.last_tenant() == "acme");
  BOOST_TEST(http.service.receipts.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(routes_users_tests)

BOOST_AUTO_TEST_CASE(each_users_path_answers_its_methods) {
  server_fixture f;
  const auto json_body = test::json_headers();
  BOOST_TEST(f.get("/v1/users/u-1").status == 404);
  auto stored = f.request("PUT", "/v1/users/u-1", R"({"locale":"en"})", json_body);
  BOOST_REQUIRE(stored.status == 200);
  BOOST_TEST(text(json::parse(stored.body).at("locale")) == "en");
  auto patched = f.request("PATCH", "/v1/users/u-1", R"({"time_zone":"UTC"})", json_body);
  BOOST_TEST(text(json::parse(patched.body).at("locale")) == "en");
  BOOST_TEST(f.request("PUT", "/v1/users/u-1/dnd", "", {}).status == 200);
  BOOST_TEST(json::parse(f.get("/v1/users/u-1").body).at("dnd").is_object());
  BOOST_TEST(f.request("DELETE", "/v1/users/u-1/dnd", "", {}).status == 200);
  BOOST_TEST(json::parse(f.get("/v1/users/u-1").body).at("dnd").is_null());
  BOOST_TEST(f.get("/v1/users/u-1/inbox").status == 200); // the inbox keeps its route

  auto post = f.request("POST", "/v1/users/u-1", "{}", json_body);
  BOOST_TEST(post.status == 405);
  BOOST_TEST(post.header("allow") == "GET, PUT, PATCH");
  auto get_dnd = f.get("/v1/users/u-1/dnd");
  BOOST_TEST(get_dnd.status == 405);
  BOOST_TEST(get_dnd.header("allow") == "PUT, DELETE");
  BOOST_TEST(f.request("DELETE", "/v1/users/u-1", "", {}).status == 405);
  BOOST_TEST(f.get("/v1/users/u-1/").status == 404);
  BOOST_TEST(f.get("/v1/users/").status == 404);
}

BOOST_AUTO_TEST_CASE(a_refused_change_writes_nothing) {
  server_fixture f;
  const auto json_body = test::json_headers();
  auto zone = f.request("PUT", "/v1/users/u-1", R"({"time_zone":"Mars/Olympus_Mons"})", json_body);
  BOOST_TEST(zone.status == 422);
  BOOST_TEST(text(error_of(zone).at("code")) == "invalid_time_zone");
  BOOST_TEST(text(error_of(zone).at("field")) == "time_zone");
  auto channel = f.request("PATCH", "/v1/users/u-1", R"({"contacts":{"fax":"1"}})", json_body);
  BOOST_TEST(text(error_of(channel).at("code")) == "unknown_channel");
  auto past = f.request("PUT", "/v1/users/u-1/dnd", R"({"until":"2026-12-01T09:59:59Z"})",
                        json_body); // the fixture's clock is at 10:00
  BOOST_TEST(past.status == 422);
  BOOST_TEST(text(error_of(past).at("code")) == "invalid_until");
  auto text_body = f.request("PUT", "/v1/users/u-1", "{}", {{"Content-Type", "text/plain"}});
  BOOST_TEST(text_body.status == 415);
  auto bad_user = f.request("PUT", "/v1/users/u%00/dnd", "", {});
  BOOST_TEST(bad_user.status == 400);
  BOOST_TEST(text(error_of(bad_user).at("field")) == "user_id");
  BOOST_TEST(f.get("/v1/users/u-1").status == 404);

  f.service.failure = api::service_error{503, "unavailable", "database down", ""};
  auto down = f.request("DELETE", "/v1/users/u-1/dnd", "", {});
  BOOST_TEST(down.status == 503);
  BOOST_TEST(down.header("retry-after") == "1");
}

BOOST_FIXTURE_TEST_CASE(reading_needs_read_and_changing_needs_submit, keyed_fixture) {
  auto put = [this](const std::string& key) {
    return http.request("PUT", "/v1/users/u-1", R"({"locale":"en"})",
                        bearer(key, test::json_headers()));
  };
  auto refused = put(reader);
  BOOST_TEST(refused.status == 403);
  BOOST_TEST(text(error_of(refused).at("code")) == "forbidden");
  BOOST_TEST(http.request("DELETE", "/v1/users/u-1/dnd", "", bearer(reader)).status == 403);
  BOOST_TEST(put(acme).status == 200);
  BOOST_TEST(http.get("/v1/users/u-1", bearer(reader)).status == 200);
  BOOST_TEST(http.get("/v1/users/u-1?tenant=default", bearer(reader)).status == 403);
  BOOST_TEST(http.get("/v1/users/u-1").status == 401);
}

BOOST_AUTO_TEST_CASE(without_keys_the_tenant_parameter_names_the_tenant) {
  server_fixture f;
  BOOST_TEST(f.request("PUT", "/v1/users/u-1?tenant=acme", "{}", test::json_headers()).status ==
             200);
  BOOST_TEST(f.get("/v1/users/u-1?tenant=acme").status == 200);
  BOOST_TEST(f.get("/v1/users/u-1").status == 404); // tenant "default"
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

/// A server whose batch route takes bodies up to 256 KiB (the single route keeps 64 KiB).
struct batch_fixture : server_fixture {
  batch_fixture() : server_fixture(options()) {}

  static api::http_options options() {
    auto options = small_options();
    options.body_limits_by_path[std::string(api::batch_path)] = 256 * 1024;
    return options;
  }

  test::http_response post_batch(const std::string& body,
                                 header_list headers = test::json_headers()) {
    return request("POST", std::string(api::batch_path), body, headers);
  }
};

/// `shipped` with another biz_id, and its content body `padding` bytes long when given.
std::string shipped_as(const std::string& biz_id, std::size_t padding = 0) {
  auto event = json::parse(shipped).as_object();
  event["biz_id"] = biz_id;
  if (padding > 0)
    event["content"] = json::object{{"body", std::string(padding, 'x')}};
  return json::serialize(event);
}

std::string batch_body(const std::vector<std::string>& items) {
  std::string body = R"({"messages":[)";
  for (std::size_t i = 0; i < items.size(); ++i)
    body += (i == 0 ? "" : ",") + items[i];
  return body + "]}";
}

json::array results_of(const test::http_response& response) {
  BOOST_TEST(response.header("content-type") == "application/json");
  return json::parse(response.body).as_object().at("results").as_array();
}

} // namespace

BOOST_AUTO_TEST_SUITE(routes_batch_tests)

BOOST_FIXTURE_TEST_CASE(one_result_per_item_in_order_and_one_service_call, batch_fixture) {
  auto response = post_batch(batch_body({
      shipped_as("b-1"),
      R"({"biz_type":"ORDER_SHIPPED","biz_id":"b-2","user_id":42})",
      R"({"biz_type":"ORDER_SHIPPED","biz_id":"b-3","user_id":"u","channels":["fax"],)"
      R"("to":{"fax":"1"},"content":{"body":"b"}})",
      shipped_as("b-1"),
      "17",
  }));
  BOOST_REQUIRE_EQUAL(response.status, 200);
  auto results = results_of(response);
  BOOST_REQUIRE_EQUAL(results.size(), 5u);
  BOOST_TEST(results[0].at("status").as_int64() == 202);
  BOOST_TEST(text(results[0].at("trace_id")) == response.header("x-trace-id"));
  BOOST_TEST(results[0].at("tasks").as_array().size() == 2u);
  BOOST_TEST(results[1].at("status").as_int64() == 400);
  BOOST_TEST(text(results[1].at("error").at("field")) == "messages[1].user_id");
  BOOST_TEST(results[2].at("status").as_int64() == 422);
  BOOST_TEST(text(results[2].at("error").at("code")) == "unknown_channel");
  BOOST_TEST(text(results[2].at("error").at("field")).rfind("messages[2]", 0) == 0u);
  // The same event again in the batch: the same ids, all duplicates.
  BOOST_TEST(results[3].at("status").as_int64() == 200);
  BOOST_TEST(results[3].at("message_id") == results[0].at("message_id"));
  BOOST_TEST(results[3].at("tasks").at(0).at("duplicate").as_bool());
  BOOST_TEST(text(results[4].at("error").at("field")) == "messages[4]");
  // The valid items went to the service in one call; the refused ones never did.
  BOOST_TEST(service.batch_sizes == std::vector<std::size_t>{2}, boost::test_tools::per_element());
  BOOST_TEST(counters.render().find("herald_messages_received_total 2") != std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(a_batch_of_refused_items_is_answered_without_the_service, batch_fixture) {
  auto response = post_batch(batch_body({"null", "[]"}));
  BOOST_REQUIRE_EQUAL(response.status, 200);
  auto results = results_of(response);
  BOOST_TEST(results[0].at("status").as_int64() == 400);
  BOOST_TEST(results[1].at("status").as_int64() == 400);
  BOOST_TEST(service.batch_sizes.empty());
}

BOOST_FIXTURE_TEST_CASE(whole_request_errors_are_the_usual_error_bodies, batch_fixture) {
  auto wrong_type = post_batch(batch_body({shipped}), {{"Content-Type", "text/plain"}});
  BOOST_TEST(wrong_type.status == 415);
  BOOST_TEST(text(error_of(wrong_type).at("code")) == "unsupported_media_type");
  std::vector<std::string> too_many(1001, "{}");
  for (const auto& body : {std::string("{"), std::string(R"({"messages":[]})"),
                           std::string(R"({"messages":"x"})"), batch_body(too_many)}) {
    auto refused = post_batch(body);
    BOOST_TEST(refused.status == 400, body.substr(0, 40));
    BOOST_TEST(text(error_of(refused).at("code")) == "invalid_request");
  }
  BOOST_TEST(request("GET", std::string(api::batch_path), "", {}).status == 405);
  BOOST_TEST(service.batch_sizes.empty());
}

BOOST_FIXTURE_TEST_CASE(the_batch_route_has_its_own_body_limit, batch_fixture) {
  // 200 events of ~500 bytes: over the single route's 64 KiB, within the batch's 256 KiB.
  std::vector<std::string> events;
  for (int i = 0; i < 200; ++i)
    events.push_back(shipped_as("big-" + std::to_string(i), 400));
  auto body = batch_body(events);
  BOOST_REQUIRE_GT(body.size(), 65536u);
  BOOST_TEST(post(body).status == 413);
  auto accepted = post_batch(body);
  BOOST_TEST(accepted.status == 200);
  auto accepted_results = results_of(accepted);
  BOOST_TEST(accepted_results.size() == 200u);
  BOOST_TEST(accepted_results[199].at("status").as_int64() == 202);
  body.insert(body.size() - 2, "," + std::string(200 * 1024, ' ') + shipped_as("pad"));
  auto too_large = post_batch(body);
  BOOST_TEST(too_large.status == 413);
  BOOST_TEST(text(error_of(too_large).at("message")).find("262144") != std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(a_store_failure_answers_each_written_item_503, batch_fixture) {
  service.failure = api::service_error{503, "unavailable", "database down", ""};
  auto response = post_batch(batch_body({shipped_as("f-1"), "1"}));
  BOOST_REQUIRE_EQUAL(response.status, 200);
  BOOST_TEST(response.header("retry-after") == "1");
  auto results = results_of(response);
  BOOST_TEST(results[0].at("status").as_int64() == 503);
  BOOST_TEST(text(results[0].at("error").at("code")) == "unavailable");
  BOOST_TEST(results[1].at("status").as_int64() == 400);
}

BOOST_FIXTURE_TEST_CASE(overload_refuses_the_whole_batch, batch_fixture) {
  service.failure = api::service_error{503, "overloaded", "too many in flight", ""};
  auto response = post_batch(batch_body({shipped_as("o-1")}));
  BOOST_TEST(response.status == 503);
  BOOST_TEST(response.header("retry-after") == "1");
  BOOST_TEST(text(error_of(response).at("code")) == "overloaded");
}

BOOST_FIXTURE_TEST_CASE(a_batch_needs_the_submit_scope_and_each_item_the_key_tenant,
                        keyed_fixture) {
  auto body =
      batch_body({shipped_as("k-1"), R"({"tenant":"other",)" + shipped_as("k-2").substr(1)});
  auto post = [&](const header_list& headers) {
    return http.request("POST", std::string(api::batch_path), body, headers);
  };
  BOOST_TEST(post(test::json_headers()).status == 401);
  BOOST_TEST(post(bearer(reader, test::json_headers())).status == 403);
  auto response = post(bearer(acme, test::json_headers()));
  BOOST_REQUIRE_EQUAL(response.status, 200);
  auto results = results_of(response);
  BOOST_TEST(results[0].at("status").as_int64() == 202);
  BOOST_TEST(results[1].at("status").as_int64() == 403);
  BOOST_TEST(text(results[1].at("error").at("field")) == "messages[1].tenant");
  BOOST_TEST(http.service.batch_sizes == std::vector<std::size_t>{1},
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

const std::string otp_template =
    R"({"default_locale":"en","locales":{"en":{"title":"Code","body":"Your code ${code}",)"
    R"("channels":{"sms":{"body":"${code} is your code"}}},"zh-CN":{"body":"验证码${code}"}},)"
    R"("variables":["code"]})";

} // namespace

BOOST_AUTO_TEST_SUITE(routes_templates_tests)

BOOST_FIXTURE_TEST_CASE(templates_are_read_with_read_and_changed_with_admin, keyed_fixture) {
  const auto json_reader = bearer(reader, test::json_headers());
  const auto json_admin = bearer(acme, test::json_headers());
  BOOST_TEST(http.request("PUT", "/v1/templates/otp", otp_template, json_reader).status == 403);
  BOOST_TEST(http.request("DELETE", "/v1/templates/otp", "", bearer(reader)).status == 403);
  BOOST_TEST(http.request("PUT", "/v1/templates/otp", otp_template, json_admin).status == 201);
  BOOST_TEST(http.get("/v1/templates/otp", bearer(reader)).status == 200);
  BOOST_TEST(
      http.request("POST", "/v1/templates/otp/preview", R"({"params":{"code":"1"}})", json_reader)
          .status == 200);
  BOOST_TEST(http.request("PATCH", "/v1/templates/otp", "{}", json_admin).status == 405);
  // The key's tenant: another tenant's template is not there.
  BOOST_TEST(http.get("/v1/templates/otp?tenant=other", bearer(acme)).status == 403);
}

BOOST_FIXTURE_TEST_CASE(versions_count_up_and_old_ones_stay_readable, keyed_fixture) {
  const auto json_admin = bearer(acme, test::json_headers());
  auto first = http.request("PUT", "/v1/templates/otp", otp_template, json_admin);
  BOOST_TEST(first.status == 201);
  auto second = http.request("PUT", "/v1/templates/otp", otp_template, json_admin);
  BOOST_TEST(second.status == 200);
  BOOST_TEST(json::parse(second.body).as_object().at("version").as_int64() == 2);
  auto old = http.get("/v1/templates/otp?version=1", bearer(acme));
  BOOST_TEST(old.status == 200);
  BOOST_TEST(json::parse(old.body).as_object().at("version").as_int64() == 1);
  BOOST_TEST(http.get("/v1/templates/otp?version=3", bearer(acme)).status == 404);
  BOOST_TEST(http.get("/v1/templates/otp?version=zero", bearer(acme)).status == 400);
  BOOST_TEST(http.request("DELETE", "/v1/templates/otp", "", bearer(acme)).status == 200);
  auto gone = http.get("/v1/templates/otp", bearer(acme));
  BOOST_TEST(gone.status == 404);
  BOOST_TEST(text(error_of(gone).at("code")) == "template_not_found");
  BOOST_TEST(http.request("DELETE", "/v1/templates/otp", "", bearer(acme)).status == 404);
}

BOOST_FIXTURE_TEST_CASE(a_broken_template_is_refused_with_its_position_and_not_saved,
                        keyed_fixture) {
  const auto json_admin = bearer(acme, test::json_headers());
  auto refused = http.request(
      "PUT", "/v1/templates/otp",
      R"({"default_locale":"en","locales":{"en":{"body":"Code: ${co de}"}}})", json_admin);
  BOOST_TEST(refused.status == 422);
  auto error = error_of(refused);
  BOOST_TEST(text(error.at("code")) == "invalid_template");
  BOOST_TEST(text(error.at("field")) == "locales.en.body");
  BOOST_TEST(error.at("position").as_int64() == 11); // the space inside the name
  BOOST_TEST(http.get("/v1/templates/otp", bearer(acme)).status == 404);
  // Shape errors are 400 naming the field.
  auto typo = http.request("PUT", "/v1/templates/otp",
                           R"({"default_locale":"en","locales":{"en":{"bodi":"x"}}})", json_admin);
  BOOST_TEST(typo.status == 400);
  BOOST_TEST(text(error_of(typo).at("field")) == "locales.en.bodi");
  BOOST_TEST(http.request("PUT", "/v1/templates/bad%2Fcode", otp_template, json_admin).status ==
             400);
}

BOOST_FIXTURE_TEST_CASE(preview_renders_every_channel_and_names_a_missing_parameter,
                        keyed_fixture) {
  const auto json_admin = bearer(acme, test::json_headers());
  BOOST_REQUIRE(http.request("PUT", "/v1/templates/otp", otp_template, json_admin).status == 201);
  auto preview = http.request("POST", "/v1/templates/otp/preview",
                              R"({"params":{"code":"<b>${x}</b>"},"locale":"zh-CN"})", json_admin);
  BOOST_TEST_REQUIRE(preview.status == 200);
  auto locales = json::parse(preview.body).as_object().at("locales").as_array();
  BOOST_TEST_REQUIRE(locales.size() == 1u);
  BOOST_TEST(text(locales[0].as_object().at("locale")) == "zh-CN");
  BOOST_TEST(text(locales[0].as_object().at("body")) == "验证码<b>${x}</b>");
  auto all =
      http.request("POST", "/v1/templates/otp/preview", R"({"params":{"code":"7"}})", json_admin);
  auto en = json::parse(all.body).as_object().at("locales").as_array()[0].as_object();
  BOOST_TEST(text(en.at("channels").as_object().at("sms").as_object().at("body")) ==
             "7 is your code");
  BOOST_TEST(text(en.at("channels").as_object().at("email").as_object().at("body")) ==
             "Your code 7");
  auto missing = http.request("POST", "/v1/templates/otp/preview", R"({"params":{}})", json_admin);
  BOOST_TEST(missing.status == 422);
  BOOST_TEST(text(error_of(missing).at("code")) == "missing_parameter");
  BOOST_TEST(text(error_of(missing).at("field")) == "params.code");
  BOOST_TEST(
      http.request("POST", "/v1/templates/nope/preview", R"({"params":{}})", json_admin).status ==
      404);
}

BOOST_FIXTURE_TEST_CASE(a_message_renders_the_key_tenants_stored_template, keyed_fixture) {
  const auto json_admin = bearer(acme, test::json_headers());
  BOOST_REQUIRE(http.request("PUT", "/v1/templates/otp", otp_template, json_admin).status == 201);
  const std::string event = R"({"biz_type":"OTP","biz_id":"1","user_id":"u-1","channels":["sms"],)"
                            R"("to":{"sms":"+8613800000000"},"template":"otp","params":{}})";
  auto missing = http.post(event, json_admin);
  BOOST_TEST(missing.status == 422);
  BOOST_TEST(text(error_of(missing).at("code")) == "missing_parameter");
  std::string with_code = event;
  with_code.replace(with_code.find(R"("params":{})"), 11, R"("params":{"code":"42"})");
  BOOST_TEST(http.post(with_code, json_admin).status == 202);
}

BOOST_AUTO_TEST_SUITE_END()
