#pragma once

#include "domain/push_seal.hpp"
#include "domain/receipt.hpp"
#include "observability/metrics.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herald::providers {

/// One provider call for one task.
struct provider_request {
  std::string task_id;
  std::string channel;
  std::string recipient;
  std::string provider_request_id; ///< the same on every attempt: providers may dedupe by it
  std::string title;
  std::string body;
  std::string trace_id;
  std::uint32_t attempt = 1; ///< 1-based
};

/// What a provider answered, already classified.
struct provider_result {
  call_outcome outcome = call_outcome::success;
  /// On success the provider's id for the message (receipts may name the task by it; kept on
  /// the task), the error otherwise.
  std::string detail;
  std::optional<std::chrono::milliseconds> retry_after; ///< a provider's explicit pause
};

/// Called exactly once per send(), on any thread.
using provider_callback = std::function<void(provider_result)>;

/// Asks a provider what became of an earlier call, by the provider request id it was sent with
/// or, for providers that only know their own ids (Twilio's Message SID), by that.
struct provider_status_query {
  std::string task_id;
  std::string channel;
  std::string provider_request_id;
  std::string trace_id;
  std::string provider_message_id; ///< empty while the provider has named none
};

/// Where a provider says a message stands: it got the call (accepted), handed it on (sent),
/// or has a final word on it (the receipt statuses).
enum class provider_status { accepted, sent, delivered, read, clicked, undelivered };

/// Lower-case wire name ("accepted", …).
std::string_view to_string(provider_status status);
/// Inverse of to_string; nullopt for anything else.
std::optional<provider_status> parse_provider_status(std::string_view text);
/// The receipt a status is, or nullopt while the provider has no final word (accepted, sent).
std::optional<domain::receipt_status> receipt_of(provider_status status);

/// What a status query answered.
struct status_answer {
  enum class kind {
    found,     ///< the provider has the message; `status` says where it stands
    not_found, ///< the provider says it never got the call
    unknown,   ///< no answer to rely on: an error, a timeout, or this provider cannot be asked
  };
  kind result = kind::unknown;
  provider_status status = provider_status::accepted; ///< with found
  std::string message_id; ///< with found: the provider's id for the message, if it named one
  std::string detail;     ///< why unknown, or why undelivered when found; for logs
};

std::string_view to_string(status_answer::kind result);

/// Called exactly once per query_status(), on any thread.
using status_callback = std::function<void(status_answer)>;

/// A provider's own callback to herald (GET or POST /v1/receipts/{channel}), as received.
struct callback_request {
  std::string method; ///< "GET" or "POST"
  std::string query;  ///< what follows '?' in the request target, still encoded
  std::vector<std::pair<std::string, std::string>> headers; ///< names lower-cased
  std::string body;
  std::chrono::system_clock::time_point now; ///< herald's clock, for timestamp windows

  /// The value of the first header named `name` (lower-case); empty when absent.
  std::string_view header(std::string_view name) const;
};

/// What an adapter read from a provider's callback.
struct callback_reading {
  enum class kind {
    receipt, ///< a verified receipt: record it, then answer with `reply`
    reply,   ///< verified, nothing to record (a URL handshake, an event herald ignores)
    refused, ///< unverified or unreadable: answer `http_status` with `error` and `message`
  };
  kind result = kind::refused;

  // refused
  unsigned http_status = 400;
  std::string error;   ///< machine-readable code: invalid_signature, malformed, …
  std::string message; ///< one line for the provider's logs; no secrets

  // receipt: which task (either id is enough) and what became of it
  std::string provider_request_id;
  std::string provider_message_id;
  domain::receipt_status status = domain::receipt_status::delivered;
  std::chrono::system_clock::time_point occurred_at;
  std::string detail;

  // receipt and reply: the body the provider expects back with 200 (WeChat: "success",
  // a handshake's echo); empty: herald's JSON receipt outcome
  std::string reply_body;
  std::string reply_content_type = "text/plain";
  /// Answer an unknown task like a recorded one: for providers that would otherwise retry the
  /// same callback (counted as an orphan either way).
  bool acknowledge_unknown = false;

  // receipt and reply: a push whose signature does not cover the request (WeChat's) is acted on
  // only once the store admitted this seal (a 401 replayed_signature otherwise); none: the
  // signature covers what it carries.
  std::optional<domain::push_seal> seal;

  static callback_reading refuse(unsigned status, std::string error, std::string message);
};

/// What a channel calls. Implementations never block the caller and never throw from send():
/// every failure comes back through the callback as a classified result.
class provider_adapter {
public:
  virtual ~provider_adapter() = default;

  /// Starts one call; `done` gets its result.
  virtual void send(provider_request request, provider_callback done) = 0;

  /// Whether query_status() can ask this provider at all (it has a status API).
  virtual bool can_query_status() const { return false; }

  /// Asks where an earlier call stands; `done` gets the answer. Never blocks, never throws.
  /// By default the provider cannot be asked: the answer is unknown at once.
  virtual void query_status(provider_status_query query, status_callback done);

  /// Whether the provider calls back (GET or POST /v1/receipts/{channel}) in a format of its
  /// own, read by read_callback().
  virtual bool takes_callbacks() const { return false; }

  /// Verifies and reads one callback. Pure and thread-safe: called on HTTP threads. By default
  /// every callback is refused (404).
  virtual callback_reading read_callback(const callback_request& request) const;
};

} // namespace herald::providers
