#pragma once

#include "providers/http_client.hpp"
#include "providers/provider.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace herald::providers {

/// Where and how a provider answers status queries.
struct status_client_config {
  std::string status_url;                  ///< GET {status_url}/{provider_request_id}
  std::chrono::milliseconds timeout{2000}; ///< whole query: connect, send, answer
  std::size_t max_connections = 8;         ///< open connections to the endpoint, at most
};

/// What one HTTP answer to a status query means (pure; `code` is curl's result):
///   2xx with {"status": "accepted|sent|delivered|read|clicked|undelivered"}  found
///   404                                                                    not_found
///   anything else (other status, unreadable body, transport error)        unknown
/// A found answer's body may name the provider's message id, {"message_id": "..."}.
status_answer classify_status_answer(int code, long http_status, std::string_view body,
                                     std::string_view error_text);

/// Asks a provider's status API, `GET {status_url}/{provider_request_id}`, for webhook channels
/// (docs/receipts.md). Like the webhook sender it never blocks the caller: queries run on one
/// background thread of its own (libcurl multi, connections kept alive); the callback runs on
/// that thread, exactly once per query, also when the client stops (unknown, "stopped").
class status_client {
public:
  /// Throws std::invalid_argument for a status_url that is not http(s) with a host,
  /// std::runtime_error when libcurl cannot be set up.
  explicit status_client(status_client_config config);

  void query(const provider_status_query& query, status_callback done);

private:
  http_client client_;
  std::string base_; ///< status_url without a trailing '/'
  std::chrono::milliseconds timeout_;
};

} // namespace herald::providers
