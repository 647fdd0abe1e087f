#include "persistence/template_json.hpp"

#include "persistence/task_store.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include <boost/json.hpp>

namespace herald::persistence {
namespace json = boost::json;

namespace {

using decode_error = std::optional<domain::validation_error>;

domain::validation_error invalid(const std::string& field, std::string message) {
  return domain::validation_error{400, "invalid_request", field + ": " + std::move(message), field};
}

decode_error read_text(const json::object& object, std::string_view key, const std::string& field,
                       std::optional<std::string>& out) {
  const auto* value = object.if_contains(key);
  if (value == nullptr || value->is_null())
    return std::nullopt;
  if (!value->is_string())
    return invalid(field, "must be a string");
  out.emplace(value->get_string().data(), value->get_string().size());
  return std::nullopt;
}

/// Refuses a key of `object` that `known` does not name: a typo ("bodi") must not be dropped.
decode_error only_known(const json::object& object, const std::string& at,
                        std::initializer_list<std::string_view> known) {
  for (const auto& entry : object)
    if (std::find(known.begin(), known.end(), entry.key()) == known.end())
      return invalid(at.empty() ? std::string(entry.key()) : at + "." + std::string(entry.key()),
                     "is not a field of a template definition");
  return std::nullopt;
}

decode_error read_channel(const json::value& value, const std::string& field,
                          domain::channel_text& out) {
  if (!value.is_object())
    return invalid(field, "must be an object with title and/or body");
  const auto& object = value.get_object();
  if (auto error = only_known(object, field, {"title", "body"}))
    return error;
  if (auto error = read_text(object, "title", field + ".title", out.title))
    return error;
  return read_text(object, "body", field + ".body", out.body);
}

decode_error read_locale(const json::value& value, const std::string& field,
                         domain::locale_text& out) {
  if (!value.is_object())
    return invalid(field, "must be an object with title, body and channels");
  const auto& object = value.get_object();
  if (auto error = only_known(object, field, {"title", "body", "channels"}))
    return error;
  std::optional<std::string> title;
  std::optional<std::string> body;
  if (auto error = read_text(object, "title", field + ".title", title))
    return error;
  if (auto error = read_text(object, "body", field + ".body", body))
    return error;
  out.title = title.value_or("");
  out.body = body.value_or("");
  const auto* channels = object.if_contains("channels");
  if (channels == nullptr || channels->is_null())
    return std::nullopt;
  if (!channels->is_object())
    return invalid(field + ".channels", "must be an object of channel to {title, body}");
  for (const auto& entry : channels->get_object()) {
    std::string channel(entry.key());
    if (auto error =
            read_channel(entry.value(), field + ".channels." + channel, out.channels[channel]))
      return error;
  }
  return std::nullopt;
}

} // namespace

std::variant<domain::template_definition, domain::validation_error>
definition_from_json(const json::value& value) {
  if (!value.is_object())
    return domain::validation_error{400, "invalid_request", "the definition must be a JSON object",
                                    ""};
  const auto& object = value.get_object();
  if (auto error = only_known(object, "", {"default_locale", "locales", "variables"}))
    return *error;
  domain::template_definition definition;
  std::optional<std::string> default_locale;
  if (auto error = read_text(object, "default_locale", "default_locale", default_locale))
    return *error;
  definition.default_locale = default_locale.value_or("");
  const auto* locales = object.if_contains("locales");
  if (locales == nullptr || !locales->is_object())
    return invalid("locales", "is required: an object of locale tag to {title, body, channels}");
  for (const auto& entry : locales->get_object()) {
    std::string tag(entry.key());
    if (auto error = read_locale(entry.value(), "locales." + tag, definition.locales[tag]))
      return *error;
  }
  if (const auto* variables = object.if_contains("variables");
      variables != nullptr && !variables->is_null()) {
    if (!variables->is_array())
      return invalid("variables", "must be an array of parameter names");
    auto& names = definition.variables.emplace();
    const auto& array = variables->get_array();
    for (std::size_t i = 0; i < array.size(); ++i) {
      if (!array[i].is_string())
        return invalid("variables[" + std::to_string(i) + "]", "must be a string");
      names.emplace_back(array[i].get_string().data(), array[i].get_string().size());
    }
  }
  return definition;
}

json::value definition_to_json(const domain::template_definition& definition) {
  json::object locales;
  for (const auto& [tag, text] : definition.locales) {
    json::object locale{{"title", text.title}, {"body", text.body}};
    if (!text.channels.empty()) {
      json::object channels;
      for (const auto& [channel, own] : text.channels) {
        json::object entry;
        if (own.title)
          entry["title"] = *own.title;
        if (own.body)
          entry["body"] = *own.body;
        channels[channel] = std::move(entry);
      }
      locale["channels"] = std::move(channels);
    }
    locales[tag] = std::move(locale);
  }
  json::object out{{"default_locale", definition.default_locale}, {"locales", std::move(locales)}};
  if (definition.variables) {
    json::array names;
    for (const auto& name : *definition.variables)
      names.emplace_back(name);
    out["variables"] = std::move(names);
  }
  return out;
}

domain::template_definition stored_definition(std::string_view text) {
  json::error_code ec;
  auto value = json::parse(json::string_view(text.data(), text.size()), ec);
  if (ec)
    throw store_error("a stored template definition is not JSON: " + ec.message());
  auto definition = definition_from_json(value);
  if (auto* error = std::get_if<domain::validation_error>(&definition))
    throw store_error("a stored template definition is malformed: " + error->message);
  return std::move(std::get<domain::template_definition>(definition));
}

} // namespace herald::persistence
