#pragma once

#include "tools/sim_provider_config.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace herald::tools {

class http_client;

/// Which ids a receipt names. Herald must find the task by either; a real provider often
/// gives only its own message id.
enum class receipt_naming { both, request_id, message_id };

std::string_view to_string(receipt_naming naming);

/// One receipt POST the provider means to make; a duplicated receipt is several copies.
struct receipt_copy {
  std::string status;                    ///< delivered | undelivered | read
  std::chrono::milliseconds after{0};    ///< from the accepted send until it is posted
  std::chrono::milliseconds occurred{0}; ///< from the accepted send until it happened
  receipt_naming naming = receipt_naming::both;
};

/// What the provider decides about one accepted message, at once and for good: its outcome
/// (which status queries tell, whatever happens to the receipts) and the receipt copies it
/// will post. Delivered happens `delay` after the send, read another `delay` later.
struct receipt_plan {
  std::string outcome = "delivered"; ///< delivered | undelivered
  bool read = false;
  std::chrono::milliseconds outcome_after{0};
  std::chrono::milliseconds read_after{0};
  std::vector<receipt_copy> copies; ///< ordered by `after`
  unsigned receipts = 0;            ///< receipts decided: 1, or 2 with read
  unsigned dropped = 0;             ///< of them, never sent
  unsigned duplicated = 0;          ///< of them, sent 2 or 3 times
};

/// Draws one message's plan from `random` (same seed, same sequence of plans). Receipts name
/// the provider message id only when the send's answer went out (`answer_sent`): after a
/// timeout herald never learnt that id (and may hold a resend's instead).
receipt_plan plan_receipts(const receipt_profile& profile, bool answer_sent,
                           std::mt19937_64& random);

/// The receipt body of the callback contract:
/// {"type":"herald.receipt","data":{"provider_request_id"?,"provider_message_id"?,"status",
/// "occurred_at","detail"}}.
std::string receipt_body(std::string_view request_id, std::string_view message_id,
                         receipt_naming naming, std::string_view status,
                         std::chrono::system_clock::time_point occurred_at);

/// What the provider knows about one provider request id it accepted.
struct delivery_truth {
  std::chrono::system_clock::time_point accepted_at;
  std::string message_id;
  std::string outcome = "delivered"; ///< delivered | undelivered
  std::chrono::system_clock::time_point outcome_at;
  std::optional<std::chrono::system_clock::time_point> read_at;
  unsigned receipts_outstanding = 0; ///< copies not yet acknowledged or given up
  unsigned receipts_acknowledged = 0;

  /// accepted | delivered | undelivered | read, as the status query answers at `now`.
  std::string_view status_at(std::chrono::system_clock::time_point now) const;
};

/// Totals over the delivery book at one moment.
struct delivery_tally {
  std::uint64_t requests = 0; ///< distinct provider request ids accepted
  /// Requests none of whose receipts was acknowledged and none is still pending: what herald
  /// has to reconcile (dropped, given up, or never planned).
  std::uint64_t without_receipt = 0;
  std::uint64_t receipts_pending = 0;            ///< requests with copies still to post
  std::map<std::string, std::uint64_t> statuses; ///< status -> requests, as of now
};

/// The provider's memory of every request id it accepted: answers status queries and counts
/// what herald will have to reconcile. Thread-safe.
class delivery_book {
public:
  /// Records the first acceptance of `request_id`; false (nothing changes) when known.
  bool add(const std::string& request_id, delivery_truth truth);
  /// Whether `request_id` was accepted.
  bool contains(const std::string& request_id) const;
  /// The status query's answer at `now`; nullopt for an id never accepted.
  std::optional<std::string> status_of(const std::string& request_id,
                                       std::chrono::system_clock::time_point now) const;
  /// One receipt copy of `request_id` is finished: acknowledged with a 2xx or given up.
  void receipt_finished(const std::string& request_id, bool acknowledged);
  delivery_tally tally(std::chrono::system_clock::time_point now) const;
  void reset();

private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, delivery_truth> requests_;
};

