#include "providers/apns_provider.hpp"

#include "providers/failure_class.hpp"
#include "providers/provider_call.hpp"
#include "providers/push_protocol.hpp"

#include <array>
#include <stdexcept>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <openssl/evp.h>

namespace herald::providers {
namespace {

/// herald's namespace for name-based UUIDs (drawn once at random; never change it, or every
/// task's apns-id changes with it).
constexpr std::array<unsigned char, 16> herald_uuid_namespace{
    0x5f, 0x2b, 0x8f, 0x6e, 0x2d, 0x0a, 0x4c, 0x7e, 0x9b, 0x61, 0x3a, 0x9d, 0x7c, 0x0e, 0x4f, 0x18};

/// The longest apns-collapse-id APNs takes.
constexpr std::size_t max_collapse_id = 64;

bool printable_token(std::string_view text) {
  for (const char c : text)
    if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f)
      return false;
  return !text.empty();
}

signing_key key_of(const apns_config& config) {
  if (auto problem = config.validate(); !problem.empty())
    throw std::invalid_argument(problem);
  return *load_private_key(config.private_key_pem, key_kind::ec_p256, nullptr);
}

/// token_cache measures lifetimes on the clock the tokens are dated with.
token_cache::clock_fn steady_view(std::shared_ptr<const domain::clock> clock) {
  return [clock = std::move(clock)] {
    return std::chrono::steady_clock::time_point{
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            clock->now().time_since_epoch())};
  };
}

} // namespace

std::string name_based_uuid(std::string_view namespace_id, std::string_view name) {
  std::string input{namespace_id};
  input.append(name);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(input.data(), input.size(), digest, &size, EVP_sha1(), nullptr) != 1 || size < 16)
    throw std::runtime_error("SHA-1 failed");
  digest[6] = static_cast<unsigned char>((digest[6] & 0x0f) | 0x50); // version 5
  digest[8] = static_cast<unsigned char>((digest[8] & 0x3f) | 0x80); // the RFC's variant
  static constexpr char hex[] = "0123456789abcdef";
  std::string text;
  for (std::size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      text.push_back('-');
    text.push_back(hex[digest[i] >> 4]);
    text.push_back(hex[digest[i] & 0x0f]);
  }
  return text;
}

std::string apns_id_for(std::string_view provider_request_id) {
  return name_based_uuid(
      {reinterpret_cast<const char*>(herald_uuid_namespace.data()), herald_uuid_namespace.size()},
      provider_request_id);
}

std::string apns_config::validate() const {
  if (private_key_pem.empty())
    return "apns key is required (key_file or key_env: the .p8 signing key)";
  std::string problem;
  if (!load_private_key(private_key_pem, key_kind::ec_p256, &problem))
    return "apns key: " + problem;
  if (!printable_token(key_id))
    return "apns key_id is required (the signing key's id, without spaces)";
  if (!printable_token(team_id))
    return "apns team_id is required (the developer team's id, without spaces)";
  if (!printable_token(topic))
    return "apns topic is required (the app's bundle id, without spaces)";
  if (push_type != "alert" && push_type != "voip")
    return "apns push_type must be alert or voip";
  if (auto url_problem = http_url_problem(base_url, "apns base_url"); !url_problem.empty())
    return url_problem;
  if (timeout.count() <= 0)
    return "apns timeout must be positive";
  if (max_connections == 0)
    return "apns max_connections must be at least 1";
  return {};
}

apns_account::apns_account(const apns_config& config, std::shared_ptr<metrics> metrics,
                           std::shared_ptr<const domain::clock> clock)
    : key_(key_of(config)), key_id_(config.key_id), team_id_(config.team_id),
      metrics_(std::move(metrics)), clock_(std::move(clock)),
      tokens_([this](auto done) { sign(std::move(done)); }, std::chrono::seconds{0},
              steady_view(clock_)),
      client_(http_client_options{config.max_connections, max_answer_bytes, "herald-apns/1"}) {}

