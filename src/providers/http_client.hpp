#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herald::providers {

/// Which HTTP version a call asks for.
enum class http_version {
  automatic,             ///< HTTP/1.1 over http://, HTTP/2 when the server offers it over https://
  http2_prior_knowledge, ///< HTTP/2 without upgrade, also over cleartext (h2c, for local fakes)
};

/// What SMTP needs beyond a URL (smtp:// or smtps://): the envelope.
struct smtp_envelope {
  std::string mail_from;               ///< MAIL FROM address, without angle brackets
  std::vector<std::string> recipients; ///< RCPT TO addresses
  bool require_tls = false; ///< refuse to send when the server offers no STARTTLS (smtp://)
};

/// One outbound call. Redirects are never followed.
struct outbound_call {
  std::string method = "POST"; ///< GET, POST, … (ignored for SMTP)
  std::string url;
  std::vector<std::string> headers;        ///< "Name: value" lines
  std::string body;                        ///< sent for POST, PUT and SMTP; otherwise empty
  std::chrono::milliseconds timeout{2000}; ///< whole call: connect, send, answer
  http_version version = http_version::automatic;
  std::string basic_auth;            ///< "user:password", empty for none (also SMTP AUTH)
  std::optional<smtp_envelope> smtp; ///< set for smtp:// and smtps:// URLs
};

/// How one call ended. `code` is curl's result (0: the transfer completed); `status` the final
/// HTTP status, or for SMTP the last reply code the server sent (CURLINFO_RESPONSE_CODE: 354
/// when the message was being sent and no final reply came), 0 when none came.
struct outbound_answer {
  int code = 0;
  long status = 0;
  /// The final response's headers, names lower-cased, in order.
  std::vector<std::pair<std::string, std::string>> headers;
  /// HTTP: the start of the answer's body (http_client_options::max_body). SMTP: the last reply
  /// the server sent, all its lines ("550 5.1.1 no such user\r\n"), as long as max_body.
  std::string body;
  /// More came than was kept; the word the cut fell in is not kept either.
  bool body_cut = false;
  std::string error;    ///< curl's error buffer, may be empty (may quote the URL: mask it)
  bool stopped = false; ///< the client stopped before the call ended: it may have arrived

  /// The value of the last header named `name` (lower-case), or nullopt.
  std::optional<std::string_view> header(std::string_view name) const;
};

using outbound_callback = std::function<void(outbound_answer)>;

struct http_client_options {
  std::size_t max_connections = 64; ///< open connections, at most (per host and in all)
  std::size_t max_body = 8192;      ///< bytes of an answer's body kept
  std::string user_agent = "herald/1";
};

/// libcurl's multi interface on one background thread, shared by every call of one adapter:
/// connections (and TLS sessions, HTTP/2 streams) are kept and reused, call() only queues, so
/// it never blocks on the network and never throws. Each callback runs exactly once, on that
/// thread (or inline when the client is stopping), outside any lock; it may call call() again
/// but must not destroy the client.
class http_client {
public:
  /// Throws std::runtime_error when libcurl cannot be set up.
  explicit http_client(http_client_options options = {});
  /// Stops the thread; calls not yet ended are answered with `stopped`.
  ~http_client();

  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  void call(outbound_call request, outbound_callback done);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Makes libcurl's global state ready (once per process); throws std::runtime_error if not.
void ensure_curl_global();

/// Empty when `url` is an http:// or https:// URL with a host; otherwise a one-line reason
/// starting with `what` (the field's name).
std::string http_url_problem(const std::string& url, const std::string& what);

/// `url` without the slashes at its end, so paths can be appended to a configured base URL.
std::string without_trailing_slash(std::string url);

/// `text` without the spaces and tabs around it (and a header line's CR LF).
std::string_view trim_http_whitespace(std::string_view text);

/// `id` as one URL path segment: every byte but RFC 3986 unreserved ones percent-encoded.
std::string escape_path_segment(std::string_view id);

} // namespace herald::providers
