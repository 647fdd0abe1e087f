#pragma once

#include "actors/channel_actor.hpp"
#include "actors/cluster_share.hpp"
#include "actors/interfaces.hpp"
#include "actors/node_supervisor.hpp"
#include "domain/rate_limit.hpp"
#include "domain/time.hpp"
#include "observability/metrics.hpp"

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace herald::actors {

/// How often and how much the reconciler settles.
struct reconciler_config {
  std::chrono::milliseconds interval{10000}; ///< between passes (receipts.reconcile_interval)
  std::size_t batch = 500;                   ///< tasks per database read (receipts.reconcile_batch)
  /// Status queries in flight per channel, at most (and at most the channel's window).
  std::size_t queries_in_flight = 16;
  std::chrono::milliseconds store_timeout{30000};

  /// An empty string when valid, else the reason.
  std::string validate() const;
};

/// A channel the reconciler settles, and the adapter it asks.
struct reconciled_channel {
  channel_settings settings; ///< receipt_window > 0; rate_per_sec and burst pace the queries
  std::shared_ptr<providers::provider_adapter> provider;
};

/// Who the reconciler works with.
struct reconciler_peers {
  store_writer_actor store;
  store_reader_actor reader;
  std::shared_ptr<herald::metrics> metrics;
  std::shared_ptr<const domain::clock> clock;
  /// The partitions this node owns (its cluster member writes them); null: every partition.
  std::shared_ptr<const cluster_share> share;
};

/// Every interval, for each channel with a receipt window, reads from the database the SENT
/// tasks of the partitions this node owns whose window has passed (oldest first, a batch per
/// read), so in a cluster each task is asked about by one node, and settles each:
///   - a receipt recorded but not applied (an UNDELIVERED that came before the SENT commit)
///     is recorded again, which applies it now;
///   - where the provider can be asked (status API) it is asked, in batches, at most
///     queries_in_flight at a time and within the channel's rate: a final status
///     (delivered, read, clicked, undelivered) is recorded as a receipt (source query); no
///     final word (accepted, sent) or not found marks the task UNCONFIRMED; no answer (a
///     timeout, an error) is noted on the task (its count of unanswered questions, when to ask
///     next: the channel's status_questions) and asked again by a later pass, until the
///     questions are used up or expire_at would pass first: then it is UNCONFIRMED;
///   - where it cannot be asked, the task is marked UNCONFIRMED.
/// Every write goes through the store writer (receipts group-committed, UNCONFIRMED as a
/// guarded SENT -> UNCONFIRMED change), so a task another writer moved meanwhile is left
/// alone. An UNDELIVERED fails over in its receipt's transaction; the created fallback task
/// is dispatched. Counted in herald_reconciled_total{channel,outcome}, the questions in
/// herald_status_queries_total{channel}. Nothing is kept
/// between passes but the database: a restart, or a failed write, only means the next pass
/// reads those tasks again.
struct reconciler_state {
  static constexpr const char* name = "reconciler";

  /// One channel's pass: read a page, ask, write, read the next page while pages come full.
  struct channel_run {
    reconciled_channel channel;
    std::optional<domain::token_bucket> bucket;
    bool running = false;
    bool reading = false;               ///< a page read is on its way
    domain::timestamp sent_before;      ///< the window's edge when the pass started
    persistence::awaiting_cursor after; ///< where the next page starts
    bool page_full = false;
    std::deque<persistence::awaiting_receipt> to_ask;
    std::unordered_map<std::string, persistence::awaiting_receipt> asking; ///< by task id
    receipt_inputs receipts;                     ///< to record, for this page
    std::vector<domain::delivery> receipt_tasks; ///< the task of each receipt, in order
    state_changes unconfirmed;                   ///< to apply, for this page
    state_changes unanswered; ///< SENT -> SENT notes of questions to ask again, for this page
    std::size_t writes = 0;   ///< write requests not yet answered
    bool write_failed = false;
    bool wake_queued = false;
  };

  reconciler_config config;
  reconciler_peers peers;
  std::map<std::string, channel_run> channels;        ///< by name: those with a receipt window
  std::mt19937_64 jitter_rng{std::random_device{}()}; ///< spreads the questions asked again
};

reconciler_actor::behavior_type
reconciler(reconciler_actor::stateful_pointer<reconciler_state> self,
           std::vector<reconciled_channel> channels, reconciler_peers peers,
           reconciler_config config);

/// Starts the reconciler for the channels that have a receipt window. Restartable: it holds
/// nothing the database does not, so a new one simply reads again at its first pass.
supervised_component start_reconciler(caf::actor_system& sys,
                                      std::vector<reconciled_channel> channels,
                                      reconciler_peers peers, reconciler_config config);

} // namespace herald::actors
