#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace herald::tools {

/// A command line the tools cannot run with; the message is the one-line reason (exit 2).
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// HOST:PORT, with "[v6]:PORT" accepted for IPv6 literals.
struct host_port {
  std::string host;
  std::uint16_t port = 0;

  std::string to_string() const;
};

/// Parses HOST:PORT; `allow_port_zero` lets a listener ask for any free port.
host_port parse_host_port(std::string_view option, std::string_view text,
                          bool allow_port_zero = false);

/// Whether `host` names this machine only: 127.0.0.0/8, ::1 or "localhost".
bool is_loopback_host(std::string_view host);

/// A probability in [0, 1].
double parse_rate(std::string_view option, std::string_view text);

/// An unsigned integer in [min, max].
std::uint64_t parse_count(std::string_view option, std::string_view text, std::uint64_t min,
                          std::uint64_t max);

/// A comma-separated list of non-empty names (e.g. "sms,wechat,app"), without repeats.
std::vector<std::string> parse_name_list(std::string_view option, std::string_view text);

/// Walks `args` one option at a time: `--name value`, `--name=value` or a bare `--flag`.
class arg_cursor {
public:
  explicit arg_cursor(const std::vector<std::string>& args) : args_(args) {}

  /// Moves to the next option; false when none is left. Throws on a non-option word.
  bool next();
  /// The current option's name including the dashes, e.g. "--listen".
  const std::string& name() const { return name_; }
  /// The current option's value; throws when there is none.
  std::string value();
  /// Throws when the current option carried "=value" (it is a flag).
  void flag() const;

private:
  const std::vector<std::string>& args_;
  std::size_t index_ = 0;
  std::string name_;
  std::string inline_value_;
  bool has_inline_value_ = false;
};

/// The options one tool accepts, and what each does; parse() walks a command line against
/// them. `--help` is always accepted (a flag). An option not declared is refused with
/// "unknown option --x (see herald TOOL --help)".
class option_parser {
public:
  /// Gets the option's name (for messages) and its value.
  using value_handler = std::function<void(const std::string& name, const std::string& value)>;

  /// `tool` names the subcommand in messages, e.g. "load".
  explicit option_parser(std::string tool) : tool_(std::move(tool)) {}

  /// `--name VALUE` or `--name=VALUE`, handed to `handle`.
  option_parser& value(std::string name, value_handler handle);
  /// A bare `--name` sets `target`; `--name=x` is refused.
  option_parser& flag(std::string name, bool& target);

  /// Applies `args` in order (a repeated option: the last one wins); throws usage_error.
  void parse(const std::vector<std::string>& args);

  /// Whether `name` (e.g. "--target") appeared in the parsed arguments.
  bool seen(const std::string& name) const { return seen_.count(name) != 0; }
  /// Whether --help appeared: the caller shows the usage and checks nothing else.
  bool help() const { return seen("--help"); }

private:
  struct option {
    value_handler on_value; ///< empty for a flag
    bool* flag = nullptr;
  };

  std::string tool_;
  std::map<std::string, option, std::less<>> options_;
  std::set<std::string, std::less<>> seen_;
};

} // namespace herald::tools
