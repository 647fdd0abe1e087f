#pragma once

#include "observability/metrics.hpp"
#include "providers/http_client.hpp"
#include "providers/provider.hpp"
#include "providers/service_account.hpp"
#include "providers/token_cache.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <variant>

namespace herald::providers {

/// One Firebase Cloud Messaging channel (HTTP v1 API; docs/operations.md).
struct fcm_config {
  /// The Google service-account key file's text (config: service_account_file or
  /// service_account_json_env). A secret: it holds the private key.
  std::string service_account_json;
  std::string project_id; ///< the project messages are sent through; empty: the account's
  std::string base_url = "https://fcm.googleapis.com";
  std::chrono::milliseconds timeout{5000};
  std::size_t max_connections = 16;

  /// Empty when usable; otherwise a one-line reason naming the field (for config errors). The
  /// service account is read in full, its private key included, so a broken one stops herald
  /// at start; no reason quotes a value of it.
  std::string validate() const;
};

/// OAuth 2.0 scope of the access tokens FCM HTTP v1 takes.
inline constexpr const char* fcm_scope = "https://www.googleapis.com/auth/firebase.messaging";

/// What every channel of one service account shares: the connections and the one OAuth 2.0
/// access token, fetched from the account's token_uri with a signed assertion (RFC 7523) and
/// used until 5 minutes before the expires_in Google gave it.
///
/// Lives as long as its longest-living channel. Its client stops first when it goes, answering
/// every call still in flight as stopped; those answers touch nothing of the account.
class fcm_account {
public:
  /// Throws std::invalid_argument when the service account is unusable (validate()), and
  /// std::runtime_error when libcurl cannot be set up.
  fcm_account(const fcm_config& config, std::shared_ptr<metrics> metrics);

  http_client& client() { return client_; }
  token_cache& tokens() { return tokens_; }
  const service_account& account() const { return account_; }

private:
  void fetch(std::function<void(std::variant<issued_token, token_failure>)> done);

  service_account account_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<metrics> metrics_;
  token_cache tokens_;
  http_client client_; ///< last: stops first, while everything its answers may touch is alive
};

/// Sends notifications through FCM HTTP v1 (POST {base_url}/v1/projects/{project_id}/
/// messages:send with "Authorization: Bearer <access token>"): the recipient is the app's
/// registration token, herald's title and body the notification, and data.herald_request_id the
/// provider request id, by which the app can report READ through the receipt API. FCM's name
/// for the message ("projects/…/messages/…") is the provider message id. The class of an error
/// comes from its FcmError errorCode before its HTTP status (push_protocol.hpp); an access
/// token FCM calls UNAUTHENTICATED is fetched again once and the send made again at once;
/// Retry-After is honoured; configuration errors raise herald_provider_config_errors_total.
/// FCM neither deduplicates nor sends receipts: SENT is final for it.
class fcm_provider final : public provider_adapter {
public:
  /// Throws std::invalid_argument when `config.validate()` refuses it.
  fcm_provider(std::string channel, fcm_config config, std::shared_ptr<fcm_account> account,
               std::shared_ptr<metrics> metrics);

  void send(provider_request request, provider_callback done) override;

  struct context; ///< what a call in flight needs; shared with its callbacks

private:
  std::shared_ptr<fcm_account> account_;
  std::shared_ptr<const context> context_;
};

} // namespace herald::providers
