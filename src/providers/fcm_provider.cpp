#include "providers/fcm_provider.hpp"

#include "domain/masking.hpp"
#include "observability/log.hpp"
#include "providers/failure_class.hpp"
#include "providers/provider_call.hpp"
#include "providers/push_protocol.hpp"
#include "providers/twilio_protocol.hpp"

#include <stdexcept>
#include <utility>

namespace herald::providers {
namespace {

constexpr const char* jwt_bearer_grant = "urn:ietf:params:oauth:grant-type:jwt-bearer";

service_account account_of(const fcm_config& config) {
  std::string problem;
  auto account = parse_service_account(config.service_account_json, &problem);
  if (!account)
    throw std::invalid_argument("fcm service account: " + problem);
  return std::move(*account);
}

/// Why the token endpoint gave no token. The message was not sent: a call that may have
/// reached the endpoint is retryable for the send, not outcome unknown.
token_failure no_token(provider_result why) {
  // Whatever went wrong getting a token, no message was sent: the sends wait.
  if (why.outcome != call_outcome::throttled)
    why.outcome = call_outcome::retryable;
  why.detail = "fcm token endpoint: " + why.detail;
  return {std::move(why), false};
}

} // namespace

std::string fcm_config::validate() const {
  if (service_account_json.empty())
    return "fcm service account is required (service_account_file or service_account_json_env)";
  std::string problem;
  if (!parse_service_account(service_account_json, &problem))
    return "fcm service account: " + problem;
  if (project_id.find_first_of("/?#% \t\r\n") != std::string::npos)
    return "fcm project_id must be a project id, not a path";
  if (auto url_problem = http_url_problem(base_url, "fcm base_url"); !url_problem.empty())
    return url_problem;
  if (timeout.count() <= 0)
    return "fcm timeout must be positive";
  if (max_connections == 0)
    return "fcm max_connections must be at least 1";
  return {};
}

fcm_account::fcm_account(const fcm_config& config, std::shared_ptr<metrics> metrics)
    : account_(account_of(config)), timeout_(config.timeout), metrics_(std::move(metrics)),
      tokens_([this](auto done) { fetch(std::move(done)); }),
      client_(http_client_options{config.max_connections, max_answer_bytes, "herald-fcm/1"}) {}

void fcm_account::fetch(std::function<void(std::variant<issued_token, token_failure>)> done) {
  if (metrics_)
    metrics_->provider_token_refresh("fcm", account_.client_email);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  outbound_call call;
  call.url = account_.token_uri;
  call.headers = {"Content-Type: application/x-www-form-urlencoded"};
  call.body = form_encode(
      {{"grant_type", jwt_bearer_grant}, {"assertion", oauth_assertion(account_, now, fcm_scope)}});
  call.timeout = timeout_;
  client_.call(std::move(call), [done = std::move(done),
                                 email = account_.client_email](outbound_answer answer) {
    if (answer.stopped || answer.code != CURLE_OK)
      return done(no_token(classify_unanswered(answer)));
    auto token = parse_oauth_token_answer(answer.body);
    if (answer.status >= 200 && answer.status <= 299 && !token.access_token.empty())
      return done(issued_token{std::move(token.access_token), token.expires_in});
    if (token.error.empty() || answer.status >= 500)
      return done(no_token(classify_http(answer.status, retry_after_of(answer), {})));
    // Refused credentials (invalid_grant: a deleted key, a wrong clock) are the
    // channel's problem, not a message's: the sends wait (retryable) while an operator
    // fixes it.
    log::error("fcm.token_refused",
               {{"account", email}, {"error", domain::mask_free_text(token.error)}});
    done(token_failure{
        {call_outcome::retryable, "fcm access token refused: " + token.error, std::nullopt}, true});
  });
}

/// Callbacks hold this, never the adapter: a channel may go while its calls are in flight
/// on the account's client. The account outlives every call it carries (see fcm_account).
struct fcm_provider::context {
  std::string channel;
  fcm_config config;
  std::string send_url; ///< {base}/v1/projects/{project_id}/messages:send
  fcm_account* account;
  std::shared_ptr<herald::metrics> counters;
};

namespace {

using context_ptr = std::shared_ptr<const fcm_provider::context>;

/// Posts `body` with `token`; the answer classified.
void post(const context_ptr& context, const std::shared_ptr<const std::string>& body,
          const std::string& token, std::function<void(classified_answer)> answered_with) {
  outbound_call call;
  call.url = context->send_url;
  call.headers = {"Authorization: Bearer " + token,
                  "Content-Type: application/json; charset=utf-8"};
  call.body = *body;
  call.timeout = context->config.timeout;
  call_provider(
      context->account->client(), std::move(call),
      [](const outbound_answer& answer) {
        return classify_fcm_answer(answer.status, answer.body, retry_after_of(answer));
      },
      std::move(answered_with));
}

} // namespace

fcm_provider::fcm_provider(std::string channel, fcm_config config,
                           std::shared_ptr<fcm_account> account, std::shared_ptr<metrics> metrics)
    : account_(std::move(account)) {
  if (auto problem = config.validate(); !problem.empty())
    throw std::invalid_argument(problem);
  const auto& project =
      config.project_id.empty() ? account_->account().project_id : config.project_id;
  auto send_url = without_trailing_slash(config.base_url) + "/v1/projects/" +
                  escape_path_segment(project) + "/messages:send";
  context_ = std::make_shared<const context>(context{std::move(channel), std::move(config),
                                                     std::move(send_url), account_.get(),
                                                     std::move(metrics)});
}

void fcm_provider::send(provider_request request, provider_callback done) {
  if (!done)
    return;
  auto body = std::make_shared<const std::string>(
      fcm_send_body(request.recipient, request.title, request.body,
                    {{"herald_request_id", request.provider_request_id}}));
  call_with_token(
      account_->tokens(),
      [context = context_, body](const std::string& token, auto answered_with) {
        post(context, body, token, std::move(answered_with));
      },
      tell_channel(context_->channel, context_->counters, std::move(done)));
}

} // namespace herald::providers
