#include "app/cli.hpp"

namespace herald::app {

const char* usage_text() {
  return R"(herald - notifications sent once per user and channel

usage:
  herald serve   [--config FILE] [--listen HOST:PORT] [--db URL] [--log-level LEVEL]
                 [--test-clock TIME]
  herald migrate [--config FILE] [--db URL]
  herald keys create --tenant T --scopes submit,read,admin,ops [--config FILE] [--db URL]
                                                     prints a new API key, once
  herald keys list   [--config FILE] [--db URL]      id, tenant, scopes, created, revoked
  herald keys revoke ID [--config FILE] [--db URL]   refused within auth.key_refresh_ms
  herald sim-provider --listen HOST:PORT [options]   simulated provider for tests (--help)
  herald load --target HOST:PORT [options]           load generator and checker (--help)
  herald --help
  herald --version

  --config FILE        JSON configuration (comments allowed); default: the built-in one
                       (SQLite under ./var, simulated sms, wechat, app, email; the inbox inapp)
  --listen HOST:PORT   HTTP address; default 127.0.0.1:8080
  --db URL             sqlite:PATH or postgresql://user@host:port/db; default sqlite:var/herald.db
  --log-level LEVEL    debug, info, warn or error; default info
  --test-clock TIME    tests and drills only: herald's clock starts at TIME (RFC 3339),
                       e.g. 23:00 in a user's zone, and runs on from there

exit codes: 0 ok, 1 runtime failure (database unreachable, port taken), 2 bad usage or config
)";
}

command_line parse_command_line(const std::vector<std::string>& args) {
  command_line cmd;
  if (args.empty())
    throw usage_error("missing command; try 'herald --help'");
  auto& verb = args[0];
  if (verb == "--help" || verb == "-h" || verb == "help") {
    cmd.what = command_line::verb::help;
    return cmd;
  }
  if (verb == "--version" || verb == "version") {
    cmd.what = command_line::verb::version;
    return cmd;
  }
  if (verb == "sim-provider" || verb == "load") {
    cmd.what = verb == "load" ? command_line::verb::load : command_line::verb::sim_provider;
    cmd.tool_args.assign(args.begin() + 1, args.end());
    return cmd;
  }
  if (verb == "serve")
    cmd.what = command_line::verb::serve;
  else if (verb == "migrate")
    cmd.what = command_line::verb::migrate;
  else if (verb == "keys")
    cmd.what = command_line::verb::keys;
  else
    throw usage_error("unknown command '" + verb + "'; try 'herald --help'");

  std::size_t first_option = 1;
  if (cmd.what == command_line::verb::keys) {
    auto action = args.size() > 1 ? args[1] : "";
    if (action == "create")
      cmd.keys = command_line::keys_action::create;
    else if (action == "list")
      cmd.keys = command_line::keys_action::list;
    else if (action == "revoke") {
      if (args.size() < 3 || args[2].rfind("--", 0) == 0)
        throw usage_error("'herald keys revoke' needs the key's id");
      cmd.keys = command_line::keys_action::revoke;
      cmd.key_id = args[2];
      ++first_option;
    } else
      throw usage_error("'herald keys' needs create, list or revoke; try 'herald --help'");
    ++first_option;
  }
  bool creating_key =
      cmd.what == command_line::verb::keys && cmd.keys == command_line::keys_action::create;

  for (std::size_t i = first_option; i < args.size(); ++i) {
    auto& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      cmd.what = command_line::verb::help;
      return cmd;
    }
    auto eq = arg.find('=');
    auto name = arg.substr(0, eq);
    std::optional<std::string>* target = nullptr;
    if (name == "--config")
      target = &cmd.config_file;
    else if (name == "--db")
      target = &cmd.database;
    else if (name == "--listen" && cmd.what == command_line::verb::serve)
      target = &cmd.listen;
    else if (name == "--log-level" && cmd.what == command_line::verb::serve)
      target = &cmd.log_level;
    else if (name == "--test-clock" && cmd.what == command_line::verb::serve)
      target = &cmd.test_clock;
    else if (name == "--tenant" && creating_key)
      target = &cmd.tenant;
    else if (name == "--scopes" && creating_key)
      target = &cmd.scopes;
    else
      throw usage_error("unknown option '" + name + "' for '" + verb + "'; try 'herald --help'");
    if (eq != std::string::npos)
      *target = arg.substr(eq + 1);
    else if (i + 1 < args.size())
      *target = args[++i];
    else
      throw usage_error("option '" + name + "' needs a value");
    if ((*target)->empty())
      throw usage_error("option '" + name + "' needs a non-empty value");
  }
  if (creating_key && (!cmd.tenant || !cmd.scopes))
    throw usage_error("'herald keys create' needs --tenant and --scopes");
  return cmd;
}

} // namespace herald::app
