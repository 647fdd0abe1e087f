#pragma once

#include "tools/api_answers.hpp"
#include "tools/delivery_samples.hpp"
#include "tools/invariant_checker.hpp"
#include "tools/load_config.hpp"
#include "tools/load_plan.hpp"

#include <cstddef>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace herald::tools {

/// Counts of one submission phase (live or late). With --batch every event (batch item) counts
/// as a POST would: accepted, rejected, retried or given up on its own.
struct submit_stats {
  std::size_t submissions = 0;          ///< planned events (POSTs, or batch items)
  std::size_t requests = 0;             ///< planned HTTP requests (= submissions without --batch)
  std::size_t exchanges = 0;            ///< HTTP exchanges, retries included
  std::size_t accepted = 0;             ///< events that got a 2xx
  std::size_t created_answers = 0;      ///< 202
  std::size_t duplicate_answers = 0;    ///< 200
  std::size_t rejected = 0;             ///< a 4xx (other than 408/429) or unretryable answer
  std::size_t gave_up = 0;              ///< never got an answer within the bounds
  std::size_t retries_overloaded = 0;   ///< events sent again after a 503/429 (Retry-After)
  std::size_t retries_connection = 0;   ///< events sent again after a connection error/timeout
  std::size_t retries_server_error = 0; ///< events sent again after another 5xx or a 408
  std::map<int, std::size_t> rejected_statuses;
  /// Of each POST /v1/messages exchange that got a 2xx: from its start (closed loop) or from
  /// its due time (open loop, so queueing and retries count).
  std::vector<double> latencies_ms;
  std::vector<double> batch_latencies_ms; ///< the same per batch request answered 200
  std::size_t late_starts = 0;            ///< open loop: requests no connection was free for
  double max_start_lag_ms = 0;            ///< open loop: the latest of those, behind schedule
  double duration_s = 0;
  /// From the first submission to the last accepted answer (0 when none was accepted).
  double accepted_window_s = 0;
  /// Per target (options.targets order; empty until the first exchange): HTTP exchanges sent
  /// there, and of them the ones that got no answer (connection refused, lost or timed out).
  std::vector<std::size_t> target_exchanges;
  std::vector<std::size_t> target_connection_errors;

  void merge(const submit_stats& other);
  /// Adds `n` exchanges sent to `target` of `targets`.
  void count_exchange(std::size_t target, std::size_t targets, std::size_t n = 1);
};

struct drain_stats {
  bool complete = false;
  std::size_t rounds = 0;
  std::size_t pending_at_end = 0;
  double duration_s = 0;
  std::optional<double> retry_queue_depth; ///< last value seen on /metrics
};

/// herald's provider calls during the run, from GET /metrics herald_provider_calls_total.
struct delivery_stats {
  /// /metrics showed herald_provider_calls_total (herald shows it from its first call on).
  bool available = false;
  delivery_figures figures;
  std::size_t samples = 0;
  double expected = 0;  ///< tasks the live answers named: every one delivered once
  bool settled = false; ///< the count reached `expected` or went quiet within the bound
  double wait_s = 0;    ///< from the last submission's answer until the wait ended
  /// Successes counted after the wait ended (during the drain): not in `figures`.
  double successes_after_wait = 0;
};

/// A finished run: the checker's input and the numbers of the report.
struct load_run {
  run_record record;
  submit_stats live;
  submit_stats late;
  drain_stats drain;
  std::optional<drain_stats> settle;       ///< only with receipt channels
  std::string stats_from;                  ///< start of the /v1/stats window (RFC 3339)
  std::string provider_summary_json;       ///< the provider's /calls/summary, verbatim ("" if none)
  std::optional<double> ambiguous_resends; ///< herald_ambiguous_resends_total at the end
  std::optional<double> receipts_total;    ///< herald_receipts_total (all labels) at the end
  std::optional<double> receipts_rejected; ///< herald_receipts_rejected_total at the end
  std::optional<double> reconciled_total;  ///< herald_reconciled_total at the end
  /// The provider's GET /stats (nullopt for an older sim-provider or none).
  std::optional<provider_receipt_stats> provider_receipts;
  delivery_stats delivery;
  double total_duration_s = 0;
};

/// Runs the plan against herald: live submissions with `concurrency` keep-alive connections
/// (closed loop, or open loop at options.rate) while sampling herald's provider call counter,
/// the wait until the deliveries are done, the drain, the late resubmissions, the settle (with
/// receipt channels), then reads /v1/stats, herald's receipt metrics and the provider. Progress
/// lines go to `progress`. Every loop is bounded by count and by options.drain_timeout.
load_run run_load_test(const load_options& options, const load_plan& plan, std::ostream& progress);

} // namespace herald::tools