/// Counters of the receipt sender since start (or the last reset); exact.
struct receipt_counts {
  std::uint64_t planned = 0;      ///< receipts decided
  std::uint64_t dropped = 0;      ///< receipts never sent on purpose
  std::uint64_t duplicated = 0;   ///< receipts sent as 2 or 3 copies
  std::uint64_t copies = 0;       ///< copies queued
  std::uint64_t posts = 0;        ///< POSTs made, retries included
  std::uint64_t acknowledged = 0; ///< copies answered 2xx
  std::uint64_t retries = 0;
  std::uint64_t failed = 0;   ///< copies given up (attempts exhausted or refused)
  std::uint64_t refused = 0;  ///< of them, answered a 4xx that is not retried
  std::uint64_t overflow = 0; ///< copies not queued: the queue was full
  std::uint64_t queued = 0;
  std::uint64_t max_lag_ms = 0; ///< the latest a copy was taken up after its due time   ///< copies
                                ///< waiting or being posted now
  std::map<std::string, std::uint64_t> acknowledged_by_status;
  std::map<int, std::uint64_t> answers; ///< HTTP status -> POSTs (0 = no answer)
};

/// {"planned":…,"dropped":…,…,"acknowledged_by_status":{…},"answers":{"200":…}}
std::string to_json(const receipt_counts& counts);

/// One receipt copy to post.
struct receipt_post {
  std::string channel;
  std::string request_id;
  std::string message_id;
  std::string status;
  receipt_naming naming = receipt_naming::both;
  std::chrono::system_clock::time_point occurred_at;
};

/// Posts receipt copies to herald at their due time, signed with Standard Webhooks headers, on
/// its own threads (one keep-alive connection each), so the provider's send path never waits
/// for herald. A copy keeps its webhook-id across retries (as the standard says); each copy
/// has its own. Retries 404 (the task's SENT may not be committed yet), 408, 429, 5xx and
/// connection errors with backoff, up to `attempts` POSTs.
class receipt_sender {
public:
  /// Called once per copy when it is acknowledged (true) or given up (false), from a sender
  /// thread or from schedule().
  using finished_fn = std::function<void(const std::string& request_id, bool acknowledged)>;

  /// `profile.to` must be set.
  receipt_sender(const receipt_profile& profile, finished_fn on_finished);
  /// Stops the threads; copies still queued are not sent.
  ~receipt_sender();
  receipt_sender(const receipt_sender&) = delete;
  receipt_sender& operator=(const receipt_sender&) = delete;

  /// Counts `plan` and queues its copies, each `after` from `accepted` (steady clock). Never
  /// blocks on the network; a copy that does not fit the queue is counted as overflow and
  /// finished at once as not acknowledged.
  void submit(const receipt_plan& plan, const std::string& channel, const std::string& request_id,
              const std::string& message_id, std::chrono::steady_clock::time_point accepted,
              std::chrono::system_clock::time_point accepted_at);

  receipt_counts counts() const;

  /// Forgets queued copies and zeroes the counters (posts in flight finish).
  void reset();

  /// Stops and joins the threads; idempotent.
  void shutdown();

private:
  struct queued_copy {
    std::chrono::steady_clock::time_point due;
    receipt_post post;
    std::string webhook_id;
    unsigned attempt = 0; ///< POSTs made so far
  };
  struct later_first {
    bool operator()(const queued_copy& a, const queued_copy& b) const { return a.due > b.due; }
  };

  void run();
  /// Posts one copy; returns the HTTP status, 0 when no answer came.
  int post(http_client& client, const queued_copy& copy);
  void finish(const queued_copy& copy, int status);

  const receipt_profile profile_;
  const std::string key_;
  const finished_fn on_finished_;
  const std::string id_prefix_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<queued_copy> queue_; ///< a heap, earliest due first
  std::size_t in_flight_ = 0;
  std::uint64_t next_id_ = 1;
  receipt_counts counts_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

} // namespace herald::tools
