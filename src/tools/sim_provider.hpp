#pragma once

#include <functional>
#include <string>
#include <vector>

namespace herald::tools {

/// `herald sim-provider --listen HOST:PORT [--fail-rate F] [--timeout-rate F]
/// [--permanent-rate F] [--latency-ms N] [--hold-ms N] [--dedupe-by-id] [--seed N]`: a simulated
/// provider process for tests and load tests (see sim_provider_service.hpp for the model).
/// Prints {"event":"sim_provider.listening","port":N,...} on stdout once it listens. Runs until
/// `wait_for_stop` returns (main passes the SIGTERM/SIGINT wait; tests may pass their own).
/// `args` excludes the verb. Returns the exit code (2 on bad usage, with one line on stderr;
/// 1 when it cannot listen).
int run_sim_provider(const std::vector<std::string>& args,
                     const std::function<int()>& wait_for_stop);

} // namespace herald::tools
