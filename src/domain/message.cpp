#include "domain/message.hpp"

namespace herald::domain {

std::string_view to_string(priority value) {
  switch (value) {
  case priority::high:
    return "high";
  case priority::normal:
    return "normal";
  case priority::low:
    return "low";
  }
  return "normal";
}

std::optional<priority> parse_priority(std::string_view text) {
  if (text == "high")
    return priority::high;
  if (text == "normal")
    return priority::normal;
  if (text == "low")
    return priority::low;
  return std::nullopt;
}

std::string_view to_string(category value) {
  switch (value) {
  case category::verification:
    return "verification";
  case category::transactional:
    return "transactional";
  case category::marketing:
    return "marketing";
  case category::system:
    return "system";
  }
  return "transactional";
}

std::optional<category> parse_category(std::string_view text) {
  if (text == "verification")
    return category::verification;
  if (text == "transactional")
    return category::transactional;
  if (text == "marketing")
    return category::marketing;
  if (text == "system")
    return category::system;
  return std::nullopt;
}

} // namespace herald::domain
