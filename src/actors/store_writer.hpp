#pragma once

#include "actors/interfaces.hpp"
#include "domain/claim_places.hpp"
#include "domain/time.hpp"
#include "observability/metrics.hpp"

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/typed_response_promise.hpp>

namespace herald::actors {

/// How the store writer batches.
struct store_writer_config {
  std::size_t batch_max = 1000; ///< commit at once when this many requests wait
  /// Where tasks a receipt makes UNDELIVERED fail over to.
  persistence::fallback_routes fallbacks;
  /// The places this node's channels offer claims, by channel (domain::claim_places): a new
  /// task that may go at once is inserted taken, its channel told after the commit. Empty in a
  /// cluster, where a new task's partition may be another node's.
  std::map<std::string, std::shared_ptr<domain::claim_places>> places;
  /// What the leases of tasks taken in their claim run from (needed with `places`).
  std::shared_ptr<const domain::clock> clock;

  /// An empty string when valid, else the reason.
  std::string validate() const;
};

/// Collects claims, state changes, push seals and receipts while the previous transaction runs,
/// then commits them together as one unit of work in ONE transaction (task_store::commit) and
/// answers every waiter from its outcome (group commit, design.md §6); if it fails, every
/// waiter of that commit hears store_unavailable. The batch
/// forms by itself: a flush message queued behind whatever arrived meanwhile. Spawn it
/// detached: task_store calls block.
///
/// What a commit did is followed up here, for every caller alike: the tasks it created (claims,
/// failovers, fallbacks of UNDELIVERED receipts, replays), the duplicates it found and the
/// escalation steps it suppressed are counted, and the tasks to send go to the attached
/// dispatcher in one message per commit.
/// A claim takes places its channels offer (config `places`) for the new tasks that may go at
/// once; those it created taken go to their channels ready for the call, with the places they
/// left unused.
struct store_writer_state {
  static constexpr const char* name = "store_writer";

  struct pending_claim {
    domain::message_plan plan;
    caf::typed_response_promise<persistence::claim_result> promise;
  };
  /// A batch's plans: all land in the same claim() call, answered with one promise.
  struct pending_claim_batch {
    message_plans plans;
    caf::typed_response_promise<claim_results> promise;
  };
  struct pending_apply {
    state_changes changes;
    attempt_records attempts;
    caf::typed_response_promise<task_ids> promise;
  };

  std::shared_ptr<persistence::task_store> store;
  store_writer_config config;
  std::shared_ptr<herald::metrics> metrics;
  dispatcher_actor dispatcher; ///< none until attached: nothing is dispatched
  deliveries created;          ///< by the commits since the last dispatch
  std::string take_prefix;     ///< unique to this actor: the take tokens of claims
  struct pending_receipts {
    receipt_inputs receipts;
    domain::timestamp now;
    caf::typed_response_promise<receipt_outcomes> promise;
  };
  struct pending_seal {
    domain::push_seal seal;
    domain::timestamp now;
    caf::typed_response_promise<bool> promise;
  };

  std::vector<pending_claim> claims;
  std::vector<pending_claim_batch> claim_batches;
  std::vector<pending_apply> applies;
  std::vector<pending_receipts> receipts;
  std::vector<pending_seal> seals;
  bool flush_queued = false;
};

store_writer_actor::behavior_type
store_writer(store_writer_actor::stateful_pointer<store_writer_state> self,
             std::shared_ptr<persistence::task_store> store,
             std::shared_ptr<herald::metrics> metrics, store_writer_config config);

} // namespace herald::actors
