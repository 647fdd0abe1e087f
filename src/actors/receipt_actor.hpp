#pragma once

#include "actors/interfaces.hpp"
#include "domain/time.hpp"
#include "observability/metrics.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>

namespace herald::actors {

/// How the receipt actor waits for the store, and holds receipts that came too early.
struct receipt_config {
  std::chrono::milliseconds store_timeout{10000};
  /// An UNDELIVERED receipt whose task is not SENT yet is recorded again after this, doubling
  /// up to hold_max, at most hold_tries times; past that the reconciler settles it (the
  /// receipt is recorded, so nothing is lost, only later).
  std::chrono::milliseconds hold_first{1000};
  std::chrono::milliseconds hold_max{60000};
  std::uint32_t hold_tries = 20;
  std::size_t max_held = 10000; ///< receipts held at most; beyond, the reconciler settles them
};

struct receipt_peers {
  store_writer_actor writer;
  dispatcher_actor dispatcher; ///< takes the fallback tasks UNDELIVERED receipts create
  std::shared_ptr<herald::metrics> metrics;
  std::shared_ptr<const domain::clock> clock;
};

/// Takes providers' receipts (design.md §2): records each through the store writer's group
/// commit and answers after COMMIT; hands the fallback task an UNDELIVERED receipt created to
/// the dispatcher; an UNDELIVERED receipt whose task is not SENT yet (its SENT commit still on
/// its way) is recorded again until it applies. Confirmations need no holding: the SENT
/// commit applies them itself.
struct receipt_state {
  static constexpr const char* name = "receipts";
  receipt_peers peers;
  receipt_config config;
  std::unordered_set<std::string> held; ///< "<task id>" of receipts waiting to be recorded again
};

receipt_actor::behavior_type receipts(receipt_actor::stateful_pointer<receipt_state> self,
                                      receipt_peers peers, receipt_config config);

} // namespace herald::actors
