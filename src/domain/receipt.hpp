#pragma once

#include "domain/task_state.hpp"
#include "domain/time.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace herald::domain {

/// What a provider's receipt says about a sent task.
enum class receipt_status { delivered, read, clicked, undelivered };

/// Lower-case wire name ("delivered", …).
std::string_view to_string(receipt_status status);
/// Inverse of to_string; nullopt for anything else.
std::optional<receipt_status> parse_receipt_status(std::string_view text);

/// Where a receipt came from: a provider's callback, the reconciler asking the provider, or
/// the in-app inbox reporting a read.
enum class receipt_source { callback, query, inbox };
std::string_view to_string(receipt_source source);
std::optional<receipt_source> parse_receipt_source(std::string_view text);

/// The task state a receipt names.
task_state state_of(receipt_status status);

/// The state a task in `current` moves to on a receipt saying `status`, or nullopt when it
/// stays where it is. Monotonic: a receipt never moves a task back (a late DELIVERED after
/// READ changes nothing), may skip steps (READ on a SENT task: READ implies DELIVERED), and
/// "undelivered" only ends a task that no receipt has confirmed yet (SENT). A task not yet
/// SENT (its SENT commit still on its way) does not move: the receipt is kept and applied when
/// that commit lands.
std::optional<task_state> state_after_receipt(task_state current, receipt_status status);

/// Whether `id` could be a provider's id for a message: 1 to 200 printable ASCII characters,
/// no space. herald's own ids are; anything else (a NUL, a line break) names no task.
bool is_plausible_provider_id(std::string_view id);

/// Whether a task in `state` still waits for a receipt (its channel has a receipt window).
bool awaits_receipt(task_state state);

} // namespace herald::domain
