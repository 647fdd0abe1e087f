#include "providers/provider.hpp"

#include <array>
#include <utility>

namespace herald::providers {
namespace {

constexpr std::array<std::pair<provider_status, std::string_view>, 6> status_names = {{
    {provider_status::accepted, "accepted"},
    {provider_status::sent, "sent"},
    {provider_status::delivered, "delivered"},
    {provider_status::read, "read"},
    {provider_status::clicked, "clicked"},
    {provider_status::undelivered, "undelivered"},
}};

} // namespace

std::string_view to_string(provider_status status) {
  for (const auto& [value, name] : status_names)
    if (value == status)
      return name;
  return "unknown";
}

std::optional<provider_status> parse_provider_status(std::string_view text) {
  for (const auto& [value, name] : status_names)
    if (name == text)
      return value;
  return std::nullopt;
}

std::optional<domain::receipt_status> receipt_of(provider_status status) {
  switch (status) {
  case provider_status::delivered:
    return domain::receipt_status::delivered;
  case provider_status::read:
    return domain::receipt_status::read;
  case provider_status::clicked:
    return domain::receipt_status::clicked;
  case provider_status::undelivered:
    return domain::receipt_status::undelivered;
  case provider_status::accepted:
  case provider_status::sent:
    break;
  }
  return std::nullopt;
}

std::string_view to_string(status_answer::kind result) {
  switch (result) {
  case status_answer::kind::found:
    return "found";
  case status_answer::kind::not_found:
    return "not_found";
  case status_answer::kind::unknown:
    break;
  }
  return "unknown";
}

void provider_adapter::query_status(provider_status_query, status_callback done) {
  if (done)
    done({status_answer::kind::unknown,
          provider_status::accepted,
          {},
          "this provider cannot be asked"});
}

std::string_view callback_request::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (key == name)
      return value;
  return {};
}

callback_reading callback_reading::refuse(unsigned status, std::string error, std::string message) {
  callback_reading reading;
  reading.http_status = status;
  reading.error = std::move(error);
  reading.message = std::move(message);
  return reading;
}

callback_reading provider_adapter::read_callback(const callback_request&) const {
  return callback_reading::refuse(404, "not_found", "this channel takes no provider callbacks");
}

} // namespace herald::providers
