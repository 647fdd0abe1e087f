#pragma once

// Atoms and message types of herald's actors, registered in one place. Atom texts are at most
// 10 characters (CAF 0.17); two atoms with the same text are the same type.

#include "api/service.hpp"
#include "domain/message.hpp"
#include "domain/template_definition.hpp"
#include "persistence/task_store.hpp"

#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
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

namespace herald::actors {

using namespace herald::atoms;

/// Answer to an HTTP submission (the HTTP layer's callback; never leaves the process).
using submit_callback =
    std::function<void(std::variant<persistence::claim_result, api::service_error>)>;
/// Answer to an HTTP message look-up.
using find_callback =
    std::function<void(std::variant<std::optional<persistence::message_view>, api::service_error>)>;
/// Answer to a readiness probe.
using ready_callback = std::function<void(bool ready, std::string reason)>;
/// Answer to a dead-letter listing.
using letters_callback =
    std::function<void(std::variant<std::vector<persistence::dead_letter>, api::service_error>)>;
/// Answer to a dead-letter replay.
using replay_callback =
    std::function<void(std::variant<persistence::replay_result, api::service_error>)>;

using message_plans = std::vector<domain::message_plan>;
using claim_results = std::vector<persistence::claim_result>;
/// Answer to an HTTP batch submission: one claim per plan, in order, or one error for all.
using batch_callback = std::function<void(std::variant<claim_results, api::service_error>)>;

using deliveries = std::vector<domain::delivery>;
using state_changes = std::vector<persistence::state_change>;
using attempt_records = std::vector<persistence::attempt_record>;
using task_ids = std::vector<std::string>;
using maybe_message_view = std::optional<persistence::message_view>;
using state_counts = std::vector<persistence::state_count>;
using dead_letters = std::vector<persistence::dead_letter>;
using stats_report = persistence::stats_report;
/// Answer to a stats read.
using stats_callback = std::function<void(std::variant<stats_report, api::service_error>)>;
using receipt_inputs = std::vector<persistence::receipt_input>;
using receipt_outcomes = std::vector<persistence::receipt_outcome>;
/// Answer to a provider's receipt callback.
using receipt_callback =
    std::function<void(std::variant<persistence::receipt_outcome, api::service_error>)>;
/// Answer to a signed push's seal: whether the store admitted it (the type of removed_callback,
/// allowed as a message type with it).
using admit_callback = std::function<void(std::variant<bool, api::service_error>)>;
using awaiting_receipts = std::vector<persistence::awaiting_receipt>;
using maybe_inbox_item = std::optional<persistence::inbox_item>;
/// Answer to an inbox page read.
using inbox_callback =
    std::function<void(std::variant<persistence::inbox_page, api::service_error>)>;
/// Answer to an inbox item look-up.
using item_callback = std::function<void(std::variant<maybe_inbox_item, api::service_error>)>;
using maybe_user_profile = std::optional<domain::user_profile>;
/// Answer to a user profile look-up.
using user_callback = std::function<void(std::variant<maybe_user_profile, api::service_error>)>;
/// Answer to a user profile change: the profile as committed.
using profile_callback =
    std::function<void(std::variant<domain::user_profile, api::service_error>)>;

using maybe_stored_template = std::optional<domain::stored_template>;
/// Answer to a template save: the version as committed.
using stored_template_callback =
    std::function<void(std::variant<domain::stored_template, api::service_error>)>;
/// Answer to a template look-up.
using template_callback =
    std::function<void(std::variant<maybe_stored_template, api::service_error>)>;
/// Answer to a template deletion: whether a live template was deleted.
using removed_callback = std::function<void(std::variant<bool, api::service_error>)>;

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

// Everything below stays inside one process (callbacks, std::optional, std::variant); what
// crosses nodes has an inspect() overload instead (actors/cluster_messages.hpp).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::domain::message_plan)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::domain::delivery)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::persistence::claim_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::message_plans)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::claim_results)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::batch_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::deliveries)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::state_changes)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::attempt_records)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::maybe_message_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::state_counts)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::submit_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::find_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::ready_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::letters_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::persistence::dead_letter_filter)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::replay_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::dead_letters)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::persistence::failover_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::persistence::state_change)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::persistence::replay_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::persistence::unfinished_filter)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::receipt_inputs)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::persistence::receipt_input)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::persistence::stats_query)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::stats_report)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::stats_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::receipt_outcomes)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::receipt_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::domain::push_seal)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::awaiting_receipts)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::persistence::awaiting_cursor)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::persistence::partition_filter)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::persistence::inbox_query)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::persistence::inbox_page)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::maybe_inbox_item)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::inbox_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::item_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::domain::user_patch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::domain::user_profile)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::maybe_user_profile)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::user_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::profile_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::domain::template_definition)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::stored_template_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::template_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::removed_callback)
