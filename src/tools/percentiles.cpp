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
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
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
  summary.max = values.back();
  return summary;
}

} // namespace herald::tools
