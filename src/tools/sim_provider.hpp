#pragma once

#include <string>
#include <vector>

namespace herald::tools {

/// `herald sim-provider --listen HOST:PORT [--fail-rate F] [--timeout-rate F] [--latency-ms N]
/// [--dedupe-by-id]`: a simulated provider process for tests and load tests. Runs until
/// SIGTERM/SIGINT (already blocked by main; wait with sigwait). `args` excludes the verb.
/// Returns the exit code (2 on bad usage, with one line on stderr).
int run_sim_provider(const std::vector<std::string>& args);

} // namespace herald::tools
