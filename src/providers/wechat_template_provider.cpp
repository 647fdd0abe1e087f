#include "providers/wechat_template_provider.hpp"

#include "domain/masking.hpp"
#include "observability/log.hpp"
#include "providers/failure_class.hpp"
#include "providers/provider_call.hpp"
#include "providers/twilio_protocol.hpp"
#include "providers/wechat_protocol.hpp"

#include <charconv>
#include <stdexcept>
#include <utility>

#include <boost/json.hpp>
#include <curl/curl.h>

namespace herald::providers {
namespace {

/// The value of `name` in decoded query pairs; empty when absent.
std::string_view value_of(const name_values& pairs, std::string_view name) {
  for (const auto& [key, value] : pairs)
    if (key == name)
      return value;
  return {};
}

} // namespace

std::string wechat_config::validate() const {
  if (appid.empty())
    return "wechat appid is required";
  if (app_secret.empty())
    return "wechat app_secret is required (app_secret_env names the variable holding it)";
  if (template_id.empty())
    return "wechat template_id is required";
  if (body_field.empty())
    return "wechat body_field is required (the template field that shows the message body)";
  if (auto problem = http_url_problem(base_url, "wechat base_url"); !problem.empty())
    return problem;
  if (!link_url.empty())
    if (auto problem = http_url_problem(link_url, "wechat link_url"); !problem.empty())
      return problem;
  if (timeout.count() <= 0)
    return "wechat timeout must be positive";
  if (max_connections == 0)
    return "wechat max_connections must be at least 1";
  if (quota_pause.count() <= 0)
    return "wechat quota_pause must be positive";
  return {};
}

std::string wechat_config::api_base() const {
  return without_trailing_slash(base_url);
}

wechat_account::wechat_account(const wechat_config& config, std::shared_ptr<metrics> metrics)
    : token_url_(config.api_base() + "/cgi-bin/stable_token"), appid_(config.appid),
      secret_(config.app_secret), timeout_(config.timeout), metrics_(std::move(metrics)),
      tokens_([this](fetched done) { fetch(false, std::move(done)); }),
      client_(http_client_options{config.max_connections, max_answer_bytes, "herald-wechat/1"}) {}

void wechat_account::refused(const std::string& token) {
  {
    std::lock_guard<std::mutex> guard{mutex_};
    refused_ = token;
  }
  tokens_.invalidate(token);
}

void wechat_account::fetch(bool force_refresh, fetched done) {
  if (metrics_)
    metrics_->provider_token_refresh("wechat", appid_);
  outbound_call call;
  call.url = token_url_;
  call.headers = {"Content-Type: application/json; charset=utf-8"};
  // The AppSecret goes in the body, never in a URL that proxies and logs keep.
  call.body = boost::json::serialize(boost::json::object{{"grant_type", "client_credential"},
                                                         {"appid", appid_},
                                                         {"secret", secret_},
                                                         {"force_refresh", force_refresh}});
  call.timeout = timeout_;
  client_.call(std::move(call), [this, force_refresh,
                                 done = std::move(done)](outbound_answer answer) mutable {
    // Whatever goes wrong here, no message was sent: the sends waiting for the token are
    // retryable, never failed or "outcome unknown".
    const auto wait = [&](std::string why, bool config_error) {
      done(token_failure{{call_outcome::retryable, "wechat access token: " + why, std::nullopt},
                         config_error});
    };
    if (!provider_answered(answer))
      return wait(classify_unanswered(answer).detail, false);
    if (answer.status < 200 || answer.status > 299)
      return wait("HTTP " + std::to_string(answer.status), false);
    auto token = parse_token_answer(answer.body);
    if (token.access_token.empty()) {
      log::error("wechat.token_refused",
                 {{"appid", appid_}, {"error", domain::mask_free_text(token.error)}});
      return wait(token.error, true); // 40013, 40125, 40164…: the credentials, not a message
    }
    bool same_as_refused = false;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      same_as_refused = token.access_token == refused_;
    }
    if (same_as_refused && !force_refresh)
      return fetch(true, std::move(done));
    done(issued_token{std::move(token.access_token), token.expires_in});
  });
}

/// Callbacks hold this, never the adapter: a channel may go while its calls are in flight
/// on the account's client. The account outlives every call it carries (see wechat_account).
struct wechat_template_provider::context {
  std::string channel;
  wechat_config config;
  std::string send_url; ///< {base}/cgi-bin/message/template/send?access_token=
  wechat_account* account;
  std::shared_ptr<herald::metrics> counters;
};

namespace {

using context_ptr = std::shared_ptr<const wechat_template_provider::context>;

/// Posts `body` with `token`; the answer classified.
void post(const context_ptr& context, const std::shared_ptr<const std::string>& body,
          const std::string& token, std::function<void(classified_answer)> answered_with) {
  outbound_call call;
  call.url = context->send_url + escape_path_segment(token);
  call.headers = {"Content-Type: application/json; charset=utf-8"};
  call.body = *body;
  call.timeout = context->config.timeout;
  call_provider(
      context->account->client(), std::move(call),
      [](const outbound_answer& answer) {
        return classify_wechat_answer(answer.status, answer.body, retry_after_of(answer));
      },
      std::move(answered_with));
}

} // namespace

