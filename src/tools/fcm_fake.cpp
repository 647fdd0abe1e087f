#include "tools/fcm_fake.hpp"

#include "providers/twilio_protocol.hpp"
#include "tools/unverified_jwt.hpp"

#include <utility>

#include <boost/json.hpp>

namespace herald::tools {
namespace {

namespace json = boost::json;

constexpr std::string_view jwt_bearer = "urn:ietf:params:oauth:grant-type:jwt-bearer";
constexpr std::string_view messaging_scope = "https://www.googleapis.com/auth/firebase.messaging";
constexpr std::string_view send_suffix = "/messages:send";

/// An OAuth 2.0 error answer (RFC 6749 §5.2), as Google's token endpoint gives it.
fake_reply oauth_error(std::string_view error, std::string_view description) {
  return {400, "application/json",
          json::serialize(json::object{{"error", error}, {"error_description", description}})};
}

/// A google.rpc.Status answer; `error_code` (empty: none) goes into an FcmError detail.
fake_reply rpc_error(unsigned status, std::string_view rpc_status, std::string_view message,
                     std::string_view error_code = {}) {
  json::object error{{"code", status}, {"message", message}, {"status", rpc_status}};
  if (!error_code.empty())
    error["details"] =
        json::array{json::object{{"@type", "type.googleapis.com/google.firebase.fcm.v1.FcmError"},
                                 {"errorCode", error_code}}};
  return {status, "application/json; charset=UTF-8",
          json::serialize(json::object{{"error", std::move(error)}})};
}

fake_reply unauthenticated() {
  return rpc_error(401, "UNAUTHENTICATED",
                   "Request had invalid authentication credentials. Expected OAuth 2 access "
                   "token, login cookie or other valid authentication credential.");
}

std::string form_value(const std::string& body, std::string_view name) {
  auto pairs = providers::form_decode(body);
  if (!pairs)
    return {};
  for (auto& [key, value] : *pairs)
    if (key == name)
      return value;
  return {};
}

/// The string at `key` of `object`; empty when missing or not a string.
std::string text_at(const json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value != nullptr && value->is_string() ? std::string{value->get_string()} : std::string{};
}

bool ends_with(std::string_view text, std::string_view end) {
  return text.size() >= end.size() && text.substr(text.size() - end.size()) == end;
}

} // namespace

fcm_fake::fcm_fake(options o) : options_(std::move(o)) {}

fake_reply fcm_fake::handle(const fake_request& request) {
  const std::string path = request.target.substr(0, request.target.find('?'));
  const std::string_view prefix = "/v1/projects/";
  if (request.method == "POST" && ends_with(path, "/token"))
    return token(request.body);
  if (request.method == "POST" && path.rfind(prefix, 0) == 0 && ends_with(path, send_suffix) &&
      path.size() > prefix.size() + send_suffix.size())
    return send(request,
                path.substr(prefix.size(), path.size() - prefix.size() - send_suffix.size()));
  return rpc_error(404, "NOT_FOUND", "The requested URL was not found on this server.");
}

std::string fcm_fake::assertion_problem(const std::string& assertion) const {
  const auto jwt = read_unverified_jwt(assertion);
  if (!jwt)
    return "Invalid JWT: not a signed JWT";
  if (text_at(jwt->header, "alg") != "RS256")
    return "Invalid JWT: alg must be RS256";
  if (text_at(jwt->header, "kid") != options_.private_key_id)
    return "Invalid JWT Signature.";
  if (text_at(jwt->claims, "iss") != options_.client_email)
    return "Invalid JWT: iss is not the service account";
  if (text_at(jwt->claims, "scope").find(messaging_scope) == std::string::npos)
    return "Invalid JWT: the scope does not include firebase.messaging";
  const auto* iat = jwt->claims.if_contains("iat");
  const auto* exp = jwt->claims.if_contains("exp");
  if (iat == nullptr || exp == nullptr || !iat->is_int64() || !exp->is_int64() ||
      exp->get_int64() <= iat->get_int64() || exp->get_int64() - iat->get_int64() > 3600)
    return "Invalid JWT: Token must be a short-lived token (60 minutes)";
  return {};
}

fake_reply fcm_fake::token(const std::string& body) {
  std::lock_guard<std::mutex> guard{mutex_};
  ++token_requests_;
  if (form_value(body, "grant_type") != jwt_bearer)
    return oauth_error("unsupported_grant_type", "Invalid grant_type");
  const auto assertion = form_value(body, "assertion");
  if (assertion.empty())
    return oauth_error("invalid_request", "Missing required parameter: assertion");
  assertions_.push_back(assertion);
  if (refusing_assertions_)
    return oauth_error("invalid_grant", "Invalid JWT Signature.");
  if (auto problem = assertion_problem(assertion); !problem.empty())
    return oauth_error("invalid_grant", problem);
  auto issued = "ya29.fake-token-" + std::to_string(token_requests_);
  live_tokens_.insert(issued);
  return {200, "application/json; charset=utf-8",
          json::serialize(json::object{{"access_token", issued},
                                       {"expires_in", options_.token_lifetime_s},
                                       {"token_type", "Bearer"}})};
}

fake_reply fcm_fake::send(const fake_request& request, const std::string& project) {
  std::lock_guard<std::mutex> guard{mutex_};
  ++send_requests_;
  const auto authorization = request.header("authorization");
  const std::string_view bearer = "Bearer ";
  if (authorization.substr(0, bearer.size()) != bearer)
    return unauthenticated();
  const std::string token{authorization.substr(bearer.size())};
  if (live_tokens_.count(token) == 0)
    return unauthenticated();
  if (project != options_.project_id)
    return rpc_error(403, "PERMISSION_DENIED",
                     "Permission 'cloudmessaging.messages.create' denied on resource '//"
                     "cloudresourcemanager.googleapis.com/projects/" +
                         project + "' (or it may not exist).");
  boost::system::error_code ec;
  const auto parsed = json::parse(request.body, ec);
  const auto* message =
      !ec && parsed.is_object() ? parsed.as_object().if_contains("message") : nullptr;
  if (message == nullptr || !message->is_object() ||
      text_at(message->get_object(), "token").empty())
    return rpc_error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.",
                     "INVALID_ARGUMENT");
  fcm_sent sent;
  sent.device_token = text_at(message->get_object(), "token");
  if (const auto* notification = message->get_object().if_contains("notification");
      notification != nullptr && notification->is_object()) {
    sent.title = text_at(notification->get_object(), "title");
    sent.body = text_at(notification->get_object(), "body");
  }
  if (const auto* data = message->get_object().if_contains("data");
      data != nullptr && data->is_object())
    sent.herald_request_id = text_at(data->get_object(), "herald_request_id");
  sent.access_token = token;

