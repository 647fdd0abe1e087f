#include "providers/answer_class.hpp"

#include "domain/masking.hpp"
#include "domain/receipt.hpp"
#include "providers/failure_class.hpp"

#include <boost/json/parse.hpp>

namespace herald::providers {

classified_answer classify_as(const error_class& how, std::string detail,
                              std::optional<std::chrono::milliseconds> retry_after) {
  const bool keeps_pause =
      how.outcome == call_outcome::retryable || how.outcome == call_outcome::throttled;
  return {{how.outcome, std::move(detail), keeps_pause ? retry_after : std::nullopt},
          how.token_invalid,
          how.config_error,
          how.quota_exhausted};
}

error_class class_of_status(long http_status) {
  return {classify_http(http_status, std::nullopt, {}).outcome};
}

provider_result confirmed(std::string_view message_id) {
  return {call_outcome::success,
          domain::is_plausible_provider_id(message_id) ? std::string{message_id} : std::string{},
          std::nullopt};
}

provider_result classify_unread_answer(long http_status,
                                       std::optional<std::chrono::milliseconds> retry_after,
                                       std::string_view body) {
  return classify_http(http_status, retry_after, body);
}

std::string failure_detail(std::string_view what, std::string_view provider_text) {
  std::string detail{what};
  if (!provider_text.empty())
    detail.append(": ").append(provider_text);
  return domain::mask_free_text(detail, max_body_excerpt);
}

std::optional<domain::timestamp> unix_instant(std::chrono::milliseconds since_epoch) {
  constexpr auto latest =
      std::chrono::duration_cast<std::chrono::milliseconds>(domain::timestamp::duration::max());
  if (since_epoch.count() < 0 || since_epoch > latest)
    return std::nullopt;
  return domain::timestamp{since_epoch};
}

std::optional<boost::json::object> parse_answer_object(std::string_view body) {
  if (body.size() > max_answer_bytes)
    return std::nullopt;
  boost::system::error_code ec;
  auto value = boost::json::parse(body, ec);
  if (ec || !value.is_object())
    return std::nullopt;
  return std::move(value.as_object());
}

std::string_view string_field(const boost::json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value != nullptr && value->is_string() ? std::string_view{value->get_string()}
                                                : std::string_view{};
}

std::optional<std::int64_t> integer_field(const boost::json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  if (value == nullptr)
    return std::nullopt;
  if (value->is_int64())
    return value->get_int64();
  // Boost.JSON reads integers above INT64_MAX as uint64: beyond what any field here holds.
  return std::nullopt;
}

token_answer read_access_token(const boost::json::object& answer) {
  const auto token = string_field(answer, "access_token");
  const auto lifetime = integer_field(answer, "expires_in");
  if (token.empty())
    return {{}, {}, "token answer names no access_token"};
  if (!lifetime || *lifetime <= 0)
    return {{}, {}, "token answer names no positive expires_in"};
  return {std::string{token}, std::chrono::seconds{*lifetime}, {}};
}

} // namespace herald::providers
