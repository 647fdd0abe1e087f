#include "tools/apns_fake.hpp"

#include "tools/unverified_jwt.hpp"

#include <chrono>
#include <cstdio>
#include <utility>

#include <boost/json.hpp>

namespace herald::tools {
namespace {

namespace json = boost::json;

constexpr std::string_view device_prefix = "/3/device/";
constexpr std::size_t max_payload = 4096;
constexpr std::int64_t token_max_age_s = 3600;
constexpr std::int64_t token_min_interval_s = 20 * 60;

fake_reply reason(unsigned status, std::string_view why) {
  return {status, "application/json", json::serialize(json::object{{"reason", why}})};
}

bool is_hex(std::string_view text) {
  for (const char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
      return false;
  return !text.empty();
}

/// The 8-4-4-4-12 hexadecimal form of a UUID.
bool is_uuid(std::string_view text) {
  if (text.size() != 36)
    return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? text[i] != '-' : !is_hex(text.substr(i, 1)))
      return false;
  }
  return true;
}

std::string text_at(const json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value != nullptr && value->is_string() ? std::string{value->get_string()} : std::string{};
}

} // namespace

apns_fake::apns_fake(options o) : options_(std::move(o)) {}

std::int64_t apns_fake::now() const {
  if (options_.unix_now)
    return options_.unix_now();
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string apns_fake::token_refusal(const std::string& token, unsigned& status) {
  status = 403;
  const auto jwt = read_unverified_jwt(token);
  if (!jwt || text_at(jwt->header, "alg") != "ES256" ||
      text_at(jwt->header, "kid") != options_.key_id ||
      text_at(jwt->claims, "iss") != options_.team_id)
    return "InvalidProviderToken";
  const auto* iat = jwt->claims.if_contains("iat");
  const auto at = now();
  if (iat == nullptr || !iat->is_int64() || iat->get_int64() > at + 60)
    return "InvalidProviderToken";
  if (expired_tokens_.count(token) != 0 || at - iat->get_int64() > token_max_age_s)
    return "ExpiredProviderToken";
  if (first_used_.count(token) == 0) {
    if (!tokens_in_order_.empty() &&
        at - first_used_[tokens_in_order_.back()] < token_min_interval_s) {
      status = 429;
      return "TooManyProviderTokenUpdates";
    }
    first_used_[token] = at;
    tokens_in_order_.push_back(token);
  }
  return {};
}

fake_reply apns_fake::scripted(apns_fault fault) {
  fake_reply reply;
  switch (fault) {
  case apns_fault::bad_device_token:
    return reason(400, "BadDeviceToken");
  case apns_fault::unregistered:
    reply = reason(410, "Unregistered");
    reply.body = R"({"reason":"Unregistered","timestamp":)" + std::to_string(now() * 1000) + "}";
    return reply;
  case apns_fault::topic_disallowed:
    return reason(400, "TopicDisallowed");
  case apns_fault::expired_provider_token:
    return reason(403, "ExpiredProviderToken");
  case apns_fault::invalid_provider_token:
    return reason(403, "InvalidProviderToken");
  case apns_fault::payload_too_large:
    return reason(413, "PayloadTooLarge");
  case apns_fault::too_many_requests:
    return reason(429, "TooManyRequests");
  case apns_fault::too_many_provider_token_updates:
    reply = reason(429, "TooManyProviderTokenUpdates");
    reply.headers = {{"retry-after", std::to_string(options_.retry_after_s)}};
    return reply;
  case apns_fault::internal_server_error:
    return reason(500, "InternalServerError");
  case apns_fault::service_unavailable:
    reply = reason(503, "ServiceUnavailable");
    reply.headers = {{"retry-after", std::to_string(options_.retry_after_s)}};
    return reply;
  case apns_fault::truncated:
    reply = reason(400, "BadDeviceToken");
    reply.ending = fake_ending::cut;
    return reply;
  case apns_fault::garbage:
    reply.ending = fake_ending::garbage;
    return reply;
  case apns_fault::dropped:
    reply.ending = fake_ending::dropped;
    return reply;
  case apns_fault::hang:
    reply.hang = true;
    return reply;
  }
  return reason(500, "InternalServerError");
}

fake_reply apns_fake::handle(const fake_request& request) {
  std::lock_guard<std::mutex> guard{mutex_};
  ++send_requests_;
  const auto path = request.target.substr(0, request.target.find('?'));
  if (path.rfind(device_prefix, 0) != 0)
    return reason(404, "BadPath");
  if (request.method != "POST")
    return reason(405, "MethodNotAllowed");
  const auto authorization = request.header("authorization");
  const std::string_view bearer = "bearer ";
  if (authorization.empty())
    return reason(403, "MissingProviderToken");
  const std::string token{authorization.substr(0, bearer.size()) == bearer
                              ? authorization.substr(bearer.size())
                              : std::string_view{}};
  unsigned status = 0;
  if (auto refusal = token_refusal(token, status); !refusal.empty()) {
    auto reply = reason(status, refusal);
    if (status == 429)
      reply.headers = {{"retry-after", std::to_string(options_.retry_after_s)}};
    return reply;
  }
  const auto topic = request.header("apns-topic");
  if (topic.empty())
    return reason(400, "MissingTopic");
  if (topic != options_.topic)
    return reason(400, "TopicDisallowed");
  const auto push_type = request.header("apns-push-type");
  if (push_type != "alert" && push_type != "background" && push_type != "voip" &&
      push_type != "location" && push_type != "complication" && push_type != "fileprovider" &&
      push_type != "mdm" && push_type != "liveactivity" && push_type != "pushtotalk")
    return reason(400, "InvalidPushType");
  std::string apns_id{request.header("apns-id")};
  if (!apns_id.empty() && !is_uuid(apns_id))
    return reason(400, "BadMessageId");
  if (request.header("apns-collapse-id").size() > 64)
    return reason(400, "BadCollapseId");
  if (const auto priority = request.header("apns-priority");
      !priority.empty() && priority != "5" && priority != "10")
    return reason(400, "BadPriority");
  if (request.body.empty())
    return reason(400, "PayloadEmpty");
  if (request.body.size() > max_payload)
    return reason(413, "PayloadTooLarge");
  boost::system::error_code ec;
  const auto payload = json::parse(request.body, ec);
  if (ec || !payload.is_object() || !payload.as_object().contains("aps"))
    return reason(400, "PayloadEmpty");
  const auto device_token = path.substr(device_prefix.size());
  if (!is_hex(device_token))
    return reason(400, "BadDeviceToken");
  if (!faults_.empty()) {
    const auto fault = faults_.front();
    faults_.pop_front();
    return scripted(fault);
  }
  if (auto inactive = unregistered_.find(device_token); inactive != unregistered_.end()) {
    auto reply = reason(410, "Unregistered");
    reply.body =
        R"({"reason":"Unregistered","timestamp":)" + std::to_string(inactive->second) + "}";
    return reply;
  }
  if (apns_id.empty()) {
    char made[40];
    std::snprintf(made, sizeof made, "00000000-0000-4000-8000-%012llx",
                  static_cast<unsigned long long>(next_id_++));
    apns_id = made;
  }
  sent_.push_back({device_token, apns_id, request.body, request.protocol, token, request.headers});
  fake_reply ok{200, "", ""};
  ok.headers = {{"apns-id", apns_id}};
  return ok;
}

void apns_fake::expire_tokens() {
  std::lock_guard<std::mutex> guard{mutex_};
  expired_tokens_.insert(tokens_in_order_.begin(), tokens_in_order_.end());
}

void apns_fake::script(std::vector<apns_fault> faults) {
  std::lock_guard<std::mutex> guard{mutex_};
  faults_.insert(faults_.end(), faults.begin(), faults.end());
}

void apns_fake::unregister(const std::string& device_token, std::int64_t since_unix_ms) {
  std::lock_guard<std::mutex> guard{mutex_};
  unregistered_[device_token] = since_unix_ms;
}

std::size_t apns_fake::send_requests() const {
  return locked_copy(mutex_, send_requests_);
}

std::vector<apns_sent> apns_fake::sent() const {
  return locked_copy(mutex_, sent_);
}

std::vector<std::string> apns_fake::provider_tokens() const {
  return locked_copy(mutex_, tokens_in_order_);
}

} // namespace herald::tools
