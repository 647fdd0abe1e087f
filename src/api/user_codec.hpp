#pragma once

// JSON of the users API (/v1/users/{user_id}, /v1/users/{user_id}/dnd).

#include "api/json_codec.hpp"
#include "domain/policy.hpp"
#include "domain/validation.hpp"

#include <string>
#include <string_view>
#include <variant>

namespace herald::api {

/// How a profile body changes the stored profile.
enum class profile_change {
  replace, ///< PUT: fields left out become empty (DND is kept)
  merge,   ///< PATCH: only the fields given change; contacts merge key by key
};

/// Turns a PUT or PATCH /v1/users/{user_id} body into a patch: {"contacts":{channel:address},
/// "time_zone","locale","opted_out_channels":[...],"opted_out_categories":[...]}, every field
/// optional. `null` clears a field; a `null` or empty address removes that channel's contact.
/// Checks the JSON contract (400 invalid_request: malformed, not an object, unknown field, wrong
/// type; duplicate_key) and category names (422 invalid_category); the rules that need the
/// installation are domain::check_user_patch's.
std::variant<domain::user_patch, domain::validation_error>
decode_user_profile(std::string_view body, profile_change change,
                    unsigned max_depth = default_max_json_depth);

/// Turns a PUT /v1/users/{user_id}/dnd body into a patch that sets do-not-disturb: `{}` (or an
/// empty body, or "until": null) until lifted, {"until":"<RFC 3339>"} until then. 400 as
/// decode_user_profile; 422 invalid_until when `until` is no RFC 3339 time.
std::variant<domain::user_patch, domain::validation_error>
decode_dnd(std::string_view body, unsigned max_depth = default_max_json_depth);

/// {"user_id","contacts":{...},"time_zone","locale","opted_out_channels":[...],
/// "opted_out_categories":[...],"dnd": null | {"until": null | RFC 3339},"updated_at"}. Contacts
/// are the user's own, stored for the caller: shown as stored, never masked.
std::string encode_user_profile(const domain::user_profile& user);

} // namespace herald::api
