#include "api/trace_context.hpp"

#include "observability/log.hpp"

#include <algorithm>

namespace herald::api {
namespace {

bool is_lower_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

} // namespace

std::string trace_id_from_traceparent(std::string_view header) {
  // version "-" trace-id "-" parent-id "-" flags; later versions may append fields.
  if (header.size() < 55 || header[2] != '-' || header[35] != '-' || header[52] != '-')
    return {};
  auto version = header.substr(0, 2);
  auto trace_id = header.substr(3, 32);
  auto parent_id = header.substr(36, 16);
  auto flags = header.substr(53, 2);
  if (!is_lower_hex(version) || version == "ff" || !is_lower_hex(trace_id) ||
      !is_lower_hex(parent_id) || !is_lower_hex(flags))
    return {};
  if (header.size() > 55 && (version == "00" || header[55] != '-'))
    return {};
  if (trace_id == std::string_view("00000000000000000000000000000000"))
    return {};
  return std::string(trace_id);
}

bool is_safe_request_id(std::string_view value) {
  if (value.empty() || value.size() > 64)
    return false;
  return std::all_of(value.begin(), value.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
           c == '_' || c == '.' || c == ':';
  });
}

std::string choose_trace_id(std::string_view traceparent, std::string_view request_id) {
  if (auto id = trace_id_from_traceparent(traceparent); !id.empty())
    return id;
  if (is_safe_request_id(request_id))
    return std::string(request_id);
  return log::new_trace_id();
}

} // namespace herald::api