wechat_template_provider::wechat_template_provider(std::string channel, wechat_config config,
                                                   std::shared_ptr<wechat_account> account,
                                                   std::shared_ptr<metrics> metrics)
    : account_(std::move(account)) {
  if (auto problem = config.validate(); !problem.empty())
    throw std::invalid_argument(problem);
  auto send_url = config.api_base() + "/cgi-bin/message/template/send?access_token=";
  context_ = std::make_shared<const context>(context{std::move(channel), std::move(config),
                                                     std::move(send_url), account_.get(),
                                                     std::move(metrics)});
}

void wechat_template_provider::send(provider_request request, provider_callback done) {
  if (!done)
    return;
  const auto& config = context_->config;
  wechat_template_message message;
  message.openid = request.recipient;
  message.template_id = config.template_id;
  if (!config.title_field.empty())
    message.data.emplace_back(config.title_field, request.title);
  message.data.emplace_back(config.body_field, request.body);
  message.url = config.link_url;
  message.client_msg_id = request.provider_request_id;
  auto body = std::make_shared<const std::string>(template_send_body(message));
  call_with_token(
      account_->tokens(),
      [context = context_, body](const std::string& token, auto answered_with) {
        post(context, body, token, std::move(answered_with));
      },
      [quota_pause = config.quota_pause,
       tell = tell_channel(context_->channel, context_->counters, std::move(done))](
          classified_answer verdict) {
        if (verdict.quota_exhausted)
          verdict.result.retry_after = quota_pause;
        tell(std::move(verdict));
      },
      [account = account_.get()](const std::string& stale) { account->refused(stale); });
}

bool wechat_template_provider::takes_callbacks() const {
  return !context_->config.callback_token.empty();
}

callback_reading wechat_template_provider::read_callback(const callback_request& request) const {
  const auto& config = context_->config;
  if (config.callback_token.empty())
    return provider_adapter::read_callback(request);
  auto query = form_decode(request.query);
  if (!query)
    return callback_reading::refuse(400, "malformed", "the query string is not form-encoded");
  const auto signature = value_of(*query, "signature");
  const auto timestamp = value_of(*query, "timestamp");
  const auto nonce = value_of(*query, "nonce");
  if (signature.empty() || timestamp.empty() || nonce.empty())
    return callback_reading::refuse(401, "missing_signature",
                                    "signature, timestamp and nonce are required");
  if (!verify_wechat_signature(config.callback_token, timestamp, nonce, signature))
    return callback_reading::refuse(401, "invalid_signature",
                                    "signature does not match this channel's callback_token");
  // A signed push replayed later, or a clock far off, is refused before the body is read.
  std::int64_t seconds = 0;
  auto [end, ec] = std::from_chars(timestamp.data(), timestamp.data() + timestamp.size(), seconds);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(request.now.time_since_epoch());
  if (ec != std::errc{} || end != timestamp.data() + timestamp.size() ||
      seconds < (now - config.push_tolerance).count() ||
      seconds > (now + config.push_tolerance).count())
    return callback_reading::refuse(401, "stale_timestamp",
                                    "timestamp is too far from the current time");
  callback_reading reading;
  reading.result = callback_reading::kind::reply;
  // The signature covers neither the method nor the body: the handshake's query, or a push's,
  // may carry only the request it came with (the route has the store admit the seal).
  reading.seal = domain::seal_push(context_->channel, seconds, std::string{nonce}, request.method,
                                   request.body, config.push_tolerance);
  if (request.method == "GET") {
    // The server URL handshake: WeChat checks that the URL echoes echostr.
    reading.reply_body = std::string{value_of(*query, "echostr")};
    if (reading.reply_body.empty())
      return callback_reading::refuse(400, "malformed", "echostr is required");
    return reading;
  }
  if (value_of(*query, "encrypt_type") == "aes")
    return callback_reading::refuse(400, "unsupported_encryption",
                                    "encrypted pushes are not supported: use plaintext mode");
  auto event = parse_template_event(request.body);
  reading.reply_body = "success"; // WeChat pushes again (three times) on any other answer
  switch (event.result) {
  case wechat_event::kind::malformed:
    return callback_reading::refuse(400, "malformed", event.detail);
  case wechat_event::kind::ignored:
    return reading;
  case wechat_event::kind::receipt:
    break;
  }
  reading.result = callback_reading::kind::receipt;
  reading.provider_message_id = std::move(event.message_id);
  reading.status = event.status;
  reading.occurred_at = event.occurred_at;
  reading.detail = std::move(event.detail);
  reading.acknowledge_unknown = true;
  return reading;
}

} // namespace herald::providers
