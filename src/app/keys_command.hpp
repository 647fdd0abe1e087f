#pragma once

#include "app/cli.hpp"
#include "app/config.hpp"

namespace herald::app {

/// `herald keys create|list|revoke` against the configured database (migrated first, like
/// serve does). create prints the new key alone on stdout, once; list never prints a key.
/// Returns the exit code: 0 ok, 1 database failure or unknown key, 2 bad arguments.
int run_keys_command(const command_line& cmd, const config& cfg);

} // namespace herald::app
