#include "tools/delivery_samples.hpp"

#include "tools/metrics_text.hpp"

#include <algorithm>
#include <iterator>

namespace herald::tools {

namespace {

constexpr std::string_view calls_metric = "herald_provider_calls_total";

} // namespace

provider_sample read_provider_sample(std::string_view metrics, double at_s) {
  auto calls = metric_sum(metrics, calls_metric);
  provider_sample sample;
  sample.at_s = at_s;
  sample.has_counter = calls.has_value();
  sample.calls = calls.value_or(0);
  sample.successes = metric_sum(metrics, calls_metric, "outcome", "success").value_or(0);
  sample.retry_queue_depth = metric_sum(metrics, "herald_retry_queue_depth").value_or(0);
  return sample;
}

std::optional<provider_sample>
node_sample_sum::add(const std::vector<std::optional<provider_sample>>& readings, double at_s) {
  if (readings.size() != last_.size() ||
      std::none_of(readings.begin(), readings.end(), [](const auto& r) { return r.has_value(); }))
    return std::nullopt;
  provider_sample sum;
  sum.at_s = at_s;
  for (std::size_t node = 0; node < readings.size(); ++node) {
    auto& last = last_[node];
    if (const auto& reading = readings[node]) {
      if (last && (reading->calls < last->calls || reading->successes < last->successes))
        sum.counter_reset = true;
      last = reading;
      sum.retry_queue_depth += reading->retry_queue_depth;
    }
    if (last) {
      sum.calls += last->calls;
      sum.successes += last->successes;
      sum.has_counter = sum.has_counter || last->has_counter;
    }
  }
  return sum;
}

delivery_figures delivery_from_samples(const provider_sample& baseline,
                                       const std::vector<provider_sample>& samples) {
  delivery_figures figures;
  if (samples.empty())
    return figures;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& before = i == 0 ? baseline : samples[i - 1];
    if (samples[i].counter_reset || samples[i].calls < before.calls ||
        samples[i].successes < before.successes) {
      figures.counter_reset = true;
      return figures;
    }
  }
  const auto& last = samples.back();
  figures.calls = last.calls - baseline.calls;
  figures.delivered = last.successes - baseline.successes;
  if (figures.delivered <= 0)
    return figures;
  auto first_final = std::find_if(samples.begin(), samples.end(), [&](const provider_sample& s) {
    return s.successes >= last.successes;
  });
  figures.last_at_s = first_final->at_s;
  if (figures.last_at_s > 0)
    figures.per_s = figures.delivered / figures.last_at_s;
  return figures;
}

bool deliveries_settled(const provider_sample& baseline,
                        const std::vector<provider_sample>& samples, double expected,
                        double since_s, double quiet_s) {
  if (samples.empty())
    return false;
  const auto& last = samples.back();
  if (expected > 0 && last.successes - baseline.successes >= expected)
    return true;
  if (last.retry_queue_depth > 0)
    return false;
  // The oldest of the readings at the end that show the same count (a restarted herald's
  // counter may have shown it before, too).
  auto unchanged = samples.rbegin();
  while (std::next(unchanged) != samples.rend() && std::next(unchanged)->calls == last.calls)
    ++unchanged;
  return last.at_s - std::max(unchanged->at_s, since_s) >= quiet_s;
}

} // namespace herald::tools
