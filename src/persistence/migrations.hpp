#pragma once

#include <string>
#include <vector>

namespace herald::persistence {

/// One versioned schema step, from src/persistence/migrations/<dialect>/<NNNN>_<name>.sql.
struct migration {
  std::string dialect; ///< "sqlite" or "postgresql"
  int version = 0;
  std::string name;
  std::string sql; ///< statements separated by ";" at line ends
};

/// Every migration of every dialect, ordered by version per dialect (generated at build time).
const std::vector<migration>& all_migrations();

} // namespace herald::persistence
