#pragma once

#include "actors/interfaces.hpp"
#include "domain/time.hpp"
#include "observability/metrics.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>

#include <caf/typed_response_promise.hpp>

namespace herald::actors {

/// How the receipt actor waits for the store.
struct receipt_config {
  std::chrono::milliseconds store_timeout{10000};
  /// A receipt naming only the provider's message id may come before the SENT commit that
  /// stores that id: it is looked up again after this, doubling, `lookup_tries` times in all,
  /// before the provider is answered 404 — 3.1 s, within the 5 s WeChat waits for an answer
  /// (WeChat's pushes name the message by its msgid alone, and are not sent again once
  /// acknowledged).
  std::chrono::milliseconds lookup_again_after{100};
  std::uint32_t lookup_tries = 6;
};

using receipt_promise = caf::typed_response_promise<persistence::receipt_outcome>;

/// A receipt naming a provider message id not known yet, and its caller's answer.
struct waiting_receipt {
  persistence::receipt_input receipt;
  receipt_promise answer;
  std::uint32_t tries = 0; ///< look-ups so far
};

struct receipt_peers {
  store_writer_actor writer;
  std::shared_ptr<herald::metrics> metrics;
  std::shared_ptr<const domain::clock> clock;
};

/// Takes providers' receipts (design.md §2): records each through the store writer's group
/// commit and answers after COMMIT (the writer dispatches the fallback task an UNDELIVERED
/// receipt created). A receipt that comes before its task's SENT commit is recorded and applied
/// by that commit (the store does it, in the same transaction), so nothing is held in memory
/// but the short wait of a receipt that names only the provider's message id. Also has the
/// writer admit the seals of signed pushes (domain::push_seal) before they are acted on.
struct receipt_state {
  static constexpr const char* name = "receipts";
  receipt_peers peers;
  receipt_config config;
  /// Receipts whose task is looked up again after a wait, by number.
  std::map<std::uint64_t, waiting_receipt> waiting;
  std::uint64_t next_waiting = 0;
};

receipt_actor::behavior_type receipts(receipt_actor::stateful_pointer<receipt_state> self,
                                      receipt_peers peers, receipt_config config);

} // namespace herald::actors
