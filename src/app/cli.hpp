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
  enum class verb { serve, migrate, sim_provider, load, help, version };
  verb what = verb::help;
  std::vector<std::string> tool_args; ///< for sim-provider and load: everything after the verb
  std::optional<std::string> config_file;
  std::optional<std::string> listen;
  std::optional<std::string> database;
  std::optional<std::string> log_level;
};

/// Parses argv (without the program name). Throws usage_error.
command_line parse_command_line(const std::vector<std::string>& args);

/// The --help text.
const char* usage_text();

} // namespace herald::app
