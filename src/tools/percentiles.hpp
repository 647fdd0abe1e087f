#pragma once

#include <cstddef>
#include <vector>

namespace herald::tools {

/// The nearest-rank percentile `p` (0..100) of `values`: the smallest value with at least p%
/// of the values at or below it. 0 for no values; p <= 0 gives the minimum, p >= 100 the max.
double percentile(std::vector<double> values, double p);

struct latency_summary {
  std::size_t count = 0;
  double p50 = 0;
  double p99 = 0;
  double p999 = 0; ///< the 99.9th percentile
  double max = 0;
};

latency_summary summarize_latencies(std::vector<double> values);

} // namespace herald::tools
