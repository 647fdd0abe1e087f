#pragma once

#include "domain/time.hpp"
#include "observability/metrics.hpp"
#include "providers/http_client.hpp"
#include "providers/jwt.hpp"
#include "providers/provider.hpp"
#include "providers/token_cache.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace herald::providers {

/// One Apple Push Notification service channel, token-based (docs/operations.md).
struct apns_config {
  /// The .p8 signing key's text, a PEM P-256 private key (config: key_file or key_env). A
  /// secret.
  std::string private_key_pem;
  std::string key_id;  ///< the key's id from the developer account: the provider token's kid
  std::string team_id; ///< the developer team's id: the provider token's iss
  std::string topic;   ///< apns-topic: the app's bundle id ("<bundle id>.voip" for voip)
  /// apns-push-type: "alert" (herald's title and body shown to the user) or "voip". Other
  /// types want payloads herald does not build (background: content-available and priority 5).
  std::string push_type = "alert";
  /// https://api.push.apple.com, or https://api.sandbox.push.apple.com for development builds.
  /// An http:// URL is spoken to in HTTP/2 with prior knowledge (h2c): APNs speaks nothing but
  /// HTTP/2 and has no cleartext endpoint, so only a local fake is reached that way; https://
  /// negotiates HTTP/2 in the TLS handshake.
  std::string base_url = "https://api.push.apple.com";
  std::chrono::milliseconds timeout{5000};
  std::size_t max_connections = 8; ///< each carries many concurrent streams

  /// Empty when usable; otherwise a one-line reason naming the field (for config errors). The
  /// key is loaded, so one that is not a P-256 private key stops herald at start; no reason
  /// quotes it.
  std::string validate() const;
};

/// APNs refuses a provider token older than an hour, and one replaced more often than every 20
/// minutes (TooManyProviderTokenUpdates): herald signs a new one after 50 minutes, or when APNs
/// calls the one it holds expired or invalid, but never two within 20 minutes.
inline constexpr std::chrono::minutes apns_token_lifetime{50};
inline constexpr std::chrono::minutes apns_token_min_age{20};

/// The apns-id herald sends for a provider request id: a name-based UUID (version 5, SHA-1 of a
/// herald namespace and the id; RFC 9562 §5.5) in the lower-case 8-4-4-4-12 form APNs
/// requires. The same on every attempt of a task, as the provider request id is.
std::string apns_id_for(std::string_view provider_request_id);

/// The version 5 UUID of `name` in the namespace whose 16 bytes are `namespace_id`, as
/// canonical lower-case text.
std::string name_based_uuid(std::string_view namespace_id, std::string_view name);

/// What every channel of one signing key shares: the connections to APNs and the one provider
/// token (an ES256 JWT {alg, kid: key_id} {iss: team_id, iat}), signed here rather than
/// fetched, at most once per 20 minutes.
///
/// Lives as long as its longest-living channel. Its client stops first when it goes, answering
/// every call still in flight as stopped; those answers touch nothing of the account.
class apns_account {
public:
  /// Throws std::invalid_argument when `config.validate()` refuses it, std::runtime_error when
  /// libcurl cannot be set up. `clock` dates the tokens (tests move it).
  apns_account(const apns_config& config, std::shared_ptr<metrics> metrics,
               std::shared_ptr<const domain::clock> clock);

  http_client& client() { return client_; }
  token_cache& tokens() { return tokens_; }

private:
  void sign(std::function<void(std::variant<issued_token, token_failure>)> done);

  signing_key key_;
  std::string key_id_;
  std::string team_id_;
  std::shared_ptr<metrics> metrics_;
  std::shared_ptr<const domain::clock> clock_;
  std::mutex mutex_;
  std::optional<domain::timestamp> last_signed_; ///< guarded by mutex_
  token_cache tokens_;
  http_client client_; ///< last: stops first, while everything its answers may touch is alive
};

/// Sends alert notifications through APNs (POST {base_url}/3/device/{device token} over
/// HTTP/2) with headers authorization: bearer <provider token>, apns-id (apns_id_for the
/// provider request id), apns-collapse-id (the provider request id: a resend replaces the
/// first on the device instead of showing twice), apns-topic, apns-push-type and
/// apns-priority 10. The apns-id APNs answers is the provider message id. The class of an error
/// comes from its reason (push_protocol.hpp); a provider token APNs calls expired or invalid
/// is signed again (at most once per 20 minutes) and the send made again at once;
/// configuration errors raise herald_provider_config_errors_total. APNs sends no receipts:
/// SENT is final for it.
class apns_provider final : public provider_adapter {
public:
  /// Throws std::invalid_argument when `config.validate()` refuses it.
  apns_provider(std::string channel, apns_config config, std::shared_ptr<apns_account> account,
                std::shared_ptr<metrics> metrics);

  void send(provider_request request, provider_callback done) override;

  struct context; ///< what a call in flight needs; shared with its callbacks

private:
  std::shared_ptr<apns_account> account_;
  std::shared_ptr<const context> context_;
};

} // namespace herald::providers
