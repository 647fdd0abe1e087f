#pragma once

#include <string>
#include <vector>

namespace herald::tools {

/// `herald load --target HOST:PORT ...`: drives a running herald with events and checks the
/// invariants of design.md §4 at the end. `args` excludes the verb. Returns 0 when every
/// invariant holds, 1 on a violation, 2 on bad usage.
int run_load(const std::vector<std::string>& args);

} // namespace herald::tools
