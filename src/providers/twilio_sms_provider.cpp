#include "providers/twilio_sms_provider.hpp"

#include "providers/failure_class.hpp"
#include "providers/twilio_protocol.hpp"

#include <stdexcept>
#include <utility>

#include <curl/curl.h>

namespace herald::providers {

struct twilio_sms_provider::context {
  std::string channel;
  twilio_config config;
  std::string messages_url; ///< {base}/2010-04-01/Accounts/{sid}/Messages
  std::shared_ptr<herald::metrics> counters;
};

namespace {} // namespace

std::string twilio_config::validate() const {
  if (!is_twilio_sid(account_sid, "AC"))
    return "twilio account_sid must be \"AC\" followed by 32 hex digits";
  if (auth_token.empty())
    return "twilio auth_token is required (auth_token_env names the variable holding it)";
  if (sender.empty())
    return "twilio sender is required (a number, an alphanumeric id or a Messaging Service SID)";
  if (auto problem = http_url_problem(base_url, "twilio base_url"); !problem.empty())
    return problem;
  if (!status_callback_url.empty())
    if (auto problem = http_url_problem(status_callback_url, "twilio status_callback_url");
        !problem.empty())
      return problem;
  if (timeout.count() <= 0)
    return "twilio timeout must be positive";
  if (max_connections == 0)
    return "twilio max_connections must be at least 1";
  return {};
}

namespace {

std::shared_ptr<const twilio_sms_provider::context>
context_of(std::string channel, twilio_config config, std::shared_ptr<metrics> counters) {
  if (auto problem = config.validate(); !problem.empty())
    throw std::invalid_argument(problem);
  auto url = without_trailing_slash(config.base_url) + "/2010-04-01/Accounts/" +
             config.account_sid + "/Messages";
  return std::make_shared<const twilio_sms_provider::context>(twilio_sms_provider::context{
      std::move(channel), std::move(config), std::move(url), std::move(counters)});
}

} // namespace

twilio_sms_provider::twilio_sms_provider(std::string channel, twilio_config config,
                                         std::shared_ptr<metrics> metrics)
    : context_(context_of(std::move(channel), std::move(config), std::move(metrics))),
      client_(http_client_options{context_->config.max_connections, max_answer_bytes,
                                  "herald-twilio/1"}) {}

void twilio_sms_provider::send(provider_request request, provider_callback done) {
  if (!done)
    return;
  const auto& config = context_->config;
  outbound_call call;
  call.url = context_->messages_url + ".json";
  call.headers = {"Content-Type: application/x-www-form-urlencoded", "Accept: application/json"};
  call.body = message_create_body(
      {config.sender, request.recipient, request.body, config.status_callback_url});
  call.basic_auth = config.account_sid + ":" + config.auth_token;
  call.timeout = config.timeout;
  client_.call(std::move(call), [context = context_, id = request.provider_request_id,
                                 done = std::move(done)](outbound_answer answer) {
    if (!provider_answered(answer))
      return done(classify_unanswered(answer));
    auto verdict = classify_twilio_answer(answer.status, answer.body, retry_after_of(answer));
    if (verdict.config_error && context->counters)
      context->counters->provider_config_error(context->channel);
    if (verdict.result.outcome == call_outcome::success && verdict.result.detail.empty())
      verdict.result.detail = id; // created, but the SID was unreadable: herald's own id
    done(std::move(verdict.result));
  });
}

void twilio_sms_provider::query_status(provider_status_query query, status_callback done) {
  if (!done)
    return;
  if (!is_twilio_sid(query.provider_message_id, "SM") &&
      !is_twilio_sid(query.provider_message_id, "MM"))
    return done({status_answer::kind::unknown,
                 provider_status::accepted,
                 {},
                 "twilio is asked by Message SID, and this task has none"});
  const auto& config = context_->config;
  outbound_call call;
  call.method = "GET";
  call.url = context_->messages_url + "/" + query.provider_message_id + ".json";
  call.headers = {"Accept: application/json"};
  call.basic_auth = config.account_sid + ":" + config.auth_token;
  call.timeout = config.timeout;
  client_.call(std::move(call), [done = std::move(done)](outbound_answer answer) {
    if (!provider_answered(answer) && answer.status < 200)
      return done({status_answer::kind::unknown,
                   provider_status::accepted,
                   {},
                   classify_unanswered(answer).detail});
    done(parse_message_resource(answer.status, answer.body));
  });
}

bool twilio_sms_provider::takes_callbacks() const {
  return !context_->config.status_callback_url.empty();
}

callback_reading twilio_sms_provider::read_callback(const callback_request& request) const {
  const auto& config = context_->config;
  if (config.status_callback_url.empty())
    return provider_adapter::read_callback(request);
  if (request.method != "POST")
    return callback_reading::refuse(405, "method_not_allowed", "status callbacks are POSTs");
  const auto signature = request.header("x-twilio-signature");
  if (signature.empty())
    return callback_reading::refuse(401, "missing_signature", "X-Twilio-Signature is required");
  auto params = form_decode(request.body);
  if (!params)
    return callback_reading::refuse(400, "malformed", "the body is not form-encoded");
  if (!verify_twilio_signature(config.auth_token, config.status_callback_url, *params, signature))
    return callback_reading::refuse(
        401, "invalid_signature",
        "X-Twilio-Signature does not match status_callback_url and this account's auth token");
  auto update = parse_status_callback(*params);
  if (!update)
    return callback_reading::refuse(400, "malformed",
                                    "MessageSid and an outbound MessageStatus are required");
  callback_reading reading;
  auto receipt = receipt_of(update->status);
  if (!receipt) { // queued, sent, …: no final word yet
    reading.result = callback_reading::kind::reply;
    return reading;
  }
  reading.result = callback_reading::kind::receipt;
  reading.provider_message_id = std::move(update->message_sid);
  reading.status = *receipt;
  reading.occurred_at = request.now; // Twilio's callback carries no time of its own
  reading.detail = std::move(update->detail);
  return reading;
}

} // namespace herald::providers
