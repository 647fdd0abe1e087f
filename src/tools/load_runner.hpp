#pragma once

#include "tools/api_answers.hpp"
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

/// Counts of one submission phase (live or late).
struct submit_stats {
  std::size_t submissions = 0;          ///< planned POSTs
  std::size_t exchanges = 0;            ///< HTTP exchanges, retries included
  std::size_t accepted = 0;             ///< POSTs that got a 2xx
  std::size_t created_answers = 0;      ///< 202
  std::size_t duplicate_answers = 0;    ///< 200
  std::size_t rejected = 0;             ///< a 4xx (other than 408/429) or unretryable answer
  std::size_t gave_up = 0;              ///< never got an answer within the bounds
  std::size_t retries_overloaded = 0;   ///< 503/429 answers retried after Retry-After
  std::size_t retries_connection = 0;   ///< connection errors and timeouts retried
  std::size_t retries_server_error = 0; ///< other 5xx and 408 retried
  std::map<int, std::size_t> rejected_statuses;
  std::vector<double> latencies_ms; ///< of each exchange that got a 2xx
  double duration_s = 0;

  void merge(const submit_stats& other);
};

struct drain_stats {
  bool complete = false;
  std::size_t rounds = 0;
  std::size_t pending_at_end = 0;
  double duration_s = 0;
  std::optional<double> retry_queue_depth; ///< last value seen on /metrics
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
  double elapsed_to_drain_s = 0; ///< from the first POST until the drain ended
  double total_duration_s = 0;
};

/// Runs the plan against herald: live submissions with `concurrency` keep-alive connections,
/// the drain, the late resubmissions, the settle (with receipt channels), then reads
/// /v1/stats, herald's receipt metrics and the provider. Progress lines go to
/// `progress`. Every loop is bounded by count and by options.drain_timeout.
load_run run_load_test(const load_options& options, const load_plan& plan, std::ostream& progress);

} // namespace herald::tools
