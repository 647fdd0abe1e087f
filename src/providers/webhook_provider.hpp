#pragma once

#include "providers/provider.hpp"
#include "providers/signed_poster.hpp"
#include "providers/status_client.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace herald::providers {

/// One webhook endpoint.
struct webhook_config {
  std::string url;                         ///< http:// or https://
  std::string secret;                      ///< Standard Webhooks secret, "whsec_<base64>"
  std::chrono::milliseconds timeout{2000}; ///< whole call: connect, send, answer
  std::size_t max_connections = 64;        ///< open connections to the endpoint, at most
  /// Where the provider answers status queries: GET {status_url}/{provider_request_id} ->
  /// {"status": ...} or 404. Empty: it cannot be asked.
  std::string status_url;
  /// Standard Webhooks secret ("whsec_<base64>") the provider signs its receipts with
  /// (POST /v1/receipts/{channel}). Empty: the channel takes no receipt callbacks.
  std::string receipt_secret;

  /// Empty when usable; otherwise a one-line reason naming the field (for config errors).
  std::string validate() const;
};

/// The provider message id a webhook endpoint's 2xx body names, `{"message_id": "..."}`:
/// a string of 1 to 200 printable ASCII characters; empty when the body is not such a JSON
/// object (no body, other JSON, cut off, an id that could not be a header or log value).
std::string message_id_in(std::string_view body);

/// The JSON body POSTed for `request`:
/// {"type":"herald.message","timestamp":"<RFC 3339>","data":{"task_id","channel","recipient",
///  "title","body","trace_id","attempt"}}.
std::string webhook_payload(const provider_request& request, std::int64_t unix_seconds);

/// Delivers messages as signed Standard Webhooks POSTs (https://www.standardwebhooks.com).
///
/// Every call is a POST of webhook_payload() with the headers webhook-id and Idempotency-Key
/// (both the provider request id, the same on every attempt), webhook-timestamp,
/// webhook-signature ("v1,<base64 HMAC-SHA256>"), X-Herald-Attempt and Content-Type. Redirects
/// are not followed; the answer is classified by classify_http()/classify_transport(). A
/// success's detail is the endpoint's message id from its answer's body ({"message_id"}),
/// or else the webhook-id.
///
/// All I/O runs on the background thread of its signed_poster (libcurl multi interface,
/// connections kept alive and reused); send() only queues, so it never blocks on the network
/// and never throws. Callbacks run on that thread, outside any lock; they may call send()
/// again but must not destroy the adapter.
class webhook_provider final : public provider_adapter {
public:
  /// Throws std::invalid_argument when `config.validate()` refuses it, std::runtime_error when
  /// libcurl cannot be set up. `unix_seconds` is the clock of webhook-timestamp (injected for
  /// tests).
  explicit webhook_provider(webhook_config config,
                            std::function<std::int64_t()> unix_seconds = system_unix_seconds);

  /// Stops the thread. Calls still pending are answered with outcome timeout
  /// ("adapter stopped"): they may or may not have reached the endpoint.
  ~webhook_provider() override;

  webhook_provider(const webhook_provider&) = delete;
  webhook_provider& operator=(const webhook_provider&) = delete;

  void send(provider_request request, provider_callback done) override;

  /// With a status_url: GET {status_url}/{provider_request_id} (status_client), bounded by
  /// the same timeout as a send.
  bool can_query_status() const override;
  void query_status(provider_status_query query, status_callback done) override;

private:
  signed_poster poster_;
  std::unique_ptr<status_client> status_; ///< null without a status_url
};

} // namespace herald::providers
