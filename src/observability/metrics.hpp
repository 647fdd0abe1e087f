#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace prometheus {
class Registry;
}

namespace herald {

/// Outcome label of herald_provider_calls_total.
enum class call_outcome { success, retryable, permanent, timeout, throttled };
std::string_view to_string(call_outcome outcome);

/// herald's Prometheus metrics (design.md §7 names; stable). Thread-safe; one per process,
/// shared by the actors and the HTTP server, rendered by GET /metrics.
class metrics {
public:
  metrics();
  ~metrics();
  metrics(const metrics&) = delete;
  metrics& operator=(const metrics&) = delete;

  void message_received(std::size_t count = 1);
  void task_created(const std::string& channel);
  void task_duplicate(const std::string& channel);
  void provider_call(const std::string& channel, call_outcome outcome);
  void ambiguous_resend(const std::string& channel);
  void dead_letter(const std::string& channel);
  /// A task policy suppressed when it was claimed (domain::policy_reason).
  void task_suppressed(const std::string& channel, std::string_view reason);
  /// A task policy deferred when it was claimed.
  void task_deferred(std::string_view reason);
  void store_write_retry(const std::string& channel);
  void queue_overflow(const std::string& channel);
  void failover(const std::string& from, const std::string& to);
  /// 0 closed, 1 open, 2 half-open.
  void circuit_state(const std::string& channel, int state);
  void retry_queue_depth(double depth);
  void ingest_latency(double seconds);
  /// An HTTP answer: `route` names the resource (routes.cpp's route names, "unmatched", or
  /// "server" for what the HTTP server refuses by itself), `status` its code.
  void http_response(std::string_view route, unsigned status);
  void delivery_latency(const std::string& channel, double seconds);
  /// A receipt recorded (status: delivered, read, clicked, undelivered).
  void receipt(const std::string& channel, std::string_view status);
  /// A receipt refused (reason: bad_signature, stale_timestamp, malformed, unknown_task, …).
  void receipt_rejected(const std::string& channel, std::string_view reason);
  /// A SENT task the reconciler settled (outcome: a receipt status found by asking, or
  /// unconfirmed).
  void reconciled(const std::string& channel, std::string_view outcome);
  /// The reconciler asked a channel's provider about one SENT task.
  void status_query(const std::string& channel);
  /// An ambiguous SENDING task the provider was asked about (found, not_found, unknown).
  void ambiguous_resolved(const std::string& channel, std::string_view outcome);
  /// A status question the provider left without an answer (a call or a receipt in doubt);
  /// `then`: asked_again (after a backoff) or unconfirmed (the task's questions are used up).
  void status_question_unanswered(const std::string& channel, std::string_view then);
  /// A provider answer blaming the configuration (the task's last_error says which code).
  void provider_config_error(const std::string& channel);
  /// An access token fetched or signed (provider: wechat, fcm, apns; account: appid, …).
  void provider_token_refresh(const std::string& provider, const std::string& account);
  /// Status events written and not yet delivered or given up.
  void events_pending(double count);
  /// A status event post finished (outcome: delivered, retry, dead).
  void event_delivered(std::string_view outcome);

  /// Live members of this node's cluster (itself included; 1 without a cluster).
  void cluster_members(double count);
  /// Partitions this node owns (all of them without a cluster).
  void partitions_owned(double count);
  /// Partitions this node gained or lost on a membership change.
  void partition_moves(std::size_t count);
  /// Connections the cluster port closed before they carried a peer: `reason` is refused (over
  /// a cap), expired (handshake not done in time) or malformed (a frame CAF must not read).
  void cluster_connection_closed(std::string_view reason, std::uint64_t count = 1);

  /// Prometheus text exposition format.
  std::string render() const;

  prometheus::Registry& registry();

private:
  struct families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<families> families_;
};

} // namespace herald
