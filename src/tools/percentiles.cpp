#include "tools/percentiles.hpp"

#include <algorithm>
#include <cmath>

namespace herald::tools {

namespace {

/// `sorted` must not be empty.
double nearest_rank(const std::vector<double>& sorted, double p) {
  if (p <= 0)
    return sorted.front();
  if (p >= 100)
    return sorted.back();
  // p / 100 * n carries rounding noise (99.9 / 100 * 1000 = 999.0000000000001), which ceil
  // would turn into the next rank: p999 of 1000 values would be the maximum.
  auto exact = p / 100.0 * static_cast<double>(sorted.size());
  auto rank = static_cast<std::size_t>(std::ceil(exact - 1e-9 * std::max(1.0, exact)));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

} // namespace

double percentile(std::vector<double> values, double p) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  return nearest_rank(values, p);
}

latency_summary summarize_latencies(std::vector<double> values) {
  latency_summary summary;
  summary.count = values.size();
  if (values.empty())
    return summary;
  std::sort(values.begin(), values.end());
  summary.p50 = nearest_rank(values, 50);
  summary.p99 = nearest_rank(values, 99);
  summary.p999 = nearest_rank(values, 99.9);
  summary.max = values.back();
  return summary;
}

} // namespace herald::tools
