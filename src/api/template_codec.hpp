#pragma once

// JSON of the templates API (/v1/templates/{code}, /v1/templates/{code}/preview).

#include "api/json_codec.hpp"
#include "domain/template_definition.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace herald::api {

/// Turns a PUT /v1/templates/{code} body into a definition: {"default_locale", "locales":
/// {tag: {"title", "body", "channels": {channel: {"title", "body"}}}}, "variables": [...]}.
/// Checks the JSON contract only (400 invalid_request naming the field); what the text may say
/// is domain::check_definition's (422 invalid_template).
std::variant<domain::template_definition, domain::validation_error>
decode_template_definition(std::string_view body, unsigned max_depth = default_max_json_depth);

/// A POST /v1/templates/{code}/preview body.
struct preview_request {
  std::map<std::string, std::string> params;
  std::string locale;                   ///< empty: every locale of the template
  std::optional<std::uint32_t> version; ///< none: the latest
};

/// {"params": {...}, "locale"?: "zh-CN", "version"?: N}; 400 invalid_request otherwise.
std::variant<preview_request, domain::validation_error>
decode_preview_request(std::string_view body, unsigned max_depth = default_max_json_depth);

/// {"code","version","created_at", then the definition's fields}.
std::string encode_stored_template(const domain::stored_template& stored);

/// {"code","version","locales":[{"locale","title","body","channels":{channel:{"title","body"}}}]}.
std::string encode_template_preview(const domain::stored_template& stored,
                                    const std::vector<domain::locale_preview>& previews);

} // namespace herald::api