void apns_account::sign(std::function<void(std::variant<issued_token, token_failure>)> done) {
  const auto now = clock_->now();
  bool too_soon = false;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    too_soon = last_signed_ && now - *last_signed_ < apns_token_min_age;
    if (!too_soon)
      last_signed_ = now;
  }
  if (too_soon)
    // APNs refused a token signed less than 20 minutes ago. A new one would be refused too,
    // as TooManyProviderTokenUpdates: the sends wait until one may be signed.
    return done(token_failure{{call_outcome::retryable,
                               "apns provider token refused within 20 minutes of signing "
                               "(check key_id, team_id and the key); the next is signed 20 "
                               "minutes after the last",
                               std::nullopt},
                              false});
  const auto iat = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch());
  auto token = sign_jwt(key_, {{"kid", key_id_}}, {{"iss", team_id_}, {"iat", iat.count()}});
  if (metrics_)
    metrics_->provider_token_refresh("apns", key_id_);
  done(issued_token{std::move(token), apns_token_lifetime});
}

/// Callbacks hold this, never the adapter: a channel may go while its calls are in flight
/// on the account's client. The account outlives every call it carries (see apns_account).
struct apns_provider::context {
  std::string channel;
  apns_config config;
  std::string device_url; ///< {base}/3/device/
  http_version version;
  apns_account* account;
  std::shared_ptr<herald::metrics> counters;
};

namespace {

using context_ptr = std::shared_ptr<const apns_provider::context>;

/// One notification as every attempt sends it.
struct apns_message {
  std::string url;
  std::vector<std::string> headers; ///< all but authorization
  std::string payload;
  std::string apns_id;
};

/// Posts `message` with `token`; the answer classified.
void post(const context_ptr& context, const std::shared_ptr<const apns_message>& message,
          const std::string& token, std::function<void(classified_answer)> answered_with) {
  outbound_call call;
  call.url = message->url;
  call.headers = message->headers;
  call.headers.push_back("authorization: bearer " + token);
  call.body = message->payload;
  call.timeout = context->config.timeout;
  call.version = context->version;
  call_provider(
      context->account->client(), std::move(call),
      [message](const outbound_answer& answer) {
        // APNs answers the apns-id it was sent; ours names the message if it does not.
        return classify_apns_answer(answer.status, answer.body, retry_after_of(answer),
                                    answer.header("apns-id").value_or(message->apns_id));
      },
      std::move(answered_with));
}

} // namespace

apns_provider::apns_provider(std::string channel, apns_config config,
                             std::shared_ptr<apns_account> account,
                             std::shared_ptr<metrics> metrics)
    : account_(std::move(account)) {
  if (auto problem = config.validate(); !problem.empty())
    throw std::invalid_argument(problem);
  const bool cleartext = config.base_url.rfind("http://", 0) == 0;
  auto device_url = without_trailing_slash(config.base_url) + "/3/device/";
  context_ = std::make_shared<const context>(
      context{std::move(channel), std::move(config), std::move(device_url),
              cleartext ? http_version::http2_prior_knowledge : http_version::automatic,
              account_.get(), std::move(metrics)});
}

void apns_provider::send(provider_request request, provider_callback done) {
  if (!done)
    return;
  const auto& config = context_->config;
  auto message = std::make_shared<apns_message>();
  message->url = context_->device_url + escape_path_segment(request.recipient);
  message->apns_id = apns_id_for(request.provider_request_id);
  message->headers = {"apns-id: " + message->apns_id, "apns-topic: " + config.topic,
                      "apns-push-type: " + config.push_type, "apns-priority: 10",
                      "content-type: application/json"};
  if (request.provider_request_id.size() <= max_collapse_id &&
      printable_token(request.provider_request_id))
    message->headers.push_back("apns-collapse-id: " + request.provider_request_id);
  message->payload = apns_payload(request.title, request.body);
  call_with_token(
      account_->tokens(),
      [context = context_, message = std::shared_ptr<const apns_message>{message}](
          const std::string& token, auto answered_with) {
        post(context, message, token, std::move(answered_with));
      },
      tell_channel(context_->channel, context_->counters, std::move(done)));
}

} // namespace herald::providers
