#pragma once

#include <string_view>
#include <vector>

namespace herald::tools {

/// One reading of herald's GET /metrics during a load run: how many provider calls it made.
struct provider_sample {
  double at_s = 0;      ///< when the answer came, seconds since the first submission
  double calls = 0;     ///< herald_provider_calls_total over every label set
  double successes = 0; ///< of them, outcome="success": deliveries
  double retry_queue_depth = 0;
  /// The answer had herald_provider_calls_total: herald leaves the family out until its first
  /// call, so a sample without it reads as 0 calls.
  bool has_counter = false;
};

/// Reads one /metrics answer taken at `at_s`.
provider_sample read_provider_sample(std::string_view metrics, double at_s);

/// Deliveries during a run, from the samples against the reading taken before it.
struct delivery_figures {
  double calls = 0;     ///< provider calls of any outcome
  double delivered = 0; ///< provider calls that succeeded
  double last_at_s = 0; ///< the first sample showing the final success count (0 if none)
  double per_s = 0;     ///< delivered / last_at_s
  /// The counter went down between two readings: herald restarted and counts from 0 again, so
  /// the figures above mean nothing (all 0).
  bool counter_reset = false;
};

/// `samples` in time order. The last success happened at or before `last_at_s`, after the
/// sample before it: the figure is as coarse as the sampling interval.
delivery_figures delivery_from_samples(const provider_sample& baseline,
                                       const std::vector<provider_sample>& samples);

/// Whether the wait for deliveries is over: `expected` successes counted since `baseline`, or
/// no provider call of any outcome for `quiet_s` (counted from `since_s` at the earliest, the
/// end of the submissions) with herald's retry queue empty.
bool deliveries_settled(const provider_sample& baseline,
                        const std::vector<provider_sample>& samples, double expected,
                        double since_s, double quiet_s);

} // namespace herald::tools
