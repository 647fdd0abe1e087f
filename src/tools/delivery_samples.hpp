#pragma once

#include <cstddef>
#include <optional>
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
  /// A node's counter went down since its reading before (that herald restarted and counts
  /// from 0 again): a sum over nodes need not go down with it, but no longer counts since the
  /// baseline.
  bool counter_reset = false;
};

/// Reads one /metrics answer taken at `at_s`.
provider_sample read_provider_sample(std::string_view metrics, double at_s);

/// Sums the readings of several herald nodes (one cluster), taken one after another at one
/// sampling moment, into one sample. A node that did not answer counts with its last reading
/// (its calls happened) and with an empty retry queue (a killed node's queue died with it; its
/// tasks are another node's now). With one node a sample is that node's reading as it is.
class node_sample_sum {
public:
  explicit node_sample_sum(std::size_t nodes) : last_(nodes) {}

  /// `readings[i]` is node i's reading (nullopt: no answer); nullopt when no node answered.
  /// Sets counter_reset when a node's calls or successes went down since its last reading.
  std::optional<provider_sample> add(const std::vector<std::optional<provider_sample>>& readings,
                                     double at_s);

private:
  std::vector<std::optional<provider_sample>> last_;
};

/// Deliveries during a run, from the samples against the reading taken before it.
struct delivery_figures {
  double calls = 0;     ///< provider calls of any outcome
  double delivered = 0; ///< provider calls that succeeded
  double last_at_s = 0; ///< the first sample showing the final success count (0 if none)
  double per_s = 0;     ///< delivered / last_at_s
  /// The counter went down between two readings, or a sample says a node's did: herald
  /// restarted and counts from 0 again, so the figures above mean nothing (all 0).
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
