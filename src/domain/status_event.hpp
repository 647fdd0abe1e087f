#pragma once

#include "domain/task_state.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herald::domain {

/// The status event a task entering `state` reports to the calling system ("task.sent",
/// "task.delivered", …), or nullopt for the states on the way (PENDING, SENDING, RETRY_WAIT).
std::optional<std::string_view> event_type_of(task_state state);

/// Whether `type` is an event type herald sends.
bool is_event_type(std::string_view type);

/// The event's id: the same for the same task entering the same state, however often the
/// change is written, so a receiver can deduplicate by it ("evt_<task id>_<state>").
std::string event_id_for(std::string_view task_id, task_state state);

/// The state an event type reports ("task.delivered" -> DELIVERED), or nullopt.
std::optional<task_state> state_of_event_type(std::string_view type);

/// The states whose entry writes an event, for the enabled `types` (config events.types; empty:
/// every type), in event-type order.
std::vector<task_state> event_states_for(const std::vector<std::string>& types);

} // namespace herald::domain
