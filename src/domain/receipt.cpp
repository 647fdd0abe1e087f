#include "domain/receipt.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace herald::domain {
namespace {

constexpr std::array<std::pair<receipt_status, std::string_view>, 4> status_names = {{
    {receipt_status::delivered, "delivered"},
    {receipt_status::read, "read"},
    {receipt_status::clicked, "clicked"},
    {receipt_status::undelivered, "undelivered"},
}};

constexpr std::array<std::pair<receipt_source, std::string_view>, 3> source_names = {{
    {receipt_source::callback, "callback"},
    {receipt_source::query, "query"},
    {receipt_source::inbox, "inbox"},
}};

template <class Enum, std::size_t N>
std::string_view name_in(const std::array<std::pair<Enum, std::string_view>, N>& names,
                         Enum value) {
  for (const auto& [candidate, name] : names)
    if (candidate == value)
      return name;
  return "unknown";
}

template <class Enum, std::size_t N>
std::optional<Enum> parse_in(const std::array<std::pair<Enum, std::string_view>, N>& names,
                             std::string_view text) {
  for (const auto& [value, name] : names)
    if (name == text)
      return value;
  return std::nullopt;
}

// How far along the confirmed path a state is; -1 for states off it.
int confirmation_rank(task_state state) {
  switch (state) {
  case task_state::sent:
  case task_state::unconfirmed:
    return 0;
  case task_state::delivered:
    return 1;
  case task_state::read:
    return 2;
  case task_state::clicked:
    return 3;
  default:
    return -1;
  }
}

} // namespace

std::string_view to_string(receipt_status status) {
  return name_in(status_names, status);
}

std::optional<receipt_status> parse_receipt_status(std::string_view text) {
  return parse_in(status_names, text);
}

std::string_view to_string(receipt_source source) {
  return name_in(source_names, source);
}

std::optional<receipt_source> parse_receipt_source(std::string_view text) {
  return parse_in(source_names, text);
}

task_state state_of(receipt_status status) {
  switch (status) {
  case receipt_status::delivered:
    return task_state::delivered;
  case receipt_status::read:
    return task_state::read;
  case receipt_status::clicked:
    return task_state::clicked;
  case receipt_status::undelivered:
    return task_state::undelivered;
  }
  return task_state::undelivered;
}

std::optional<task_state> state_after_receipt(task_state current, receipt_status status) {
  if (status == receipt_status::undelivered)
    return current == task_state::sent ? std::optional{task_state::undelivered} : std::nullopt;
  auto target = state_of(status);
  auto from = confirmation_rank(current);
  if (from < 0 || confirmation_rank(target) <= from)
    return std::nullopt;
  return target;
}

bool is_plausible_provider_id(std::string_view id) {
  constexpr std::size_t max_length = 200;
  return !id.empty() && id.size() <= max_length && std::all_of(id.begin(), id.end(), [](char c) {
    return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
}

bool awaits_receipt(task_state state) {
  return state == task_state::sent;
}

} // namespace herald::domain
