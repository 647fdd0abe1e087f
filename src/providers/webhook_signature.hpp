#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace herald::providers {

/// Standard Webhooks (https://www.standardwebhooks.com) signing, scheme "v1" (HMAC-SHA256).

/// The key bytes of a secret written as "whsec_<base64>": the base64-decoded part after the
/// prefix. nullopt when the prefix is missing, the base64 is malformed (standard alphabet,
/// padded to a multiple of four) or the key is empty.
std::optional<std::string> decode_webhook_secret(std::string_view whsec);

/// The webhook-signature header value for one delivery:
/// "v1," + base64(HMAC-SHA256(key_bytes, "<id>.<timestamp>.<body>")).
std::string sign_webhook(const std::string& key_bytes, std::string_view id, std::int64_t timestamp,
                         std::string_view body);

/// Whether a webhook-signature header value (space-separated "v1,<base64>" entries; other
/// versions are skipped) holds the signature of this delivery. Compared in constant time.
bool verify_webhook(const std::string& key_bytes, std::string_view id, std::int64_t timestamp,
                    std::string_view body, std::string_view signature_header);

/// Standard base64 (with padding) of arbitrary bytes.
std::string base64_encode(std::string_view bytes);

/// HMAC-SHA1 of `data` under `key`, as raw bytes (Twilio signs its callbacks with it).
std::string hmac_sha1(std::string_view key, std::string_view data);

/// Whether a received signature is the expected one, in time independent of where they differ
/// (only the lengths, which are public, are compared first).
bool same_signature(std::string_view expected, std::string_view received);

} // namespace herald::providers
