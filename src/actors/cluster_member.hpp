#pragma once

#include "actors/cluster_share.hpp"
#include "actors/cluster_transport.hpp"
#include "actors/interfaces.hpp"
#include "domain/time.hpp"
#include "observability/metrics.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace herald::actors {

/// `cluster` in the configuration (docs/cluster.md).
struct cluster_config {
  std::string node_id;            ///< this node's name, also its lease owner name
  std::string listen;             ///< HOST:PORT its member is published on
  std::vector<std::string> peers; ///< the other nodes' `listen` addresses
  std::chrono::milliseconds heartbeat{500};
  /// A peer not heard from for this long is no longer a member (a hung or cut-off node; a
  /// killed one is seen at once, when its connection drops).
  std::chrono::milliseconds timeout{3000};
  /// A node whose database has not answered for this long gives up its partitions (its
  /// heartbeat says so, and the others take them over) until it answers again.
  std::chrono::milliseconds database_timeout{5000};
  /// The port's TLS (mutual certificate authentication); disabled: plaintext, loopback only.
  cluster_tls_config tls;
  cluster_port_limits port_limits;
  /// The installation's cluster id (domain::cluster_id_for; set at start, not configured).
  std::string cluster_id;
};

struct cluster_member_state {
  static constexpr const char* name = "cluster_member";

  /// A live peer, as its last heartbeat described it.
  struct member {
    std::string address;
    cluster_peer_actor handle;
    std::chrono::steady_clock::time_point heard; ///< liveness runs on the steady clock
    domain::timestamp heard_at;                  ///< the same moment, for people
    std::uint64_t in_flight = 0;
    bool takes_partitions = true; ///< it reaches the database
  };

  cluster_config config;
  dispatcher_actor dispatcher;
  store_reader_actor reader; ///< asked every heartbeat whether the database answers
  caf::io::middleman_actor middleman;
  std::shared_ptr<cluster_share> share;
  std::shared_ptr<herald::metrics> metrics;
  std::shared_ptr<const domain::clock> clock;
  std::map<std::string, member> members;                   ///< live peers by node id
  std::map<std::string, cluster_peer_actor> dialed;        ///< connections made, by peer address
  std::map<std::string, std::chrono::milliseconds> redial; ///< next backoff, by peer address
  /// Peers (by address) that sort before this node and so dial it: each was given a timeout to
  /// do so before this node dials it itself.
  std::set<std::string> waited_for;
  std::vector<std::string> view;   ///< the live members, sorted
  std::vector<std::string> owning; ///< those of `view` that take partitions (reach the database)
  std::vector<std::size_t> owners; ///< per partition, its owner (an index into `view`)
  std::optional<partition_list> owned;
  std::chrono::steady_clock::time_point started;   ///< or resumed after a stall
  std::chrono::steady_clock::time_point last_tick; ///< a gap longer than the timeout: a stall
  bool settled = false;           ///< heard every configured peer, or waited `timeout` for them
  bool wait_full_timeout = false; ///< settling after a stall: by the timeout only
  std::chrono::steady_clock::time_point database_answered; ///< the last ping answered then
  bool database_reachable = true; ///< answered within database_timeout: takes partitions
  bool pinging = false;           ///< a ping of the database is on its way
};

/// What a cluster member works with besides its configuration.
struct cluster_member_peers {
  dispatcher_actor dispatcher;
  store_reader_actor reader;
  caf::io::middleman_actor middleman; ///< dials peers (the cluster_transport's)
  std::shared_ptr<cluster_share> share;
  std::shared_ptr<herald::metrics> metrics;
  std::shared_ptr<const domain::clock> clock;
};

/// A node's member of its cluster: keeps the membership (heartbeats to and from the configured
/// peers, which it dials once told to, after it is published, and redials with backoff), derives
/// which partitions this node owns by rendezvous hashing over the live members, and tells the
/// dispatcher (what it sweeps and sends), the channels (their share of each rate), the events actor
/// and the reconciler (through the cluster_share). Only members that reach the database own
/// partitions: every heartbeat it pings the database, and after database_timeout without an answer
/// it gives its partitions up (its beats say so) until the database answers again. It hands new
/// tasks of other nodes' partitions to their owners. Membership is advisory: a task is sent only by
/// the node holding its lease in the database, so a wrong view costs time or a rate share, never a
/// second send.
cluster_member_actor::behavior_type
cluster_member(cluster_member_actor::stateful_pointer<cluster_member_state> self,
               cluster_config config, cluster_member_peers peers);

} // namespace herald::actors
