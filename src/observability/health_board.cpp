#include "observability/health_board.hpp"

namespace herald {

void health_board::report(const std::string& component, const std::string& reason) {
  std::lock_guard lock{mutex_};
  problems_[component] = reason;
}

void health_board::clear(const std::string& component) {
  std::lock_guard lock{mutex_};
  problems_.erase(component);
}

std::string health_board::problems() const {
  std::lock_guard lock{mutex_};
  std::string text;
  for (const auto& [component, reason] : problems_) {
    if (!text.empty())
      text += "; ";
    text += component + ": " + reason;
  }
  return text;
}

} // namespace herald
