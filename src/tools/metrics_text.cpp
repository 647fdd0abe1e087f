#include "tools/metrics_text.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace herald::tools {

namespace {

/// One sample line taken apart: the labels as written between the braces ("" without), and
/// the text after them.
struct sample_line {
  std::string_view labels;
  std::string_view value;
};

/// The sample of `name` on `line`, or nullopt for a comment, another metric, or a longer name
/// sharing the prefix. The label block ends at the first '}' outside a quoted value.
std::optional<sample_line> sample_of(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line.substr(0, name.size()) != name)
    return std::nullopt;
  auto next = line[name.size()];
  if (next == ' ')
    return sample_line{{}, line.substr(name.size())};
  if (next != '{')
    return std::nullopt;
  bool quoted = false;
  for (auto i = name.size() + 1; i < line.size(); ++i) {
    if (quoted && line[i] == '\\')
      ++i; // an escaped character inside a value
    else if (line[i] == '"')
      quoted = !quoted;
    else if (!quoted && line[i] == '}')
      return sample_line{line.substr(name.size() + 1, i - name.size() - 1), line.substr(i + 1)};
  }
  return std::nullopt;
}

/// Whether `labels` (`a="x",b="y"`) holds label `label` with exactly `value` as written.
bool has_label(std::string_view labels, std::string_view label, std::string_view value) {
  while (!labels.empty()) {
    auto equals = labels.find('=');
    if (equals == std::string_view::npos || equals + 1 >= labels.size() ||
        labels[equals + 1] != '"')
      return false;
    auto name = labels.substr(0, equals);
    auto end = equals + 2;
    while (end < labels.size() && labels[end] != '"')
      end += labels[end] == '\\' ? 2 : 1;
    if (end >= labels.size())
      return false;
    if (name == label && labels.substr(equals + 2, end - equals - 2) == value)
      return true;
    labels.remove_prefix(std::min(labels.size(), end + 1));
    if (!labels.empty() && labels.front() == ',')
      labels.remove_prefix(1);
  }
  return false;
}

template <typename Keep>
std::optional<double> sum_samples(std::string_view text, std::string_view name, Keep keep) {
  std::optional<double> sum;
  while (!text.empty()) {
    auto newline = text.find('\n');
    auto line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    auto sample = sample_of(line, name);
    if (!sample || !keep(sample->labels))
      continue;
    std::string rest(sample->value);
    char* end = nullptr;
    double value = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str())
      continue;
    sum = sum.value_or(0) + value;
  }
  return sum;
}

} // namespace

std::optional<double> metric_sum(std::string_view text, std::string_view name) {
  return sum_samples(text, name, [](std::string_view) { return true; });
}

std::optional<double> metric_sum(std::string_view text, std::string_view name,
                                 std::string_view label, std::string_view value) {
  return sum_samples(text, name,
                     [&](std::string_view labels) { return has_label(labels, label, value); });
}

} // namespace herald::tools
