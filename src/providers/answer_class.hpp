#pragma once

#include "domain/time.hpp"
#include "providers/provider.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>

namespace herald::providers {

/// What the provider protocol modules (wechat_protocol, twilio_protocol, push_protocol) share:
/// the classified answer, the rows of their error tables and the readers of JSON answers. All
/// pure: no I/O, no clock, and nothing here throws on any input.

/// Names with values in order, duplicates kept: form parameters, template data, XML fields.
using name_values = std::vector<std::pair<std::string, std::string>>;

/// One provider answer to a send, classified. `result` is what the channel acts on; the flags
/// say what the adapter does first.
struct classified_answer {
  provider_result result;
  /// The provider refused the access token (expired, revoked). The adapter fetches a new one and
  /// sends again at once, once; a fresh token refused as well means the credentials are wrong.
  /// `result` is retryable, so an adapter that cannot refresh retries later instead.
  bool token_invalid = false;
  /// The answer blames herald's configuration of the provider (credentials, sender, template,
  /// IP allow-list): every further call fails alike until an operator changes it.
  bool config_error = false;
  /// The account's daily call quota is used up: the channel pauses until the provider's day
  /// ends, which the answer does not say and the caller knows.
  bool quota_exhausted = false;
};

/// How herald classes one kind of provider error: a row of a protocol module's error table.
struct error_class {
  call_outcome outcome = call_outcome::permanent;
  bool token_invalid = false;
  bool config_error = false;
  bool quota_exhausted = false;
};

/// The classes the error tables use.
namespace error_classes {
/// Final for this message (the recipient or the message is refused).
inline constexpr error_class refused{call_outcome::permanent};
/// Final, and blames the configuration.
inline constexpr error_class misconfigured{call_outcome::permanent, false, true};
/// The access token was refused: refresh it and send again.
inline constexpr error_class token_refused{call_outcome::retryable, true};
/// Not processed; the same call may succeed later.
inline constexpr error_class try_again{call_outcome::retryable};
/// The provider asks the whole channel to slow down.
inline constexpr error_class slow_down{call_outcome::throttled};
/// The daily quota is used up: the channel pauses.
inline constexpr error_class quota_used_up{call_outcome::throttled, false, false, true};
} // namespace error_classes

/// An answer in class `how` with `detail`; `retry_after` is kept for retryable and throttled
/// answers only.
classified_answer classify_as(const error_class& how, std::string detail,
                              std::optional<std::chrono::milliseconds> retry_after);

/// The class of an HTTP status alone (failure_class.hpp's classify_http), for an error code no
/// table names.
error_class class_of_status(long http_status);

/// The row for `key` in an error table (an array of {key, error_class} pairs), or nullptr.
template <class Table, class Key>
const error_class* find_error_class(const Table& table, const Key& key) {
  for (const auto& [row_key, how] : table)
    if (row_key == key)
      return &how;
  return nullptr;
}

/// A confirmed send whose answer named `message_id`. An id that is not plausible
/// (domain::is_plausible_provider_id), or none, leaves the detail empty: the provider has the
/// message either way, and the caller names it by its own provider request id instead.
provider_result confirmed(std::string_view message_id);

/// An HTTP answer whose body names no error herald knows, classed by its status alone; the body
/// goes into the detail masked.
provider_result classify_unread_answer(long http_status,
                                       std::optional<std::chrono::milliseconds> retry_after,
                                       std::string_view body);

/// "<what>: <provider_text>" made fit for a failure detail: masked (domain::mask_free_text, so
/// numbers, addresses and secret-looking runs do not leak into logs and the store) and cut to
/// max_body_excerpt. Without a text, just `what`.
std::string failure_detail(std::string_view what, std::string_view provider_text);

/// The instant `since_epoch` after the Unix epoch, as providers write times; nullopt when
/// negative or past what a timestamp holds (the year 2262).
std::optional<domain::timestamp> unix_instant(std::chrono::milliseconds since_epoch);

/// Longest answer body the protocol modules read; anything longer is no provider's answer.
inline constexpr std::size_t max_answer_bytes = 64 * 1024;

/// The body as a JSON object; nullopt for anything else (not JSON, not an object, too long).
std::optional<boost::json::object> parse_answer_object(std::string_view body);

/// The string at `key`; empty when missing or not a string.
std::string_view string_field(const boost::json::object& object, std::string_view key);

/// The integer at `key`; nullopt when missing, not an integer, or beyond int64.
std::optional<std::int64_t> integer_field(const boost::json::object& object, std::string_view key);

/// An access token from a token endpoint, or why there is none.
struct token_answer {
  std::string access_token; ///< empty when there is none
  std::chrono::seconds expires_in{0};
  std::string error; ///< why there is none (masked provider text); empty with a token
};

/// {"access_token": "...", "expires_in": <seconds>}, the shape both WeChat's and Google's token
/// endpoints answer; a missing token or a lifetime that is not a positive integer is an error.
token_answer read_access_token(const boost::json::object& answer);

} // namespace herald::providers
