#include "tools/sim_provider.hpp"

#include "api/http_server.hpp"
#include "tools/sim_provider_config.hpp"
#include "tools/sim_provider_service.hpp"

#include <iostream>

#include <boost/json.hpp>

namespace herald::tools {

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

  sim_provider_service service(options);
  api::http_options http;
  http.host = options.listen.host;
  http.port = options.listen.port;
  http.max_body_bytes = 1 << 20;
  http.io_threads = 2;
  http.max_in_flight = 100000; // held calls stay in flight until dropped
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
