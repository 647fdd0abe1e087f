#pragma once

#include <optional>
#include <string_view>

namespace herald::tools {

/// The sum of every sample of metric `name` in Prometheus text format (all label sets), or
/// nullopt when no sample has that exact name. Comments and other metrics are skipped.
std::optional<double> metric_sum(std::string_view text, std::string_view name);

/// The same over the samples whose label `label` has exactly `value` (e.g. outcome="success");
/// nullopt when no sample of `name` carries it.
std::optional<double> metric_sum(std::string_view text, std::string_view name,
                                 std::string_view label, std::string_view value);

} // namespace herald::tools
