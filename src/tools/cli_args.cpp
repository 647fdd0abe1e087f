#include "tools/cli_args.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace herald::tools {

namespace {

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

bool is_ipv4_loopback(std::string_view host) {
  // Four dotted decimal parts, the first one 127.
  int parts = 0;
  std::size_t start = 0;
  while (start <= host.size()) {
    auto end = host.find('.', start);
    auto part =
        host.substr(start, end == std::string_view::npos ? host.size() - start : end - start);
    unsigned value = 0;
    if (!all_digits(part) || part.size() > 3 ||
        std::from_chars(part.data(), part.data() + part.size(), value).ec != std::errc{} ||
        value > 255)
      return false;
    if (parts == 0 && value != 127)
      return false;
    ++parts;
    if (end == std::string_view::npos)
      break;
    start = end + 1;
  }
  return parts == 4;
}

} // namespace

std::string host_port::to_string() const {
  auto shown = host.find(':') == std::string::npos ? host : "[" + host + "]";
  return shown + ":" + std::to_string(port);
}

host_port parse_host_port(std::string_view option, std::string_view text, bool allow_port_zero) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    throw usage_error(std::string(option) + " wants HOST:PORT, got " + quoted(text));
  auto host = text.substr(0, colon);
  auto port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  unsigned long port = 0;
  if (!all_digits(port_text) || port_text.size() > 5 ||
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port).ec !=
          std::errc{} ||
      port > 65535 || (port == 0 && !allow_port_zero) || host.empty())
    throw usage_error(std::string(option) + " wants HOST:PORT, got " + quoted(text));
  return host_port{std::string(host), static_cast<std::uint16_t>(port)};
}

bool is_loopback_host(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1")
    return true;
  return is_ipv4_loopback(host);
}

double parse_rate(std::string_view option, std::string_view text) {
  std::string copy(text);
  char* end = nullptr;
  double value = copy.empty() ? -1 : std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(value) || value < 0 ||
      value > 1)
    throw usage_error(std::string(option) + " wants a number from 0 to 1, got " + quoted(text));
  return value;
}

std::uint64_t parse_count(std::string_view option, std::string_view text, std::uint64_t min,
                          std::uint64_t max) {
  std::uint64_t value = 0;
  if (!all_digits(text) ||
      std::from_chars(text.data(), text.data() + text.size(), value).ec != std::errc{} ||
      value < min || value > max)
    throw usage_error(std::string(option) + " wants a whole number from " + std::to_string(min) +
                      " to " + std::to_string(max) + ", got " + quoted(text));
  return value;
}

std::vector<std::string> parse_name_list(std::string_view option, std::string_view text) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (true) {
    auto end = text.find(',', start);
    auto name =
        text.substr(start, end == std::string_view::npos ? text.size() - start : end - start);
    bool valid =
        !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
        });
    if (!valid)
      throw usage_error(std::string(option) + " wants a comma-separated list of names, got " +
                        quoted(text));
    if (std::find(names.begin(), names.end(), name) != names.end())
      throw usage_error(std::string(option) + " names " + quoted(name) + " twice");
    names.emplace_back(name);
    if (end == std::string_view::npos)
      return names;
    start = end + 1;
  }
}

bool arg_cursor::next() {
  if (index_ >= args_.size())
    return false;
  const auto& word = args_[index_++];
  if (word.size() < 3 || word.compare(0, 2, "--") != 0)
    throw usage_error("unexpected argument " + quoted(word));
  auto equals = word.find('=');
  has_inline_value_ = equals != std::string::npos;
  name_ = word.substr(0, equals);
  inline_value_ = has_inline_value_ ? word.substr(equals + 1) : std::string();
  return true;
}

std::string arg_cursor::value() {
  if (has_inline_value_)
    return inline_value_;
  if (index_ >= args_.size())
    throw usage_error(name_ + " needs a value");
  return args_[index_++];
}

void arg_cursor::flag() const {
  if (has_inline_value_)
    throw usage_error(name_ + " takes no value");
}

option_parser& option_parser::value(std::string name, value_handler handle) {
  options_[std::move(name)] = option{std::move(handle), nullptr};
  return *this;
}

option_parser& option_parser::flag(std::string name, bool& target) {
  options_[std::move(name)] = option{{}, &target};
  return *this;
}

void option_parser::parse(const std::vector<std::string>& args) {
  arg_cursor cursor(args);
  while (cursor.next()) {
    const auto& name = cursor.name();
    auto found = options_.find(name);
    if (name == "--help") {
      cursor.flag();
    } else if (found == options_.end()) {
      throw usage_error("unknown option " + name + " (see herald " + tool_ + " --help)");
    } else if (found->second.flag) {
      cursor.flag();
      *found->second.flag = true;
    } else {
      found->second.on_value(name, cursor.value());
    }
    seen_.insert(name);
  }
}

} // namespace herald::tools
