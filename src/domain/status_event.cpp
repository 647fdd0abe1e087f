#include "domain/status_event.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace herald::domain {
namespace {

constexpr std::array<std::pair<task_state, std::string_view>, 10> event_types = {{
    {task_state::sent, "task.sent"},
    {task_state::delivered, "task.delivered"},
    {task_state::read, "task.read"},
    {task_state::clicked, "task.clicked"},
    {task_state::undelivered, "task.undelivered"},
    {task_state::unconfirmed, "task.unconfirmed"},
    {task_state::failed, "task.failed"},
    {task_state::dead, "task.dead"},
    {task_state::expired, "task.expired"},
    {task_state::suppressed, "task.suppressed"},
}};

} // namespace

std::optional<std::string_view> event_type_of(task_state state) {
  for (const auto& [candidate, type] : event_types)
    if (candidate == state)
      return type;
  return std::nullopt;
}

std::optional<task_state> state_of_event_type(std::string_view type) {
  for (const auto& [state, candidate] : event_types)
    if (candidate == type)
      return state;
  return std::nullopt;
}

bool is_event_type(std::string_view type) {
  return state_of_event_type(type).has_value();
}

std::vector<task_state> event_states_for(const std::vector<std::string>& types) {
  std::vector<task_state> states;
  for (const auto& [state, type] : event_types)
    if (types.empty() || std::find(types.begin(), types.end(), type) != types.end())
      states.push_back(state);
  return states;
}

std::string event_id_for(std::string_view task_id, task_state state) {
  std::string id = "evt_";
  id.append(task_id).append("_");
  for (char c : to_string(state))
    id.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return id;
}

} // namespace herald::domain
