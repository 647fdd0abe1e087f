#pragma once

#include "tools/call_record.hpp"
#include "tools/cli_args.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace herald::tools {

/// How often the simulated provider misbehaves. The rates are disjoint slices of one draw and
/// add up to at most 1; the rest succeeds.
struct fault_profile {
  double fail_rate = 0;      ///< 503, not processed (retryable)
  double timeout_rate = 0;   ///< processed, answer never sent
  double permanent_rate = 0; ///< 400, not processed (permanent)

  /// The outcome for one uniform draw `u` in [0, 1).
  call_outcome choose(double u) const;
};

struct sim_provider_options {
  host_port listen;
  fault_profile faults;
  std::chrono::milliseconds latency{0};  ///< before every answer
  std::chrono::milliseconds hold{30000}; ///< a timed-out call's connection is dropped after this
  bool dedupe_by_id = false;
  std::uint64_t seed = 1;
  bool help = false;
};

/// Parses the arguments after `herald sim-provider`; throws usage_error.
sim_provider_options parse_sim_provider_args(const std::vector<std::string>& args);

std::string sim_provider_usage();

} // namespace herald::tools
