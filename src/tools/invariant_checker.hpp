#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace herald::tools {

/// One task in a 2xx answer to POST /v1/messages.
struct answered_task {
  std::string task_id;
  std::string channel;
  bool duplicate = false;
};

/// One accepted (2xx) POST /v1/messages.
struct accepted_answer {
  std::size_t event = 0;
  bool late = false; ///< sent after the drain
  int status = 0;    ///< 200 or 202
  std::string message_id;
  std::vector<answered_task> tasks;
};

/// One task as GET /v1/messages/{id} last showed it.
struct observed_task {
  std::string task_id;
  std::string channel;
  std::string status;
  std::string provider_request_id;
  std::int64_t attempts = 0;
  std::string policy_reason; ///< empty: policy let it go as asked
  /// Status questions the provider left without an answer; an UNCONFIRMED task with some may
  /// never have reached the provider (its call's fate is unknown to herald too).
  std::int64_t status_questions = 0;
};

/// The last look at one message; `found` is false when it was never read (404 or no answer).
struct observed_message {
  bool found = false;
  std::vector<observed_task> tasks;
};

/// What the sim-provider recorded.
struct provider_observation {
  std::uint64_t calls = 0;
  std::uint64_t effective_deliveries = 0;
  std::uint64_t duplicate_effective_deliveries = 0;
  std::vector<std::string> ids_delivered_more_than_once;
  std::set<std::string> delivered_ids;
};

/// One row of GET /v1/stats: tasks created in the window, per state (upper-case state names,
/// every state present).
struct stats_counts {
  std::uint64_t accepted = 0;
  std::map<std::string, std::uint64_t> states;

  bool operator==(const stats_counts& other) const {
    return accepted == other.accepted && states == other.states;
  }
};

/// GET /v1/stats over the run's window.
struct herald_stats {
  std::map<std::string, stats_counts> channels;
  stats_counts total;

  bool operator==(const herald_stats& other) const {
    return channels == other.channels && total == other.total;
  }
};

/// Everything a load run recorded; the checker's only input.
struct run_record {
  std::size_t events = 0; ///< events planned
  std::size_t channels_per_event = 0;
  std::vector<accepted_answer> answers;
  std::size_t unparseable_answers = 0;              ///< 2xx answers whose body was not understood
  std::map<std::string, observed_message> messages; ///< by message id
  bool provider_expected = false;                   ///< --provider given
  std::optional<provider_observation> provider;     ///< nullopt when it could not be read
  std::set<std::string> provider_channels;
  /// Channels that give receipts: SENT is not an end state there.
  std::set<std::string> receipt_channels;
  /// Channel -> its fallback channel: an UNDELIVERED task there must leave a task on it.
  std::map<std::string, std::string> fallbacks;
  /// GET /v1/stats over the run; nullopt when it was not read (see stats_unavailable).
  std::optional<herald_stats> stats;
  /// Why stats is missing: "" (read, or not asked), "not available" for a herald without
  /// /v1/stats (404); anything else is a failure to read it.
  std::string stats_unavailable;
};

struct invariant_result {
  std::string name;
  bool pass = true;
  std::string detail;
};

struct check_report {
  std::size_t accepted_events = 0;
  std::size_t accepted_messages = 0;
  std::size_t accepted_tasks = 0;
  std::size_t lost_tasks = 0;      ///< accepted, not found or not terminal
  std::size_t id_mismatches = 0;   ///< events whose answers disagree
  std::size_t late_creations = 0;  ///< late resubmissions that created a task
  std::size_t extra_tasks = 0;     ///< tasks herald shows that no answer named (e.g. fallbacks)
  std::size_t delivered_tasks = 0; ///< SENT, DELIVERED, READ, CLICKED or UNCONFIRMED
  std::size_t sent_without_delivery = 0;
  std::size_t unknown_provider_ids = 0;
  std::size_t suppressed_for_nothing = 0;       ///< SUPPRESSED with no failover task in the message
  std::size_t unsettled_tasks = 0;              ///< not in an end state (receipts considered)
  std::size_t undelivered_without_fallback = 0; ///< UNDELIVERED, no task on its fallback channel
  std::size_t stats_mismatches = 0;             ///< counts /v1/stats and the messages disagree on
  std::map<std::string, std::size_t> states;    ///< accepted tasks per state; "MISSING" if unseen
  std::vector<invariant_result> invariants;

  bool all_pass() const;
};

/// Whether herald makes no further provider call for a task in `status` (design.md §3).
bool is_terminal_status(const std::string& status);

/// Whether `status` means the provider accepted (processed) the task.
bool is_delivered_status(const std::string& status);

/// Whether a task on `channel` in `status` is done for good: terminal, and not SENT on a
/// channel that gives receipts (its receipt or the reconciler will still move it).
bool is_end_status(const std::string& status, const std::string& channel,
                   const std::set<std::string>& receipt_channels);

/// Every task state's wire name, in design.md §3 order.
const std::vector<std::string>& all_task_states();

/// Checks design.md §4 over a finished run:
/// - nothing_lost: every accepted task exists and is terminal;
/// - stable_ids: all answers of one event carry the same message id and task ids, one task per
///   channel;
/// - late_duplicates_create_nothing: answers after the drain are 200 with every task duplicate;
/// - failover_sends_something: a SUPPRESSED task's message shows a task the failover created
///   (one no answer named);
/// - accounting: accepted tasks = sum over states (each seen exactly once);
/// - with a provider: provider_reachable, provider_at_most_once (no id delivered twice),
///   provider_none_lost (every delivered task of a provider channel was delivered there),
///   provider_no_unknown (every id it delivered belongs to a task herald shows);
/// - something_accepted: at least one event got a 2xx;
/// - with receipt channels: end_state (every task herald shows for the run ends DELIVERED,
///   READ, CLICKED, UNDELIVERED, UNCONFIRMED, FAILED, DEAD, EXPIRED, SUPPRESSED, or SENT on a
///   channel without receipts);
/// - with fallbacks: undelivered_fails_over (an UNDELIVERED task's message shows a task on its
///   channel's fallback);
/// - when /v1/stats was read: stats_match (per channel and in total, every state count equals
///   what the messages show, and accepted = sum over states); when it could not be read for
///   another reason than a 404, stats_match fails.
check_report check_invariants(const run_record& run);

} // namespace herald::tools
