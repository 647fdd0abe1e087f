#include "domain/template_definition.hpp"

#include "domain/template_text.hpp"
#include "domain/user_validation.hpp"

#include <algorithm>

namespace herald::domain {
namespace {

validation_error invalid_template(std::string field, std::string message,
                                  std::optional<std::size_t> position = std::nullopt) {
  std::string text = field + ": ";
  if (position)
    text += "character " + std::to_string(*position) + ": ";
  return validation_error{422, "invalid_template", text + message, std::move(field), position};
}

/// One text of the definition with the JSON path it came from.
struct located_text {
  std::string field;
  const std::string* text;
};

/// Every text of one locale: its title and body, then each channel's override.
std::vector<located_text> texts_of(const std::string& tag, const locale_text& locale) {
  const std::string base = "locales." + tag;
  std::vector<located_text> texts{{base + ".title", &locale.title}, {base + ".body", &locale.body}};
  for (const auto& [channel, override_text] : locale.channels) {
    const std::string at = base + ".channels." + channel;
    if (override_text.title)
      texts.push_back({at + ".title", &*override_text.title});
    if (override_text.body)
      texts.push_back({at + ".body", &*override_text.body});
  }
  return texts;
}

std::optional<validation_error> check_text(const located_text& located,
                                           const std::set<std::string>* variables,
                                           const request_limits& limits) {
  const std::string& text = *located.text;
  const bool is_title = located.field.size() >= 6 &&
                        located.field.compare(located.field.size() - 6, 6, ".title") == 0;
  const std::size_t max = is_title ? limits.max_title_length : limits.max_body_length;
  if (text.size() > max)
    return invalid_template(located.field, "is longer than " + std::to_string(max) + " bytes");
  if (is_title ? has_control_chars(text) : has_control_chars_except_layout(text))
    return invalid_template(located.field, is_title ? "contains control characters"
                                                    : "contains control characters other than \\n "
                                                      "and \\t");
  if (auto error = check_template(text))
    return invalid_template(located.field, error->message, error->position);
  if (variables != nullptr)
    for (const auto& used : placeholders_of(text))
      if (variables->count(used.name) == 0)
        return invalid_template(located.field,
                                "placeholder '" + used.name + "' is not listed in variables",
                                used.position);
  return std::nullopt;
}

/// The body `channel` gets in `locale`: its override's, else the locale's.
const std::string& body_for(const locale_text& locale, const std::string& channel,
                            std::string* field) {
  const auto found = locale.channels.find(channel);
  if (found != locale.channels.end() && found->second.body) {
    *field += ".channels." + channel + ".body";
    return *found->second.body;
  }
  *field += ".body";
  return locale.body;
}

/// The text without its placeholders: what any rendering of it has at least.
std::string literal_text(const std::string& text) {
  std::map<std::string, std::string> nothing;
  for (const auto& used : placeholders_of(text))
    nothing.emplace(used.name, std::string());
  auto rendered = render_template(text, nothing);
  return std::holds_alternative<std::string>(rendered) ? std::get<std::string>(rendered) : text;
}

} // namespace

bool is_template_code(std::string_view code) {
  return !code.empty() && code.size() <= max_template_code_length &&
         std::all_of(code.begin(), code.end(), is_parameter_name_char);
}

std::optional<validation_error> check_definition(const template_definition& definition,
                                                 const std::set<std::string>& channels,
                                                 const request_limits& limits) {
  if (definition.locales.empty())
    return invalid_template("locales", "must hold at least one locale");
  if (definition.locales.size() > max_template_locales) // a preview renders every one
    return invalid_template("locales",
                            "holds more than " + std::to_string(max_template_locales) + " locales");
  if (definition.default_locale.empty())
    return invalid_template("default_locale", "is required");
  if (definition.locales.count(definition.default_locale) == 0)
    return invalid_template("default_locale", "'" + definition.default_locale +
                                                  "' is not one of the template's locales");
  std::optional<std::set<std::string>> variables;
  if (definition.variables) {
    if (definition.variables->size() > limits.max_params)
      return invalid_template("variables",
                              "has more than " + std::to_string(limits.max_params) + " entries");
    variables.emplace();
    for (std::size_t i = 0; i < definition.variables->size(); ++i) {
      const std::string& name = (*definition.variables)[i];
      if (name.empty() || name.size() > limits.max_param_key_length ||
          !std::all_of(name.begin(), name.end(), is_parameter_name_char))
        return invalid_template("variables[" + std::to_string(i) + "]",
                                "must be a parameter name of 1-" +
                                    std::to_string(limits.max_param_key_length) +
                                    " characters A-Z a-z 0-9 _ . -");
      variables->insert(name);
    }
  }
  for (const auto& [tag, locale] : definition.locales) {
    if (!is_plausible_locale(tag))
      return invalid_template("locales." + tag, "is not a BCP 47 language tag of at most " +
                                                    std::to_string(max_locale_length) +
                                                    " characters (e.g. zh-CN)");
    if (locale.body.empty())
      return invalid_template("locales." + tag + ".body", "is required");
    for (const auto& [channel, override_text] : locale.channels) {
      const std::string at = "locales." + tag + ".channels." + channel;
      if (channels.count(channel) == 0)
        return invalid_template(at, "names no configured channel");
      if (!override_text.title && !override_text.body)
        return invalid_template(at, "gives neither title nor body");
      if (override_text.body && override_text.body->empty())
        return invalid_template(at + ".body", "is empty");
    }
    for (const auto& located : texts_of(tag, locale))
      if (auto error = check_text(located, variables ? &*variables : nullptr, limits))
        return error;
    // A body the channel could never carry, whatever the parameters: refused now rather than
    // at every request.
    for (const auto& [channel, limit] : limits.body_character_limits) {
      if (channels.count(channel) == 0)
        continue;
      std::string field = "locales." + tag;
      const std::string& body = body_for(locale, channel, &field);
      const auto length = character_count(literal_text(body));
      if (length > limit)
        return invalid_template(field, "has " + std::to_string(length) +
                                           " characters without its parameters, over the " +
                                           channel + " limit of " + std::to_string(limit));
    }
  }
  return std::nullopt;
}

const std::string& choose_locale(const template_definition& definition,
                                 std::string_view requested) {
  if (!requested.empty()) {
    if (auto exact = definition.locales.find(std::string(requested));
        exact != definition.locales.end())
      return exact->first;
    const auto language = std::string(requested.substr(0, requested.find('-')));
    if (auto found = definition.locales.find(language); found != definition.locales.end())
      return found->first;
  }
  return definition.default_locale;
}

std::optional<validation_error> check_body_limit(const std::string& channel, std::string_view body,
                                                 const request_limits& limits,
                                                 std::string_view origin) {
  const auto limit = limits.body_character_limits.find(channel);
  if (limit == limits.body_character_limits.end())
    return std::nullopt;
  const auto length = character_count(body);
  if (length <= limit->second)
    return std::nullopt;
  return validation_error{422, "text_too_long",
                          std::string(origin) + " renders a " + channel + " body of " +
                              std::to_string(length) + " characters, over the limit of " +
                              std::to_string(limit->second),
                          "params"};
}

std::variant<rendered_text, validation_error>
render_definition(const template_definition& definition, const std::string& locale,
                  const std::string& channel, const std::map<std::string, std::string>& params,
                  const request_limits& limits, std::string_view code) {
  const auto found = definition.locales.find(locale);
  if (found == definition.locales.end()) // choose_locale gives only held ones
    return validation_error{422, "unknown_locale",
                            "template '" + std::string(code) + "' has no locale '" + locale + "'",
                            "locale"};
  const locale_text& text = found->second;
  const std::string* title = &text.title;
  const std::string* body = &text.body;
  if (auto own = text.channels.find(channel); !channel.empty() && own != text.channels.end()) {
    if (own->second.title)
      title = &*own->second.title;
    if (own->second.body)
      body = &*own->second.body;
  }
  rendered_text out;
  for (auto [source, target] : {std::pair{title, &out.title}, std::pair{body, &out.body}}) {
    auto rendered = render_template(*source, params);
    if (auto* missing = std::get_if<missing_parameter>(&rendered))
      return validation_error{422, "missing_parameter",
                              "template '" + std::string(code) + "' needs parameter '" +
                                  missing->name + "'",
                              "params." + missing->name};
    if (auto* error = std::get_if<template_syntax_error>(&rendered)) // checked when saved
      return validation_error{422, "invalid_template",
                              "template '" + std::string(code) + "' is broken at character " +
                                  std::to_string(error->position) + ": " + error->message,
                              "template", error->position};
    *target = std::move(std::get<std::string>(rendered));
  }
  // Parameters repeat: a short text with many placeholders can render far beyond what a
  // request may carry. Bounded as literal content is, with room for what templates add.
  if (out.title.size() > max_rendered_title_length || out.body.size() > max_rendered_body_length)
    return validation_error{
        422, "text_too_long",
        "template '" + std::string(code) + "' renders a title over " +
            std::to_string(max_rendered_title_length) + " bytes or a body over " +
            std::to_string(max_rendered_body_length) + " bytes with these parameters",
        "params"};
  if (!channel.empty())
    if (auto error =
            check_body_limit(channel, out.body, limits, "template '" + std::string(code) + "'"))
      return *error;
  return out;
}

std::variant<std::vector<locale_preview>, validation_error>
preview_definition(const template_definition& definition, std::string_view requested,
                   const std::set<std::string>& channels,
                   const std::map<std::string, std::string>& params, const request_limits& limits,
                   std::string_view code) {
  if (auto error = check_params(params, limits))
    return *error;
  std::vector<std::string> locales;
  if (!requested.empty())
    locales.push_back(choose_locale(definition, requested));
  else
    for (const auto& entry : definition.locales)
      locales.push_back(entry.first);
  std::vector<locale_preview> previews;
  for (const auto& locale : locales) {
    locale_preview preview;
    preview.locale = locale;
    auto text = render_definition(definition, locale, "", params, limits, code);
    if (auto* error = std::get_if<validation_error>(&text))
      return std::move(*error);
    preview.text = std::move(std::get<rendered_text>(text));
    for (const auto& channel : channels) {
      auto own = render_definition(definition, locale, channel, params, limits, code);
      if (auto* error = std::get_if<validation_error>(&own))
        return std::move(*error);
      preview.channels.emplace(channel, std::move(std::get<rendered_text>(own)));
    }
    previews.push_back(std::move(preview));
  }
  return previews;
}

void template_catalog::put(stored_template stored) {
  auto& entry = entries_[{stored.tenant, stored.code}];
  if (entry && entry->version > stored.version)
    return;
  entry = std::make_shared<const stored_template>(std::move(stored));
}

void template_catalog::erase(const std::string& tenant, const std::string& code) {
  entries_.erase({tenant, code});
}

std::shared_ptr<const stored_template> template_catalog::find(const std::string& tenant,
                                                              const std::string& code) const {
  const auto found = entries_.find({tenant, code});
  return found != entries_.end() ? found->second : nullptr;
}

} // namespace herald::domain