  if (!faults_.empty()) {
    const auto fault = faults_.front();
    faults_.pop_front();
    const auto retry_after = std::to_string(options_.retry_after_s);
    fake_reply reply;
    switch (fault) {
    case fcm_fault::unregistered:
      return rpc_error(404, "NOT_FOUND", "Requested entity was not found.", "UNREGISTERED");
    case fcm_fault::invalid_argument:
      return rpc_error(400, "INVALID_ARGUMENT",
                       "The registration token is not a valid FCM registration token",
                       "INVALID_ARGUMENT");
    case fcm_fault::sender_id_mismatch:
      return rpc_error(403, "PERMISSION_DENIED", "SenderId mismatch", "SENDER_ID_MISMATCH");
    case fcm_fault::third_party_auth_error:
      return rpc_error(401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service",
                       "THIRD_PARTY_AUTH_ERROR");
    case fcm_fault::quota_exceeded:
      reply = rpc_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Send'",
                        "QUOTA_EXCEEDED");
      reply.headers = {{"Retry-After", retry_after}};
      return reply;
    case fcm_fault::unavailable:
      reply = rpc_error(503, "UNAVAILABLE", "The service is currently unavailable.", "UNAVAILABLE");
      reply.headers = {{"Retry-After", retry_after}};
      return reply;
    case fcm_fault::internal:
      return rpc_error(500, "INTERNAL", "Internal error encountered.", "INTERNAL");
    case fcm_fault::unauthenticated:
      return unauthenticated();
    case fcm_fault::truncated:
      reply = accept(sent);
      reply.ending = fake_ending::cut;
      return reply;
    case fcm_fault::garbage:
      reply.ending = fake_ending::garbage;
      return reply;
    case fcm_fault::dropped:
      reply.ending = fake_ending::dropped;
      return reply;
    case fcm_fault::hang:
      reply.hang = true;
      return reply;
    }
  }
  if (unregistered_.count(sent.device_token) != 0)
    return rpc_error(404, "NOT_FOUND", "Requested entity was not found.", "UNREGISTERED");
  return accept(sent);
}

fake_reply fcm_fake::accept(const fcm_sent& message) {
  auto sent = message;
  sent.name = "projects/" + options_.project_id + "/messages/0:" + std::to_string(next_message_++) +
              "%31bd1c9631bd1c96";
  sent_.push_back(sent);
  return {200, "application/json; charset=UTF-8",
          json::serialize(json::object{{"name", sent.name}})};
}

void fcm_fake::expire_tokens() {
  std::lock_guard<std::mutex> guard{mutex_};
  live_tokens_.clear();
}

void fcm_fake::script(std::vector<fcm_fault> faults) {
  std::lock_guard<std::mutex> guard{mutex_};
  faults_.insert(faults_.end(), faults.begin(), faults.end());
}

void fcm_fake::set_refusing_assertions(bool on) {
  std::lock_guard<std::mutex> guard{mutex_};
  refusing_assertions_ = on;
}

void fcm_fake::unregister(const std::string& device_token) {
  std::lock_guard<std::mutex> guard{mutex_};
  unregistered_.insert(device_token);
}

std::size_t fcm_fake::token_requests() const {
  return locked_copy(mutex_, token_requests_);
}

std::size_t fcm_fake::send_requests() const {
  return locked_copy(mutex_, send_requests_);
}

std::vector<fcm_sent> fcm_fake::sent() const {
  return locked_copy(mutex_, sent_);
}

std::vector<std::string> fcm_fake::assertions() const {
  return locked_copy(mutex_, assertions_);
}

} // namespace herald::tools
