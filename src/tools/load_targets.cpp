#include "tools/load_targets.hpp"

#include "tools/metrics_text.hpp"

#include <stdexcept>

namespace herald::tools {

target_clients::target_clients(const std::vector<host_port>& targets,
                               std::chrono::milliseconds timeout) {
  if (targets.empty())
    throw std::invalid_argument("target_clients needs at least one target");
  for (const auto& target : targets)
    clients_.push_back(std::make_unique<http_client>(target, timeout));
}

http_reply target_clients::request_any(std::size_t first, const std::string& method,
                                       const std::string& path, std::size_t* answered_by) {
  for (std::size_t tried = 0;; ++tried) {
    auto target = (first + tried) % clients_.size();
    try {
      auto reply = clients_[target]->request(method, path);
      if (answered_by)
        *answered_by = target;
      return reply;
    } catch (const connection_error&) {
      if (tried + 1 == clients_.size())
        throw;
    }
  }
}

std::vector<std::optional<std::string>> target_clients::read_metrics() {
  std::vector<std::optional<std::string>> texts(clients_.size());
  for (std::size_t target = 0; target < clients_.size(); ++target) {
    try {
      auto reply = clients_[target]->request("GET", "/metrics");
      if (reply.status == 200)
        texts[target] = std::move(reply.body);
    } catch (const connection_error&) {
      // that node is down (a drill killed it): the others' figures still count
    }
  }
  return texts;
}

std::optional<double> metric_sum_over(const std::vector<std::optional<std::string>>& texts,
                                      std::string_view name) {
  std::optional<double> sum;
  for (const auto& text : texts)
    if (text)
      if (auto value = metric_sum(*text, name))
        sum = sum.value_or(0) + *value;
  return sum;
}

} // namespace herald::tools
