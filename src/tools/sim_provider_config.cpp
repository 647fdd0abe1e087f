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
  auto& faults = options.faults;
  option_parser parser("sim-provider");
  parser
      .value("--listen", [&](const auto& name,
                             const auto& v) { options.listen = parse_host_port(name, v, true); })
      .value("--fail-rate",
             [&](const auto& name, const auto& v) { faults.fail_rate = parse_rate(name, v); })
      .value("--timeout-rate",
             [&](const auto& name, const auto& v) { faults.timeout_rate = parse_rate(name, v); })
      .value("--permanent-rate",
             [&](const auto& name, const auto& v) { faults.permanent_rate = parse_rate(name, v); })
      .value("--latency-ms",
             [&](const auto& name, const auto& v) {
               options.latency = std::chrono::milliseconds(parse_count(name, v, 0, 600'000));
             })
      .value("--hold-ms",
             [&](const auto& name, const auto& v) {
               options.hold = std::chrono::milliseconds(parse_count(name, v, 1, 3'600'000));
             })
      .flag("--dedupe-by-id", options.dedupe_by_id)
      .value("--seed", [&](const auto& name, const auto& v) {
        options.seed = parse_count(name, v, 0, UINT64_MAX);
      });
  parser.parse(args);
  options.help = parser.help();
  if (options.help)
    return options;
  if (!parser.seen("--listen"))
    throw usage_error("sim-provider needs --listen HOST:PORT");
  if (faults.fail_rate + faults.timeout_rate + faults.permanent_rate > 1.0 + 1e-9)
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
