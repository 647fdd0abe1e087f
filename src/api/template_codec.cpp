#include "api/template_codec.hpp"

#include "persistence/template_json.hpp"

#include <limits>
#include <utility>

#include <boost/json.hpp>

namespace herald::api {
namespace json = boost::json;

namespace {

json::object text_object(const domain::rendered_text& text) {
  return json::object{{"title", text.title}, {"body", text.body}};
}

} // namespace

std::variant<domain::template_definition, domain::validation_error>
decode_template_definition(std::string_view body, unsigned max_depth) {
  json::monotonic_resource memory;
  auto parsed = parse_json_object(body, max_depth, memory);
  if (auto* failure = std::get_if<domain::validation_error>(&parsed))
    return std::move(*failure);
  return persistence::definition_from_json(std::get<json::value>(parsed));
}

std::variant<preview_request, domain::validation_error>
decode_preview_request(std::string_view body, unsigned max_depth) {
  json::monotonic_resource memory;
  auto parsed = parse_json_object(body, max_depth, memory);
  if (auto* failure = std::get_if<domain::validation_error>(&parsed))
    return std::move(*failure);
  preview_request request;
  for (const auto& entry : std::get<json::value>(parsed).get_object()) {
    const std::string key(entry.key());
    const auto& value = entry.value();
    if (value.is_null())
      continue;
    if (key == "params") {
      if (auto error = decode_params(value, request.params))
        return *error;
    } else if (key == "locale") {
      if (!value.is_string())
        return domain::validation_error{400, "invalid_request", "locale must be a string",
                                        "locale"};
      request.locale.assign(value.get_string().data(), value.get_string().size());
    } else if (key == "version") {
      const auto number = value.if_int64();
      if (number == nullptr || *number < 1 || *number > std::numeric_limits<std::int32_t>::max())
        return domain::validation_error{400, "invalid_request",
                                        "version must be a positive integer", "version"};
      request.version = static_cast<std::uint32_t>(*number);
    } else {
      return domain::validation_error{400, "invalid_request", "unknown field '" + key + "'", key};
    }
  }
  return request;
}

std::string encode_stored_template(const domain::stored_template& stored) {
  json::object body{{"code", stored.code},
                    {"version", stored.version},
                    {"created_at", domain::format_rfc3339(stored.created_at)}};
  auto definition = persistence::definition_to_json(stored.definition);
  for (auto& entry : definition.as_object())
    body[entry.key()] = std::move(entry.value());
  return json::serialize(body);
}

std::string encode_template_preview(const domain::stored_template& stored,
                                    const std::vector<domain::locale_preview>& previews) {
  json::array locales;
  for (const auto& preview : previews) {
    json::object item = text_object(preview.text);
    item["locale"] = preview.locale;
    json::object channels;
    for (const auto& [channel, text] : preview.channels)
      channels[channel] = text_object(text);
    item["channels"] = std::move(channels);
    locales.push_back(std::move(item));
  }
  json::object body{{"code", stored.code}, {"version", stored.version}};
  body["locales"] = std::move(locales);
  return json::serialize(body);
}

} // namespace herald::api
