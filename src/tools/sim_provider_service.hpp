#pragma once

#include "api/http_server.hpp"
#include "tools/call_record.hpp"
#include "tools/sim_provider_config.hpp"

#include <memory>

namespace herald::tools {

/// The simulated provider's request handling, independent of the process around it: decides
/// each call's fate by the fault profile (seeded), records it, answers after the latency and
/// holds timed-out calls on its own timer thread (never blocking an IO thread). For each
/// provider request id it processes it decides once what became of the message (delivered,
/// undelivered, read), answers status queries with that truth and, with receipts on, posts
/// signed receipts to herald from its own sender threads.
///
/// Timeout model: "processed, answer lost". The call is recorded as an effective delivery when
/// it arrives; its answer is never sent and the connection is dropped after `hold`, by which
/// time the client has given up. A resend of the same webhook-id is then a second delivery,
/// unless --dedupe-by-id is on.
class sim_provider_service {
public:
  explicit sim_provider_service(const sim_provider_options& options);
  /// Drops held calls and joins the timer thread.
  ~sim_provider_service();
  sim_provider_service(const sim_provider_service&) = delete;
  sim_provider_service& operator=(const sim_provider_service&) = delete;

  /// For api::http_server; valid while this object lives.
  api::request_handler handler();

  const call_record& calls() const;

  /// What GET /stats answers: {"calls":{…},"requests":{"accepted","without_receipt",
  /// "receipts_pending","statuses":{…}},"receipts":{…}|null}.
  std::string stats() const;

  /// Drops every held or delayed answer and stops the timer thread; idempotent.
  void shutdown();

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

} // namespace herald::tools
