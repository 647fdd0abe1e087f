#pragma once

#include "actors/interfaces.hpp"
#include "domain/time.hpp"
#include "observability/health_board.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace herald::actors {

/// Limits of the HTTP-facing actor.
struct ingest_config {
  /// Messages waiting for COMMIT (a batch counts each); more -> 503. A batch larger than
  /// this is never taken.
  std::size_t max_in_flight = 20000;
  std::chrono::milliseconds claim_timeout{15000}; ///< beyond it the client gets 503, may retry
  std::chrono::milliseconds probe_timeout{2000};

  /// An empty string when valid, else the reason.
  std::string validate() const;
};

/// Entry point of the HTTP layer: picks each message's shard, bounds the work in flight, and
/// answers each request (reads are delegated to the reader, which answers the caller itself).
struct ingest_state {
  static constexpr const char* name = "ingest";
  std::vector<dedup_shard_actor> shards;
  store_writer_actor writer;
  store_writer_actor claims_writer;
  store_reader_actor reader;
  dispatcher_actor dispatcher;
  std::shared_ptr<const domain::clock> clock;
  std::shared_ptr<const health_board> health;
  ingest_config config;
  std::size_t in_flight = 0; ///< messages waiting for their COMMIT (a batch counts each)
};

/// The stores and dispatcher ingest talks to besides its shards.
struct ingest_peers {
  store_writer_actor writer;        ///< replays dead letters, changes users
  store_writer_actor claims_writer; ///< claims batches (the shards' writer)
  store_reader_actor reader;        ///< look-ups, listings, readiness
  dispatcher_actor dispatcher;      ///< for readiness
  std::shared_ptr<const domain::clock> clock;
  std::shared_ptr<const health_board> health; ///< components that cannot work, for readiness
};

ingest_actor::behavior_type ingest(ingest_actor::stateful_pointer<ingest_state> self,
                                   std::vector<dedup_shard_actor> shards, ingest_peers peers,
                                   ingest_config config);

} // namespace herald::actors
