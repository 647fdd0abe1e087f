// herald's executable: parse the command line, load and check the configuration, run.
#include "app/cli.hpp"
#include "app/config.hpp"
#include "app/keys_command.hpp"
#include "app/server.hpp"
#include "app/stop_signals.hpp"
#include "observability/log.hpp"
#include "tools/load_generator.hpp"
#include "tools/sim_provider.hpp"

#include <csignal>
#include <iostream>

namespace {

using namespace herald;

app::config load(const app::command_line& cmd) {
  auto cfg = cmd.config_file ? app::load_config_file(*cmd.config_file)
                             : app::parse_config(app::embedded_config_text());
  if (cmd.listen)
    app::apply_listen(*cmd.listen, cfg.http);
  if (cmd.database)
    cfg.database = *cmd.database;
  if (cmd.log_level && !log::parse_level(*cmd.log_level, cfg.log_level))
    throw app::config_error("--log-level must be one of debug, info, warn, error");
  if (cmd.test_clock) {
    cfg.test_clock_start = domain::parse_rfc3339(*cmd.test_clock);
    if (!cfg.test_clock_start)
      throw app::config_error(
          "--test-clock must be an RFC 3339 instant, e.g. 2026-12-03T23:00:00Z");
  }
  app::validate(cfg, cmd.config_file.value_or("embedded config"));
  return cfg;
}

} // namespace

int main(int argc, char** argv) {
  // Before any thread starts, so the drain on SIGTERM runs in one known place.
  app::block_stop_signals();
  std::signal(SIGPIPE, SIG_IGN);

  app::command_line cmd;
  app::config cfg;
  try {
    cmd = app::parse_command_line({argv + 1, argv + argc});
    if (cmd.what == app::command_line::verb::help) {
      std::cout << app::usage_text();
      return 0;
    }
    if (cmd.what == app::command_line::verb::version) {
      std::cout << "herald " << HERALD_VERSION << "\n";
      return 0;
    }
    if (cmd.what == app::command_line::verb::sim_provider)
      return tools::run_sim_provider(cmd.tool_args, app::wait_for_stop_signal);
    if (cmd.what == app::command_line::verb::load)
      return tools::run_load(cmd.tool_args);
    cfg = load(cmd);
  } catch (const app::usage_error& e) {
    std::cerr << "herald: " << e.what() << "\n";
    return 2;
  } catch (const app::config_error& e) {
    std::cerr << "herald: config error: " << e.what() << "\n";
    return 2;
  }
  log::init(cfg.log_level);
  if (cmd.what == app::command_line::verb::keys)
    return app::run_keys_command(cmd, cfg);
  return cmd.what == app::command_line::verb::migrate ? app::migrate(cfg) : app::serve(cfg);
}
