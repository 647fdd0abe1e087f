#pragma once

#include "actors/interfaces.hpp"

#include <memory>

namespace herald::actors {

/// Serves reads (look-ups, recovery pages, counts, pings) on a connection of its own. Spawn
/// it detached: task_store calls block.
struct store_reader_state {
  static constexpr const char* name = "store_reader";
  std::shared_ptr<persistence::task_store> store;
};

store_reader_actor::behavior_type
store_reader(store_reader_actor::stateful_pointer<store_reader_state> self,
             std::shared_ptr<persistence::task_store> store);

} // namespace herald::actors
