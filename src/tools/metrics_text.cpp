#include "tools/metrics_text.hpp"

#include <cstdlib>
#include <string>

namespace herald::tools {

std::optional<double> metric_sum(std::string_view text, std::string_view name) {
  std::optional<double> sum;
  while (!text.empty()) {
    auto newline = text.find('\n');
    auto line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (line.size() <= name.size() || line.substr(0, name.size()) != name)
      continue;
    auto next = line[name.size()];
    if (next != '{' && next != ' ')
      continue; // a longer name sharing the prefix
    std::size_t value_at = name.size();
    if (next == '{') {
      auto close = line.rfind('}');
      if (close == std::string_view::npos)
        continue;
      value_at = close + 1;
    }
    std::string rest(line.substr(value_at));
    char* end = nullptr;
    double value = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str())
      continue;
    sum = sum.value_or(0) + value;
  }
  return sum;
}

} // namespace herald::tools
