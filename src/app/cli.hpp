#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace herald::app {

/// Bad command-line usage; the message is one line.
class usage_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// What the command line asked for.
struct command_line {
  enum class verb { serve, migrate, keys, sim_provider, load, help, version };
  /// What `herald keys` does.
  enum class keys_action { create, list, revoke };
  verb what = verb::help;
  keys_action keys = keys_action::list;
  std::optional<std::string> tenant;  ///< keys create
  std::optional<std::string> scopes;  ///< keys create: "submit,read,admin,ops"
  std::string key_id;                 ///< keys revoke
  std::vector<std::string> tool_args; ///< for sim-provider and load: everything after the verb
  std::optional<std::string> config_file;
  std::optional<std::string> listen;
  std::optional<std::string> database;
  std::optional<std::string> log_level;
  std::optional<std::string> test_clock; ///< serve: RFC 3339 instant herald's clock starts at
};

/// Parses argv (without the program name). Throws usage_error.
command_line parse_command_line(const std::vector<std::string>& args);

/// The --help text.
const char* usage_text();

} // namespace herald::app
