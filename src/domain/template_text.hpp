#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace herald::domain {

/// Where a template's text breaks the placeholder syntax.
struct template_syntax_error {
  std::size_t position = 0; ///< 1-based, in characters (UTF-8 code points)
  std::string message;
};

/// A parameter the template names and the request did not give.
struct missing_parameter {
  std::string name;
};

/// A placeholder of a template's text: the parameter it names and where it starts.
struct placeholder {
  std::string name;
  std::size_t position = 0; ///< 1-based, in characters (UTF-8 code points), of its "${" or "{{"
};

/// Whether `c` may be part of a parameter name: `A-Z a-z 0-9 _ . -`.
bool is_parameter_name_char(char c);

/// Characters (UTF-8 code points) of `text`: what positions and length limits count.
std::size_t character_count(std::string_view text);

/// Every placeholder of `text`, in order, up to the first syntax error (check_template's).
std::vector<placeholder> placeholders_of(std::string_view text);

/// The first syntax error in a template's text, if any. Placeholders:
/// - `${name}`, the seeds' form: a name of `A-Z a-z 0-9 _ . -` closed by `}`; anything else
///   after `${` is an error. `$$` is a literal `$`: `$${` is the text `${`, and `$$${price}`
///   a dollar sign before the value.
/// - `{{name}}`, kept from herald's first templates (spaces inside the braces allowed):
///   double braces around anything but a name are plain text, as before.
std::optional<template_syntax_error> check_template(std::string_view text);

/// The text with every placeholder replaced by its parameter, inserted as data: a value is
/// never scanned for placeholders, so `${x}` or `{{x}}` in a value render literally.
std::variant<std::string, missing_parameter, template_syntax_error>
render_template(std::string_view text, const std::map<std::string, std::string>& params);

} // namespace herald::domain
