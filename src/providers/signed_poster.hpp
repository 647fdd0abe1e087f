#pragma once

#include "providers/http_client.hpp"
#include "providers/provider.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace herald::providers {

/// Seconds since the Unix epoch by the system clock: the default time source of the
/// webhook-timestamp header.
std::int64_t system_unix_seconds();

/// One endpoint signed POSTs go to.
struct poster_config {
  std::string url;                         ///< http:// or https://, checked by the owner
  std::string key;                         ///< HMAC key bytes (decode_webhook_secret)
  std::chrono::milliseconds timeout{2000}; ///< whole call: connect, send, answer
  std::size_t max_connections = 64;        ///< open connections to the endpoint, at most
  std::string user_agent = "herald-webhook/1";
};

/// One POST to make. The body is built when the call starts, for the webhook-timestamp it
/// is signed with (a body may quote that time).
struct signed_post {
  std::string id;                                ///< webhook-id
  std::function<std::string(std::int64_t)> body; ///< unix seconds -> JSON body
  std::vector<std::string> headers;              ///< further header lines, "Name: value"
};

/// How much of an answer's body a post keeps: enough for a success's JSON naming the
/// provider's message id (a real provider's answer runs to a kilobyte or two) and for failure
/// details, which the classifier cuts to max_body_excerpt itself.
inline constexpr std::size_t max_kept_answer = 8192;

/// How one POST ended.
struct post_answer {
  /// classify_http() of a final answer, else classify_transport(); nothing is filled into a
  /// success's detail.
  provider_result result;
  long status = 0;              ///< HTTP status; 0 when none came
  std::string response_excerpt; ///< the start of the answer's body (max_kept_answer bytes)
};

/// Called exactly once per post(), on the poster's thread (or inline when refused).
using post_callback = std::function<void(post_answer)>;

/// Posts JSON to one endpoint as Standard Webhooks (https://www.standardwebhooks.com): headers
/// Content-Type, webhook-id, webhook-timestamp and webhook-signature ("v1,<base64 HMAC-SHA256>")
/// plus the caller's. Redirects are not followed.
///
/// All I/O runs on the background thread of its http_client (libcurl multi interface,
/// connections kept alive and reused); post() only queues, so it never blocks on the network
/// and never throws. Callbacks run on that thread, outside any lock; they may call post() again
/// but must not destroy the poster. Shared by the webhook channel and the status-event sender.
class signed_poster {
public:
  /// Throws std::runtime_error when libcurl cannot be set up. `unix_seconds` is the clock of
  /// webhook-timestamp (injected for tests).
  explicit signed_poster(poster_config config,
                         std::function<std::int64_t()> unix_seconds = system_unix_seconds);

  /// Stops the thread. Posts still pending are answered with outcome timeout ("adapter
  /// stopped"): they may or may not have reached the endpoint.
  ~signed_poster() = default;

  signed_poster(const signed_poster&) = delete;
  signed_poster& operator=(const signed_poster&) = delete;

  void post(signed_post request, post_callback done);

private:
  poster_config config_;
  std::function<std::int64_t()> unix_seconds_;
  http_client client_;
};

} // namespace herald::providers
