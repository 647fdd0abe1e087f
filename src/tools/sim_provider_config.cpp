#include "tools/sim_provider_config.hpp"

namespace herald::tools {

call_outcome fault_profile::choose(double u) const {
  if (u < fail_rate)
    return call_outcome::retryable;
  if (u < fail_rate + timeout_rate)
    return call_outcome::timeout;
  if (u < fail_rate + timeout_rate + permanent_rate)
    return call_outcome::permanent;
  return call_outcome::success;
}

sim_provider_options parse_sim_provider_args(const std::vector<std::string>& args) {
  sim_provider_options options;
  bool has_listen = false;
  arg_cursor cursor(args);
  while (cursor.next()) {
    const auto& name = cursor.name();
    if (name == "--help") {
      cursor.flag();
      options.help = true;
    } else if (name == "--listen") {
      options.listen = parse_host_port(name, cursor.value(), true);
      has_listen = true;
    } else if (name == "--fail-rate") {
      options.faults.fail_rate = parse_rate(name, cursor.value());
    } else if (name == "--timeout-rate") {
      options.faults.timeout_rate = parse_rate(name, cursor.value());
    } else if (name == "--permanent-rate") {
      options.faults.permanent_rate = parse_rate(name, cursor.value());
    } else if (name == "--latency-ms") {
      options.latency = std::chrono::milliseconds(parse_count(name, cursor.value(), 0, 600'000));
    } else if (name == "--hold-ms") {
      options.hold = std::chrono::milliseconds(parse_count(name, cursor.value(), 1, 3'600'000));
    } else if (name == "--dedupe-by-id") {
      cursor.flag();
      options.dedupe_by_id = true;
    } else if (name == "--seed") {
      options.seed = parse_count(name, cursor.value(), 0, UINT64_MAX);
    } else {
      throw usage_error("unknown option " + name + " (see herald sim-provider --help)");
    }
  }
  if (options.help)
    return options;
  if (!has_listen)
    throw usage_error("sim-provider needs --listen HOST:PORT");
  const auto& f = options.faults;
  if (f.fail_rate + f.timeout_rate + f.permanent_rate > 1.0 + 1e-9)
    throw usage_error("--fail-rate, --timeout-rate and --permanent-rate add up to more than 1");
  return options;
}

std::string sim_provider_usage() {
  return R"(herald sim-provider --listen HOST:PORT [options]
  A simulated provider: answers POST on any path (the path names the endpoint, e.g. /sms).
  --listen HOST:PORT     where to listen; port 0 picks a free one (printed on stdout)
  --fail-rate F          share of calls answered 503, not processed (default 0)
  --timeout-rate F       share of calls processed but never answered (default 0)
  --permanent-rate F     share of calls answered 400, not processed (default 0)
  --latency-ms N         delay before every answer (default 0)
  --hold-ms N            how long an unanswered call is held before its connection is
                         dropped (default 30000)
  --dedupe-by-id         a repeated webhook-id that was delivered already is answered 200
                         with the first provider message id and not delivered again
  --seed N               seed of the fault draw (default 1)
  Control: GET /calls/summary, GET /calls/ids[?endpoint=/sms], GET /calls/recent[?limit=N],
  POST /calls/reset, GET /healthz. Runs until SIGTERM or SIGINT.
)";
}

} // namespace herald::tools
