#pragma once

#include "domain/time.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace herald::domain {

/// One live member of a cluster as a node sees it (GET /v1/cluster).
struct member_view {
  std::string node_id;
  std::string address; ///< where its cluster actor listens; empty for a node without a cluster
  bool self = false;
  std::optional<timestamp> last_heartbeat; ///< when this node last heard it (self: now)
  std::size_t partitions_owned = 0;
  std::uint64_t in_flight = 0; ///< provider calls it had in flight, as of its last heartbeat
};

/// A configured peer address and whether this node holds a connection to it.
struct peer_view {
  std::string address;
  bool connected = false;
};

/// A node's view of its cluster: advisory (who sends what is decided by leases in the
/// database), but what ownership and the rate split follow.
struct cluster_view {
  std::string node_id;
  std::size_t partitions = 0;
  std::vector<member_view> members; ///< live members, by node_id
  std::vector<peer_view> peers;     ///< configured peers, in configuration order
};

} // namespace herald::domain
