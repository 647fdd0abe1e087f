#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace herald::domain {

/// Where a task stands (design.md §3). Transitions only move forward.
enum class task_state {
  pending,    ///< accepted, not yet handed to a provider
  sending,    ///< committed before the provider call: found after a crash, the outcome is ambiguous
  sent,       ///< the provider accepted it
  delivered,  ///< the provider's receipt says it arrived
  read,       ///< the user opened it
  clicked,    ///< the user acted on it
  retry_wait, ///< a retryable failure; waits for next_attempt_at
  failed,     ///< a permanent provider error
  dead,       ///< attempts exhausted
  expired,    ///< expire_at passed before it could be sent
  suppressed, ///< policy decided not to send (with a reason)
  unconfirmed, ///< sent, but no final receipt came within the channel's window, none to ask
  undelivered, ///< the provider's receipt says it did not arrive (fails over like FAILED)
};

/// Upper-case wire and database name, e.g. "RETRY_WAIT".
std::string_view to_string(task_state state);

/// Inverse of to_string; nullopt for anything else.
std::optional<task_state> parse_task_state(std::string_view text);

/// Every state there is.
std::vector<task_state> all_task_states();

/// Whether design.md §3 allows moving from `from` to `to`.
bool can_transition(task_state from, task_state to);

/// Whether a dead letter in this state may be replayed (moved back to PENDING by an operator,
/// keeping its key, id and attempt count). The one deliberate exception to forward-only.
bool can_replay(task_state state);

/// Whether no further provider call will be made for a task in this state.
bool is_terminal(task_state state);

/// Whether a task in this state reached its user: the provider took it (SENT) or said it
/// arrived (DELIVERED, READ, CLICKED).
bool reached_user(task_state state);

/// Whether the user of a message that one task failed to reach got it anyway, judged by the
/// message's other tasks (GET /v1/dead-letters `coverage`).
enum class coverage {
  covered, ///< another task of the message reached the user
  pending, ///< none did yet, but another is still on its way
  unknown, ///< none is known to have: another ended UNCONFIRMED (sent, or in doubt, unconfirmed)
  none,    ///< none did and none will: the user got nothing
};

std::string_view to_string(coverage value);
std::optional<coverage> parse_coverage(std::string_view text);

/// The coverage given the states of the message's other tasks.
template <class States> coverage coverage_of(const States& others) {
  bool waiting = false;
  bool in_doubt = false;
  for (task_state state : others) {
    if (reached_user(state))
      return coverage::covered;
    waiting = waiting || !is_terminal(state);
    in_doubt = in_doubt || state == task_state::unconfirmed;
  }
  if (waiting)
    return coverage::pending;
  return in_doubt ? coverage::unknown : coverage::none;
}

} // namespace herald::domain
