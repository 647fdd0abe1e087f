#pragma once

#include "observability/metrics.hpp"
#include "providers/http_client.hpp"
#include "providers/provider.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace herald::providers {

/// One Twilio (or Twilio-compatible) Messages API account and sender (docs/channels.md).
struct twilio_config {
  std::string account_sid; ///< "AC…": the account, and the basic-auth user
  std::string auth_token;  ///< basic-auth password, and the key of X-Twilio-Signature
  /// The sender: a phone number or alphanumeric id (sent as From), or a Messaging Service SID
  /// ("MG…", sent as MessagingServiceSid).
  std::string sender;
  std::string base_url = "https://api.twilio.com";
  /// The public URL of this channel's /v1/receipts/{channel} as Twilio calls it (through the
  /// gateway in front of herald): sent as StatusCallback and signed over by Twilio, so it must
  /// be exactly what Twilio sees. Empty: no status callbacks.
  std::string status_callback_url;
  std::chrono::milliseconds timeout{10000};
  std::size_t max_connections = 32;

  /// Empty when usable; otherwise a one-line reason naming the field (for config errors).
  std::string validate() const;
};

/// Sends SMS through the Twilio Messages API: a form POST to
/// {base}/2010-04-01/Accounts/{sid}/Messages.json with basic auth; the answer's error code
/// decides the class (twilio_protocol.hpp), the Message SID is the provider message id. Status
/// callbacks (queued … delivered, undelivered, failed) arrive as signed form POSTs on
/// /v1/receipts/{channel}; the reconciler asks GET …/Messages/{sid}.json for tasks whose
/// receipt never came.
///
/// Twilio has no idempotency key on message creation: a call whose answer was lost cannot be
/// told apart from one that never arrived, so after a crash mid-call herald sends again
/// (docs/channels.md says so).
class twilio_sms_provider final : public provider_adapter {
public:
  /// Throws std::invalid_argument when `config.validate()` refuses it, std::runtime_error when
  /// libcurl cannot be set up.
  twilio_sms_provider(std::string channel, twilio_config config, std::shared_ptr<metrics> metrics);

  void send(provider_request request, provider_callback done) override;

  /// Only by Message SID: a query without one is answered unknown.
  bool can_query_status() const override { return true; }
  void query_status(provider_status_query query, status_callback done) override;

  bool takes_callbacks() const override;
  /// A status callback signed with X-Twilio-Signature over status_callback_url and the form
  /// parameters. Delivered, read, undelivered and failed are receipts (by Message SID);
  /// queued … sent are acknowledged and not recorded. Missing or wrong signature: 401.
  callback_reading read_callback(const callback_request& request) const override;

  struct context; ///< what a call in flight needs; shared with its callbacks

private:
  std::shared_ptr<const context> context_;
  http_client client_; ///< last: stops first, answering every call in flight
};

} // namespace herald::providers
