#include "domain/template_text.hpp"

#include <algorithm>
#include <utility>

namespace herald::domain {
namespace {

/// The 1-based character (code point) position of the byte at `byte`.
std::size_t position_of(std::string_view text, std::size_t byte) {
  return character_count(text.substr(0, std::min(byte, text.size()))) + 1;
}

template_syntax_error error_at(std::string_view text, std::size_t byte, std::string message) {
  return {position_of(text, byte), std::move(message)};
}

/// The `${name}` at `open` (which starts with "${"): the name and the byte after the `}`.
std::variant<std::pair<std::string_view, std::size_t>, template_syntax_error>
dollar_placeholder(std::string_view text, std::size_t open) {
  const std::size_t name_begin = open + 2;
  const std::size_t close = text.find('}', name_begin);
  if (close == std::string_view::npos)
    return error_at(text, open,
                    "\"${\" is not closed by \"}\" (write \"$${\" for a literal \"${\")");
  if (close == name_begin)
    return error_at(text, open, "\"${}\" names no parameter");
  for (std::size_t i = name_begin; i < close; ++i)
    if (!is_parameter_name_char(text[i]))
      return error_at(text, i,
                      "a parameter name may only contain A-Z a-z 0-9 _ . - (in \"" +
                          std::string(text.substr(open, close + 1 - open)) + "\")");
  return std::pair{text.substr(name_begin, close - name_begin), close + 1};
}

/// The `{{ name }}` at `open`, or nothing when the braces hold anything else (plain text).
std::optional<std::pair<std::string_view, std::size_t>> brace_placeholder(std::string_view text,
                                                                          std::size_t open) {
  std::size_t cursor = open + 2;
  while (cursor < text.size() && text[cursor] == ' ')
    ++cursor;
  const std::size_t name_begin = cursor;
  while (cursor < text.size() && is_parameter_name_char(text[cursor]))
    ++cursor;
  const std::size_t name_end = cursor;
  while (cursor < text.size() && text[cursor] == ' ')
    ++cursor;
  if (name_end == name_begin || text.compare(cursor, 2, "}}") != 0)
    return std::nullopt;
  return std::pair{text.substr(name_begin, name_end - name_begin), cursor + 2};
}

/// Walks the text once: on_text(literal run) and on_name(parameter name, byte offset of the
/// placeholder) in order; on_name returns false to stop. Returns the first syntax error.
template <class OnText, class OnName>
std::optional<template_syntax_error> scan(std::string_view text, OnText&& on_text,
                                          OnName&& on_name) {
  std::size_t literal_begin = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (text.compare(pos, 2, "$$") == 0) { // a literal "$": "$${" is text, "$$${x}" is "$" + x
      on_text(text.substr(literal_begin, pos + 1 - literal_begin));
      literal_begin = pos + 2;
      pos += 2;
      continue;
    }
    std::optional<std::pair<std::string_view, std::size_t>> found;
    if (text.compare(pos, 2, "${") == 0) {
      auto placeholder = dollar_placeholder(text, pos);
      if (auto* error = std::get_if<template_syntax_error>(&placeholder))
        return std::move(*error);
      found = std::get<std::pair<std::string_view, std::size_t>>(placeholder);
    } else if (text.compare(pos, 2, "{{") == 0) {
      found = brace_placeholder(text, pos);
    }
    if (!found) {
      // One character on, so "{{{name}}}" still finds the placeholder at the second brace.
      ++pos;
      continue;
    }
    on_text(text.substr(literal_begin, pos - literal_begin));
    if (!on_name(found->first, pos))
      return std::nullopt;
    pos = literal_begin = found->second;
  }
  on_text(text.substr(literal_begin));
  return std::nullopt;
}

} // namespace

bool is_parameter_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

std::size_t character_count(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80; // not a continuation byte
  }));
}

std::vector<placeholder> placeholders_of(std::string_view text) {
  std::vector<placeholder> found;
  scan(
      text, [](std::string_view) {},
      [&](std::string_view name, std::size_t at) {
        found.push_back(placeholder{std::string(name), position_of(text, at)});
        return true;
      });
  return found;
}

std::optional<template_syntax_error> check_template(std::string_view text) {
  return scan(
      text, [](std::string_view) {}, [](std::string_view, std::size_t) { return true; });
}

std::variant<std::string, missing_parameter, template_syntax_error>
render_template(std::string_view text, const std::map<std::string, std::string>& params) {
  if (auto error = check_template(text)) // a broken template is broken whatever the params
    return std::move(*error);
  std::string out;
  out.reserve(text.size());
  std::optional<missing_parameter> missing;
  scan(
      text, [&](std::string_view literal) { out.append(literal); },
      [&](std::string_view name, std::size_t) {
        const auto value = params.find(std::string(name));
        if (value == params.end()) {
          missing = missing_parameter{std::string(name)};
          return false;
        }
        out += value->second;
        return true;
      });
  if (missing)
    return std::move(*missing);
  return out;
}

} // namespace herald::domain
