#pragma once

#include "tools/cli_args.hpp"
#include "tools/http_client.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herald::tools {

/// One thread's connections to the load tool's targets (the nodes of one herald cluster, or a
/// single herald): a keep-alive http_client per target, each connecting on its first use.
class target_clients {
public:
  /// `targets` must not be empty.
  target_clients(const std::vector<host_port>& targets, std::chrono::milliseconds timeout);

  std::size_t size() const { return clients_.size(); }
  http_client& at(std::size_t target) { return *clients_.at(target); }

  /// Sends the request to target `first` (mod size()) and, after a connection error, to each
  /// next target in turn; returns the first answer of any status and sets `*answered_by` to the
  /// target that gave it. Throws the last connection_error when no target answered.
  http_reply request_any(std::size_t first, const std::string& method, const std::string& path,
                         std::size_t* answered_by = nullptr);

  /// GET /metrics from every target in order: the body of each 200 answer, nullopt for a target
  /// that did not answer or answered another status.
  std::vector<std::optional<std::string>> read_metrics();

private:
  std::vector<std::unique_ptr<http_client>> clients_;
};

/// The sum of metric `name` (every label set) over the /metrics texts that were read: a
/// per-node figure summed over the cluster. nullopt when no text was read or none has `name`.
std::optional<double> metric_sum_over(const std::vector<std::optional<std::string>>& texts,
                                      std::string_view name);

} // namespace herald::tools
