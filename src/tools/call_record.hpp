#pragma once

#include "observability/metrics.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace herald::tools {

/// What the simulated provider did with one call, in herald's own outcome names: success
/// (processed, answered 200), retryable (not processed, 503), permanent (not processed, 400),
/// timeout (processed, but the answer is never sent). It never throttles.
using herald::call_outcome;

/// Whether the provider did the work for a call with this outcome. A timeout is modelled as
/// "processed, answer lost": the dangerous case a resend turns into a second delivery.
bool is_processed(call_outcome outcome);

/// One call as the provider saw it.
struct call_entry {
  std::string endpoint;   ///< request path, e.g. "/sms"
  std::string request_id; ///< webhook-id (or Idempotency-Key); "" when the caller sent none
  std::string attempt;    ///< X-Herald-Attempt as sent; "" when absent
  std::chrono::system_clock::time_point at;
  call_outcome outcome = call_outcome::success;
  bool effective = false;          ///< counted as an effective delivery
  bool deduplicated = false;       ///< processed, but answered from the dedupe table
  std::string provider_message_id; ///< for processed calls
};

/// The provider's answer to record(): what to tell the caller.
struct call_decision {
  bool effective = false;
  bool deduplicated = false;
  std::string provider_message_id; ///< "" for calls that were not processed
};

struct endpoint_counts {
  std::uint64_t calls = 0;
  std::uint64_t effective_deliveries = 0;
};

/// Aggregates of every call since start (or the last reset); exact, never sampled.
struct call_summary {
  std::uint64_t calls = 0;
  std::uint64_t calls_without_id = 0;
  std::uint64_t distinct_ids = 0;
  std::uint64_t effective_deliveries = 0;
  std::uint64_t deduplicated = 0;
  std::uint64_t duplicate_effective_deliveries = 0;      ///< sum over ids of (deliveries - 1)
  std::vector<std::string> ids_delivered_more_than_once; ///< the first `limit` of them, sorted
  std::map<std::string, endpoint_counts> by_endpoint;
  std::map<std::string, std::uint64_t> outcomes; ///< every outcome name, zero included
};

/// {"calls":…,"distinct_ids":…,"effective_deliveries":…,"ids_delivered_more_than_once":[…],
///  "duplicate_effective_deliveries":…,"deduplicated":…,"calls_without_id":…,
///  "by_endpoint":{"/sms":{"calls":…,"effective_deliveries":…}},"outcomes":{…}}
std::string to_json(const call_summary& summary);

/// The simulated provider's bookkeeping: every call, the effective deliveries per provider
/// request id and, with dedupe-by-id, the idempotency table. Thread-safe.
///
/// An effective delivery is a processed call (success or timeout). With dedupe-by-id, a
/// processed call whose id already had an effective delivery is answered with the first
/// delivery's provider message id and is not counted again, like a provider that honours
/// idempotency keys. Calls without an id can never be deduplicated.
class call_record {
public:
  /// `max_log_entries` bounds the per-call log kept for /calls/recent; aggregates stay exact.
  /// Provider message ids are `message_id_prefix` + a counter.
  explicit call_record(bool dedupe_by_id, std::size_t max_log_entries = 1'000'000,
                       std::string message_id_prefix = "sim-");

  /// Records one call with the outcome the fault profile chose and says how to answer it.
  call_decision record(const std::string& endpoint, const std::string& request_id,
                       const std::string& attempt, call_outcome outcome,
                       std::chrono::system_clock::time_point at);

  /// Aggregates; lists at most `max_listed` ids delivered more than once.
  call_summary summary(std::size_t max_listed = 100) const;

  /// Every id with at least one effective delivery (sorted), optionally only those first
  /// delivered through `endpoint`.
  std::vector<std::string> delivered_ids(const std::optional<std::string>& endpoint = {}) const;

  /// Effective deliveries of one id (0 when unknown).
  std::uint64_t deliveries_of(const std::string& request_id) const;

  /// The last `limit` calls, oldest first.
  std::vector<call_entry> recent(std::size_t limit) const;

  /// Forgets every call and id (provider message ids keep counting up, so they stay unique).
  void reset();

  bool dedupe_by_id() const { return dedupe_by_id_; }

private:
  struct id_state {
    std::uint64_t calls = 0;
    std::uint64_t effective = 0;
    std::string endpoint;            ///< where it was first delivered
    std::string provider_message_id; ///< of its first delivery
  };

  const bool dedupe_by_id_;
  const std::size_t max_log_entries_;
  const std::string message_id_prefix_;
  mutable std::mutex mutex_;
  std::uint64_t next_message_id_ = 1;
  std::uint64_t calls_ = 0;
  std::uint64_t calls_without_id_ = 0;
  std::uint64_t effective_ = 0;
  std::uint64_t deduplicated_ = 0;
  std::unordered_map<std::string, id_state> ids_;
  std::map<std::string, endpoint_counts> by_endpoint_;
  std::map<call_outcome, std::uint64_t> outcomes_;
  std::deque<call_entry> log_;
};

} // namespace herald::tools
