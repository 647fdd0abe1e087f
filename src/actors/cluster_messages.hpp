#pragma once

// The messages that travel between the nodes of a cluster (CAF middleman). Each has an
// inspect() overload and is registered by name (register_types), so a node serialises it; no
// callbacks, no pointers, nothing that only means something inside one process.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace herald::actors {

/// The names the cluster's messages travel under (registered in atoms.cpp; the cluster port's
/// frame check lets through only messages of these and CAF's own node probe).
inline constexpr char member_beat_type_name[] = "herald.member_beat";
inline constexpr char task_handoff_type_name[] = "herald.task_handoff";

/// A heartbeat: what a node tells its peers about itself, every heartbeat interval.
struct member_beat {
  std::string cluster_id; ///< the installation's (domain::cluster_id_for): another one's is ignored
  std::string node_id;
  std::string address; ///< where its cluster actor listens (its `cluster.listen`)
  std::uint64_t in_flight = 0;
  std::uint64_t partitions_owned = 0;
  /// Whether it reaches the database: a node that does not takes no partitions, so the others
  /// take over the ones it held.
  bool takes_partitions = true;
};

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, member_beat& x) {
  return f(caf::meta::type_name(member_beat_type_name), x.cluster_id, x.node_id, x.address,
           x.in_flight, x.partitions_owned, x.takes_partitions);
}

/// New tasks of the receiver's partitions, accepted by another node: the receiver reads them
/// from the database and sends them (only ids travel; the database holds the rest).
struct task_handoff {
  std::string cluster_id; ///< the sender's installation's: another one's is refused
  std::vector<std::string> task_ids;
};

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, task_handoff& x) {
  return f(caf::meta::type_name(task_handoff_type_name), x.cluster_id, x.task_ids);
}

} // namespace herald::actors
