#pragma once

// Atoms and message types of herald's actors, registered in one place (the value types and
// their type ids: message_types.hpp). Atom texts are at most 10 characters (CAF 0.17); two
// atoms with the same text are the same type.

#include "actors/message_types.hpp"

#include <optional>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/type_id.hpp>

CAF_ADD_ATOM(herald, herald::atoms, claim_atom, "claim")
CAF_ADD_ATOM(herald, herald::atoms, apply_atom, "apply")
CAF_ADD_ATOM(herald, herald::atoms, flush_atom, "flush")
CAF_ADD_ATOM(herald, herald::atoms, find_atom, "find")
CAF_ADD_ATOM(herald, herald::atoms, ping_atom, "ping")
CAF_ADD_ATOM(herald, herald::atoms, recover_atom, "recover")
CAF_ADD_ATOM(herald, herald::atoms, dispatch_atom, "dispatch")
CAF_ADD_ATOM(herald, herald::atoms, result_atom, "result")
CAF_ADD_ATOM(herald, herald::atoms, tick_atom, "tick")
CAF_ADD_ATOM(herald, herald::atoms, submit_atom, "submit")
CAF_ADD_ATOM(herald, herald::atoms, ready_atom, "ready")
CAF_ADD_ATOM(herald, herald::atoms, drain_atom, "drain")
CAF_ADD_ATOM(herald, herald::atoms, count_atom, "count")
CAF_ADD_ATOM(herald, herald::atoms, schedule_atom, "schedule")
CAF_ADD_ATOM(herald, herald::atoms, cancel_atom, "cancel")
CAF_ADD_ATOM(herald, herald::atoms, failover_atom, "failover")
CAF_ADD_ATOM(herald, herald::atoms, replay_atom, "replay")
CAF_ADD_ATOM(herald, herald::atoms, sweep_atom, "sweep")
CAF_ADD_ATOM(herald, herald::atoms, letters_atom, "letters")
CAF_ADD_ATOM(herald, herald::atoms, rewrite_atom, "rewrite")
CAF_ADD_ATOM(herald, herald::atoms, attach_atom, "attach")
CAF_ADD_ATOM(herald, herald::atoms, page_atom, "page")
CAF_ADD_ATOM(herald, herald::atoms, shutdown_atom, "shutdown")
CAF_ADD_ATOM(herald, herald::atoms, deadline_atom, "deadline")
CAF_ADD_ATOM(herald, herald::atoms, receipt_atom, "receipt")
CAF_ADD_ATOM(herald, herald::atoms, stats_atom, "stats")
CAF_ADD_ATOM(herald, herald::atoms, awaiting_atom, "awaiting")
CAF_ADD_ATOM(herald, herald::atoms, status_atom, "status")
CAF_ADD_ATOM(herald, herald::atoms, inbox_atom, "inbox")
CAF_ADD_ATOM(herald, herald::atoms, item_atom, "item")
CAF_ADD_ATOM(herald, herald::atoms, due_atom, "due")
CAF_ADD_ATOM(herald, herald::atoms, load_atom, "load")
CAF_ADD_ATOM(herald, herald::atoms, user_atom, "user")
CAF_ADD_ATOM(herald, herald::atoms, update_atom, "update")
CAF_ADD_ATOM(herald, herald::atoms, put_atom, "put")
CAF_ADD_ATOM(herald, herald::atoms, template_atom, "template")
CAF_ADD_ATOM(herald, herald::atoms, delete_atom, "delete")
CAF_ADD_ATOM(herald, herald::atoms, refresh_atom, "refresh")
CAF_ADD_ATOM(herald, herald::atoms, beat_atom, "beat")
CAF_ADD_ATOM(herald, herald::atoms, handoff_atom, "handoff")
CAF_ADD_ATOM(herald, herald::atoms, forward_atom, "forward")
CAF_ADD_ATOM(herald, herald::atoms, dial_atom, "dial")
CAF_ADD_ATOM(herald, herald::atoms, cluster_atom, "cluster")
CAF_ADD_ATOM(herald, herald::atoms, own_atom, "own")
CAF_ADD_ATOM(herald, herald::atoms, seal_atom, "seal")
CAF_ADD_ATOM(herald, herald::atoms, taken_atom, "taken")

namespace herald::actors {

using namespace herald::atoms;

using message_plans = std::vector<domain::message_plan>;
using claim_results = std::vector<persistence::claim_result>;
using deliveries = std::vector<domain::delivery>;
using state_changes = std::vector<persistence::state_change>;
using attempt_records = std::vector<persistence::attempt_record>;
using task_ids = std::vector<std::string>;
using maybe_message_view = std::optional<persistence::message_view>;
using state_counts = std::vector<persistence::state_count>;
using dead_letters = std::vector<persistence::dead_letter>;
using stats_report = persistence::stats_report;
using receipt_inputs = std::vector<persistence::receipt_input>;
using receipt_outcomes = std::vector<persistence::receipt_outcome>;
using awaiting_receipts = std::vector<persistence::awaiting_receipt>;
using maybe_inbox_item = std::optional<persistence::inbox_item>;
using maybe_user_profile = std::optional<domain::user_profile>;
using maybe_stored_template = std::optional<domain::stored_template>;

/// herald's error codes inside CAF errors (category "herald", registered by
/// CAF_ERROR_CODE_ENUM below): `caf::make_error(errc::overloaded, "context")`.
enum class errc : std::uint8_t {
  store_unavailable = 1, ///< the database failed; nothing of the batch was committed
  overloaded,            ///< too much work in flight; try again later
};

/// Whether `err` carries herald's `code` (CAF 0.17 compares only its own enums with ==).
bool has_code(const caf::error& err, errc code);

/// The text of an error for logs and HTTP bodies (CAF's own rendering is terse).
std::string describe(const caf::error& err);

/// Registers every message type and the error category with an actor system config.
void register_types(caf::actor_system_config& cfg);

} // namespace herald::actors

CAF_ERROR_CODE_ENUM(herald::actors::errc, "herald")
