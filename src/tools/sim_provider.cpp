#include "tools/sim_provider.hpp"

namespace herald::tools {

int run_sim_provider(const std::vector<std::string>&) { return 2; }

} // namespace herald::tools
