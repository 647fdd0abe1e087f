#include "domain/task_state.hpp"

#include <array>
#include <utility>

namespace herald::domain {
namespace {

constexpr std::array<std::pair<task_state, std::string_view>, 13> names = {{
    {task_state::pending, "PENDING"},
    {task_state::sending, "SENDING"},
    {task_state::sent, "SENT"},
    {task_state::delivered, "DELIVERED"},
    {task_state::read, "READ"},
    {task_state::clicked, "CLICKED"},
    {task_state::retry_wait, "RETRY_WAIT"},
    {task_state::failed, "FAILED"},
    {task_state::dead, "DEAD"},
    {task_state::expired, "EXPIRED"},
    {task_state::suppressed, "SUPPRESSED"},
    {task_state::unconfirmed, "UNCONFIRMED"},
    {task_state::undelivered, "UNDELIVERED"},
}};

} // namespace

std::string_view to_string(task_state state) {
  for (const auto& [value, name] : names)
    if (value == state)
      return name;
  return "UNKNOWN";
}

std::optional<task_state> parse_task_state(std::string_view text) {
  for (const auto& [value, name] : names)
    if (name == text)
      return value;
  return std::nullopt;
}

std::vector<task_state> all_task_states() {
  std::vector<task_state> states;
  for (const auto& entry : names)
    states.push_back(entry.first);
  return states;
}

bool can_transition(task_state from, task_state to) {
  using s = task_state;
  // Forward only (design.md §3). Replaying a dead letter (FAILED/DEAD -> PENDING) is
  // deliberately absent: a replay must be an explicit operation, not a state-machine edge.
  switch (from) {
  case s::pending:
    return to == s::sending || to == s::expired || to == s::suppressed;
  case s::sending:
    // UNCONFIRMED: a call whose outcome is unknown, and the provider gave no answer to every
    // question about it; it may have the message, so it is not sent again.
    return to == s::sent || to == s::retry_wait || to == s::failed || to == s::dead ||
           to == s::unconfirmed;
  case s::retry_wait:
    return to == s::sending || to == s::expired || to == s::dead;
  case s::sent:
    // A receipt may skip steps (READ implies DELIVERED); "did not arrive" moves SENT to
    // UNDELIVERED; no final receipt in time moves it to UNCONFIRMED.
    return to == s::delivered || to == s::read || to == s::clicked || to == s::undelivered ||
           to == s::unconfirmed;
  case s::unconfirmed:
    return to == s::delivered || to == s::read || to == s::clicked;
  case s::delivered:
    return to == s::read || to == s::clicked;
  case s::read:
    return to == s::clicked;
  case s::clicked:
  case s::undelivered:
  case s::failed:
  case s::dead:
  case s::expired:
  case s::suppressed:
    return false;
  }
  return false;
}

bool is_terminal(task_state state) {
  switch (state) {
  case task_state::pending:
  case task_state::sending:
  case task_state::retry_wait:
    return false;
  default:
    return true;
  }
}

bool can_replay(task_state state) {
  return state == task_state::dead || state == task_state::failed ||
         state == task_state::suppressed;
}

bool reached_user(task_state state) {
  return state == task_state::sent || state == task_state::delivered || state == task_state::read ||
         state == task_state::clicked;
}

std::string_view to_string(coverage value) {
  switch (value) {
  case coverage::covered:
    return "covered";
  case coverage::pending:
    return "pending";
  case coverage::unknown:
    return "unknown";
  case coverage::none:
    return "none";
  }
  return "none";
}

std::optional<coverage> parse_coverage(std::string_view text) {
  for (auto value : {coverage::covered, coverage::pending, coverage::unknown, coverage::none})
    if (to_string(value) == text)
      return value;
  return std::nullopt;
}

} // namespace herald::domain
