#pragma once

#include "observability/metrics.hpp"
#include "providers/http_client.hpp"
#include "providers/provider.hpp"
#include "providers/token_cache.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

namespace herald::providers {

/// One WeChat Official Account channel (docs/channels.md).
struct wechat_config {
  std::string appid;
  std::string app_secret; ///< the AppSecret itself (config names an environment variable)
  std::string template_id;
  /// The template fields that show herald's title and body (each template of WeChat's library
  /// names its own, e.g. "first" and "keyword1", or "thing1" and "thing2"). An empty
  /// title_field sends no title.
  std::string title_field;
  std::string body_field;
  std::string link_url; ///< opened when the message is tapped; empty for none
  std::string base_url = "https://api.weixin.qq.com";
  /// The Token configured for the account's server URL: WeChat signs its pushes with it. Empty:
  /// the channel takes no TEMPLATESENDJOBFINISH receipts.
  std::string callback_token;
  std::chrono::milliseconds timeout{5000};
  std::size_t max_connections = 32;
  /// How long the channel pauses on 45009 (the account's daily quota is used up).
  std::chrono::milliseconds quota_pause{std::chrono::minutes{10}};
  /// How far a push's timestamp may be from herald's clock, either way.
  std::chrono::seconds push_tolerance{300};

  /// Empty when usable; otherwise a one-line reason naming the field (for config errors).
  std::string validate() const;

  /// base_url without trailing slashes: where the API paths go, and with appid what names one
  /// account ("https://api.weixin.qq.com/" is the same API as "https://api.weixin.qq.com").
  std::string api_base() const;
};

/// What every channel of one appid shares: the connections to WeChat and the one
/// access_token. Tokens come from POST cgi-bin/stable_token, which hands every caller of the
/// appid the same token (other herald nodes, other systems of the business) instead of each
/// fetch retiring the others' as cgi-bin/token does; a forced refresh (limited by WeChat to a
/// few a day) is asked for only when WeChat refuses the very token a plain fetch returns.
///
/// Lives as long as its longest-living channel. Its client stops first when it goes, answering
/// every call still in flight as stopped; such answers carry no HTTP status, so none of them
/// reaches the account's token or client again.
class wechat_account {
public:
  /// Throws std::runtime_error when libcurl cannot be set up.
  wechat_account(const wechat_config& config, std::shared_ptr<metrics> metrics);

  http_client& client() { return client_; }
  token_cache& tokens() { return tokens_; }

  /// WeChat refused `token` (40001, 42001, 40014): the next fetch replaces it, forcing a
  /// refresh if WeChat hands the same one out again.
  void refused(const std::string& token);

private:
  using fetched = std::function<void(std::variant<issued_token, token_failure>)>;
  void fetch(bool force_refresh, fetched done);

  std::string token_url_; ///< POST {base}/cgi-bin/stable_token
  std::string appid_;
  std::string secret_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<metrics> metrics_;
  std::mutex mutex_;
  std::string refused_; ///< guarded: the token WeChat last refused
  token_cache tokens_;
  http_client client_; ///< last: stops first, while everything its answers may touch is alive
};

/// Sends WeChat template messages (POST cgi-bin/message/template/send) and reads WeChat's
/// TEMPLATESENDJOBFINISH pushes. The error class comes from the body's errcode, also on HTTP
/// 200 (wechat_protocol.hpp); an access token WeChat calls invalid or expired is fetched again
/// once and the send retried at once; 45009 pauses the channel for quota_pause and the tasks
/// wait; configuration errors raise herald_provider_config_errors_total. The send carries
/// client_msg_id = the provider request id, so WeChat sends one message per id however often
/// herald retries an unanswered call.
class wechat_template_provider final : public provider_adapter {
public:
  /// Throws std::invalid_argument when `config.validate()` refuses it.
  wechat_template_provider(std::string channel, wechat_config config,
                           std::shared_ptr<wechat_account> account,
                           std::shared_ptr<metrics> metrics);

  void send(provider_request request, provider_callback done) override;

  bool takes_callbacks() const override;

  /// GET with signature, timestamp, nonce and echostr: the URL handshake, answered with the
  /// echo. POST: a signed push; TEMPLATESENDJOBFINISH is a receipt (by msgid), anything else
  /// is acknowledged and ignored. Bad signature or stale timestamp: 401; unreadable: 400.
  callback_reading read_callback(const callback_request& request) const override;

  struct context; ///< what a call in flight needs; shared with its callbacks

private:
  std::shared_ptr<wechat_account> account_;
  std::shared_ptr<const context> context_;
};

} // namespace herald::providers
