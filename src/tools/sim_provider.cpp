#include "tools/sim_provider.hpp"

#include "api/http_server.hpp"
#include "tools/apns_fake.hpp"
#include "tools/fcm_fake.hpp"
#include "tools/h2c_server.hpp"
#include "tools/sim_provider_config.hpp"
#include "tools/sim_provider_service.hpp"
#include "tools/smtp_fake.hpp"
#include "tools/twilio_fake.hpp"
#include "tools/wechat_fake.hpp"

#include <cctype>
#include <iostream>

#include <boost/json.hpp>

namespace herald::tools {
namespace {

/// Answers every request from `fake`, as the provider it stands for would over HTTP.
template <class Fake> api::request_handler fake_handler(Fake& fake) {
  return [&fake](api::http_request request, api::respond_fn respond) {
    fake_request seen{std::string{request.method_string()},
                      std::string{request.target()},
                      std::move(request.body()),
                      {}};
    for (const auto& field : request) {
      std::string name{field.name_string()};
      for (auto& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      seen.headers.emplace_back(std::move(name), std::string{field.value()});
    }
    auto reply = fake.handle(seen);
    if (reply.hang)
      return; // the responder is dropped unanswered: the connection closes, as a lost answer
    api::http_response response{static_cast<boost::beast::http::status>(reply.status),
                                request.version()};
    response.set(boost::beast::http::field::content_type, reply.content_type);
    for (const auto& [name, value] : reply.headers)
      response.set(name, value);
    response.body() = std::move(reply.body);
    response.prepare_payload();
    respond(std::move(response));
  };
}

/// Starts a fake's server (`start()` returns it owned; it has port()), says where it listens,
/// serves until a stop signal, then stops it.
template <class Start>
int run_fake_server(const sim_provider_options& options, const char* mode, Start start,
                    const std::function<int()>& wait_for_stop) {
  decltype(start()) server;
  try {
    server = start();
  } catch (const std::exception& e) {
    std::cerr << "herald sim-provider: cannot listen on " << options.listen.to_string() << ": "
              << e.what() << "\n";
    return 1;
  }
  namespace json = boost::json;
  std::cout << json::serialize(json::object{{"event", "sim_provider.listening"},
                                            {"mode", mode},
                                            {"host", options.listen.host},
                                            {"port", server->port()}})
            << std::endl;
  auto received = wait_for_stop();
  server.reset();
  std::cout << json::serialize(
                   json::object{{"event", "sim_provider.stopped"}, {"signal", received}})
            << std::endl;
  return 0;
}

/// A fake that speaks HTTP/1.1.
template <class Fake>
int serve(Fake& fake, const sim_provider_options& options, const char* mode,
          const std::function<int()>& wait_for_stop) {
  return run_fake_server(
      options, mode,
      [&] {
        api::http_options http;
        http.host = options.listen.host;
        http.port = options.listen.port;
        http.max_body_bytes = 1 << 20;
        http.io_threads = 2;
        http.max_connections_per_peer = http.max_connections; // herald nodes share loopback
        auto server = std::make_unique<api::http_server>(http, fake_handler(fake));
        server->start();
        return server;
      },
      wait_for_stop);
}

/// The SMTP fake on its own TCP server (SMTP is no HTTP).
int serve_smtp(const sim_provider_options& options, const std::function<int()>& wait_for_stop) {
  smtp_fake::options identity;
  identity.username = options.account;
  identity.password = options.secret;
  smtp_fake fake{identity};
  return run_fake_server(
      options, "smtp",
      [&] { return std::make_unique<smtp_fake_server>(fake, options.listen.port); }, wait_for_stop);
}

/// The APNs fake over HTTP/2 with prior knowledge (APNs speaks nothing else; an apns channel
/// with an http:// base_url talks h2c).
int serve_apns(const sim_provider_options& options, const std::function<int()>& wait_for_stop) {
  apns_fake::options identity;
  if (!options.account.empty())
    identity.team_id = options.account;
  if (!options.secret.empty())
    identity.key_id = options.secret;
  if (!options.topic.empty())
    identity.topic = options.topic;
  apns_fake fake{identity};
  return run_fake_server(
      options, "apns",
      [&] {
        return std::make_unique<h2c_server>(
            [&fake](const fake_request& request) { return fake.handle(request); },
            options.listen.host, options.listen.port);
      },
      wait_for_stop);
}

int serve_fake(const sim_provider_options& options, const std::function<int()>& wait_for_stop) {
  if (options.mode == sim_mode::smtp)
    return serve_smtp(options, wait_for_stop);
  if (options.mode == sim_mode::apns)
    return serve_apns(options, wait_for_stop);
  if (options.mode == sim_mode::fcm) {
    fcm_fake::options identity;
    if (!options.account.empty())
      identity.client_email = options.account;
    if (!options.secret.empty())
      identity.private_key_id = options.secret;
    fcm_fake fake{identity};
    return serve(fake, options, "fcm", wait_for_stop);
  }
  if (options.mode == sim_mode::wechat) {
    wechat_fake::options identity;
    identity.templates.clear(); // a load test uses the team's own template ids
    if (!options.account.empty())
      identity.appid = options.account;
    if (!options.secret.empty())
      identity.secret = options.secret;
    wechat_fake fake{identity};
    return serve(fake, options, "wechat", wait_for_stop);
  }
  twilio_fake::options identity;
  if (!options.account.empty())
    identity.account_sid = options.account;
  if (!options.secret.empty())
    identity.auth_token = options.secret;
  twilio_fake fake{identity};
  return serve(fake, options, "twilio", wait_for_stop);
}

} // namespace

int run_sim_provider(const std::vector<std::string>& args,
                     const std::function<int()>& wait_for_stop) {
  sim_provider_options options;
  try {
    options = parse_sim_provider_args(args);
  } catch (const usage_error& e) {
    std::cerr << "herald sim-provider: " << e.what() << "\n";
    return 2;
  }
  if (options.help) {
    std::cout << sim_provider_usage();
    return 0;
  }

  if (options.mode != sim_mode::webhook)
    return serve_fake(options, wait_for_stop);

  sim_provider_service service(options);
  api::http_options http;
  http.host = options.listen.host;
  http.port = options.listen.port;
  http.max_body_bytes = 1 << 20;
  http.io_threads = 2;
  http.max_in_flight = 100000;                          // held calls stay in flight until dropped
  http.max_connections_per_peer = http.max_connections; // herald nodes share loopback
  http.idle_timeout = std::chrono::seconds(60);
  api::http_server server(http, service.handler());
  try {
    server.start();
  } catch (const std::exception& e) {
    std::cerr << "herald sim-provider: cannot listen on " << options.listen.to_string() << ": "
              << e.what() << "\n";
    return 1;
  }
  namespace json = boost::json;
  const auto& f = options.faults;
  const auto& r = options.receipts;
  std::cout << json::serialize(json::object{
                   {"event", "sim_provider.listening"},
                   {"host", options.listen.host},
                   {"port", server.port()},
                   {"fail_rate", f.fail_rate},
                   {"timeout_rate", f.timeout_rate},
                   {"permanent_rate", f.permanent_rate},
                   {"latency_ms", options.latency.count()},
                   {"dedupe_by_id", options.dedupe_by_id},
                   {"seed", options.seed},
                   {"undelivered_rate", r.undelivered_rate},
                   {"read_rate", r.read_rate},
                   {"receipt_to", r.to ? json::value(r.to->to_string()) : json::value(nullptr)},
                   {"receipt_delay_ms", r.delay.count()},
                   {"reorder_ms", r.reorder.count()},
                   {"drop_receipts", r.drop_rate},
                   {"duplicate_receipts", r.duplicate_rate}})
            << std::endl;

  auto received = wait_for_stop();

  server.stop();
  service.shutdown();
  // "summary" stays the call summary (scripts read it); "stats" adds requests and receipts.
  std::cout << json::serialize(
                   json::object{{"event", "sim_provider.stopped"},
                                {"signal", received},
                                {"summary", json::parse(to_json(service.calls().summary()))},
                                {"stats", json::parse(service.stats())}})
            << std::endl;
  return 0;
}

} // namespace herald::tools
