#include "tools/load_generator.hpp"

namespace herald::tools {

int run_load(const std::vector<std::string>&) { return 2; }

} // namespace herald::tools
