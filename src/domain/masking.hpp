#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace herald::domain {

/// "+8613800000000" -> "***0000": the last four digits correlate, nothing more is shown.
/// Fewer than eight characters: "***".
std::string mask_phone(std::string_view phone);

/// "alice@example.com" -> "a***@example.com".
std::string mask_email(std::string_view email);

/// "device-token-1" -> "dev***(14)": a prefix and the length.
std::string mask_token(std::string_view token);

/// Picks the mask by the value's shape (email, phone number, anything else as a token);
/// what every log line uses for a recipient.
std::string mask_recipient(std::string_view recipient);

/// "https://user:pass@host/hook?token=abc#x" -> "https://***@host/hook?token=***#***": the
/// scheme, host and path stay readable; credentials, query values and fragment never do.
std::string mask_url(std::string_view url);

/// Longest free text (provider error text) herald stores, in bytes.
inline constexpr std::size_t max_free_text_bytes = 512;

/// Provider error text made safe to store and show. Read as a person would read it first:
/// percent (%40, up to four layers: %2540), JSON (\u0040) and HTML (&#64;) escapes are
/// decoded. Then phone numbers (seven or more digits, grouped by spaces, '-', '.', '/', '+' or
/// parentheses, also glued to letters) keep at most their last four digits, emails are masked,
/// URLs pass through mask_url(), bearer/basic credentials, values of key=/token=/secret=/
/// password=-like pairs, credentials with a known prefix (sk_live_, whsec_, eyJ…, even cut
/// short) and long hex or base64 runs become "***". Control characters and invalid UTF-8
/// become '?'. Only then is the result cut to `max_bytes` on a UTF-8 boundary, ending in "..."
/// when cut: a cut never leaves the start of a secret or number in clear.
std::string mask_free_text(std::string_view text, std::size_t max_bytes = max_free_text_bytes);

} // namespace herald::domain
