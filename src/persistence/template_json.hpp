#pragma once

// The JSON form of a stored template's definition: what PUT /v1/templates/{code} takes, what
// the templates table holds (definition_json) and what GET answers (docs/api.md).

#include "domain/template_definition.hpp"
#include "domain/validation.hpp"

#include <string>
#include <string_view>
#include <variant>

#include <boost/json/value.hpp>

namespace herald::persistence {

/// The definition a JSON object describes: {"default_locale", "locales": {tag: {"title"?,
/// "body", "channels"?: {channel: {"title"?, "body"?}}}}, "variables"?: [names]}. Checks the
/// shape only (400 invalid_request naming the field: unknown key, wrong type); what the text
/// may say is domain::check_definition's.
std::variant<domain::template_definition, domain::validation_error>
definition_from_json(const boost::json::value& value);

/// The definition as a JSON object, in the form definition_from_json reads.
boost::json::value definition_to_json(const domain::template_definition& definition);

/// A definition_json column as herald wrote it; throws store_error when it is not one.
domain::template_definition stored_definition(std::string_view text);

} // namespace herald::persistence
