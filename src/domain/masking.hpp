#pragma once

#include <string>
#include <string_view>

namespace herald::domain {

/// "+8613800000000" -> "+86138****0000": keeps enough to correlate, not enough to dial.
std::string mask_phone(std::string_view phone);

/// "alice@example.com" -> "a***@example.com".
std::string mask_email(std::string_view email);

/// "device-token-1" -> "dev***(14)": a prefix and the length.
std::string mask_token(std::string_view token);

/// Picks the mask by the value's shape (email, phone number, anything else as a token);
/// what every log line uses for a recipient.
std::string mask_recipient(std::string_view recipient);

} // namespace herald::domain
