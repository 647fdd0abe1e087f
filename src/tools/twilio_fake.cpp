#include "tools/twilio_fake.hpp"

#include "providers/twilio_protocol.hpp"
#include "providers/webhook_signature.hpp"

#include <cstdio>
#include <optional>
#include <utility>

#include <boost/json.hpp>

namespace herald::tools {
namespace {

namespace json = boost::json;

fake_reply error_reply(unsigned http_status, int code, std::string_view message) {
  return {http_status,
          "application/json",
          json::serialize(json::object{
              {"code", code},
              {"message", message},
              {"more_info", "https://www.twilio.com/docs/errors/" + std::to_string(code)},
              {"status", http_status}}),
          false,
          {}};
}

std::string param(const providers::name_values& params, std::string_view name) {
  for (const auto& [key, value] : params)
    if (key == name)
      return value;
  return {};
}

bool is_e164(std::string_view number) {
  if (number.size() < 8 || number.size() > 16 || number.front() != '+')
    return false;
  for (const char c : number.substr(1))
    if (c < '0' || c > '9')
      return false;
  return true;
}

json::object resource(const twilio_sent& m, const std::string& account_sid) {
  json::object out{
      {"sid", m.sid},   {"account_sid", account_sid}, {"to", m.to},         {"from", m.from},
      {"body", m.body}, {"status", m.status},         {"num_segments", "1"}};
  if (m.error_code != 0) {
    out["error_code"] = m.error_code;
    out["error_message"] = "scripted by the test";
  } else {
    out["error_code"] = nullptr;
    out["error_message"] = nullptr;
  }
  return out;
}

} // namespace

twilio_fake::twilio_fake(options o) : options_(std::move(o)) {}

bool twilio_fake::authorized(const fake_request& request) const {
  return request.header("authorization") ==
         "Basic " + providers::base64_encode(options_.account_sid + ":" + options_.auth_token);
}

fake_reply twilio_fake::handle(const fake_request& request) {
  const auto path = request.target.substr(0, request.target.find('?'));
  const auto messages = "/2010-04-01/Accounts/" + options_.account_sid + "/Messages";
  if (path.rfind(messages, 0) != 0)
    return error_reply(404, 20404, "The requested resource was not found");
  if (!authorized(request))
    return error_reply(401, 20003, "Authenticate");
  const auto rest = path.substr(messages.size());
  if (request.method == "POST" && rest == ".json")
    return create(request);
  const std::string suffix = ".json";
  if (request.method == "GET" && rest.size() > 1 + suffix.size() && rest[0] == '/' &&
      rest.compare(rest.size() - suffix.size(), suffix.size(), suffix) == 0)
    return fetch(rest.substr(1, rest.size() - 1 - suffix.size()));
  return error_reply(405, 20004, "Method not allowed");
}

fake_reply twilio_fake::create(const fake_request& request) {
  std::lock_guard<std::mutex> guard{mutex_};
  ++create_requests_;
  std::optional<twilio_error::shape> cut_answer;
  if (!script_.empty()) {
    const auto error = script_.front();
    script_.pop_front();
    if (error.kind == twilio_error::shape::error) {
      auto reply = error_reply(error.http_status, error.code, "scripted by the test");
      if (error.retry_after_s > 0)
        reply.headers.emplace_back("Retry-After", std::to_string(error.retry_after_s));
      return reply;
    }
    cut_answer = error.kind; // the message is created; only its answer goes wrong
  }
  auto params = providers::form_decode(request.body);
  if (!params)
    return error_reply(400, 21100, "Invalid form body");
  twilio_sent message;
  message.to = param(*params, "To");
  message.from = param(*params, "From");
  if (message.from.empty())
    message.from = param(*params, "MessagingServiceSid");
  message.body = param(*params, "Body");
  message.status_callback = param(*params, "StatusCallback");
  if (!is_e164(message.to))
    return error_reply(400, 21211, "The 'To' number is not a valid phone number.");
  if (unsubscribed_.count(message.to) != 0)
    return error_reply(400, 21610, "Attempt to send to unsubscribed recipient");
  if (message.body.empty())
    return error_reply(400, 21602, "Message body is required.");
  if (message.from.empty())
    return error_reply(400, 21603, "The 'From' number is required.");
  char sid[35];
  std::snprintf(sid, sizeof sid, "SM%032zx", sent_.size() + 1);
  message.sid = sid;
  message.status = "queued";
  index_of_sid_[message.sid] = sent_.size();
  sent_.push_back(message);
  auto answer = json::serialize(resource(message, options_.account_sid));
  if (cut_answer == twilio_error::shape::hang)
    return {201, "application/json", {}, true, {}};
  if (cut_answer == twilio_error::shape::truncated)
    answer.resize(answer.size() / 2);
  return {201, "application/json", std::move(answer), false, {}};
}

fake_reply twilio_fake::fetch(const std::string& sid) const {
  std::lock_guard<std::mutex> guard{mutex_};
  auto found = index_of_sid_.find(sid);
  if (found == index_of_sid_.end())
    return error_reply(404, 20404, "The requested resource was not found");
  return {200,
          "application/json",
          json::serialize(resource(sent_[found->second], options_.account_sid)),
          false,
          {}};
}

void twilio_fake::script(std::vector<twilio_error> errors) {
  std::lock_guard<std::mutex> guard{mutex_};
  script_.insert(script_.end(), errors.begin(), errors.end());
}

void twilio_fake::unsubscribe(const std::string& number) {
  std::lock_guard<std::mutex> guard{mutex_};
  unsubscribed_.insert(number);
}

void twilio_fake::set_status(const std::string& sid, const std::string& status, int error_code) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto found = index_of_sid_.find(sid);
  if (found == index_of_sid_.end())
    return;
  sent_[found->second].status = status;
  sent_[found->second].error_code = error_code;
}

std::vector<twilio_sent> twilio_fake::sent() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return sent_;
}

std::size_t twilio_fake::create_requests() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return create_requests_;
}

twilio_fake::callback twilio_fake::status_callback(const twilio_sent& message) const {
  providers::name_values params{{"MessageSid", message.sid},
                                {"SmsSid", message.sid},
                                {"AccountSid", options_.account_sid},
                                {"From", message.from},
                                {"To", message.to},
                                {"MessageStatus", message.status},
                                {"SmsStatus", message.status},
                                {"ApiVersion", "2010-04-01"}};
  if (message.error_code != 0)
    params.emplace_back("ErrorCode", std::to_string(message.error_code));
  return {providers::form_encode(params),
          providers::twilio_signature(options_.auth_token, message.status_callback, params)};
}

} // namespace herald::tools
