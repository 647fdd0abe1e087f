#include "providers/webhook_signature.hpp"

#include <stdexcept>
#include <vector>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace herald::providers {
namespace {

constexpr std::string_view secret_prefix = "whsec_";

bool is_base64_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

/// HMAC of `data` under `key` with `digest`, as raw bytes.
std::string hmac(const EVP_MD* digest, std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  if (HMAC(digest, key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac,
           &mac_size) == nullptr)
    throw std::runtime_error("webhook signature: HMAC failed");
  return {reinterpret_cast<const char*>(mac), mac_size};
}

} // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0'); // EVP_EncodeBlock writes a NUL
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()));
  out.resize(written < 0 ? 0 : static_cast<std::size_t>(written));
  return out;
}

std::optional<std::string> decode_webhook_secret(std::string_view whsec) {
  if (whsec.substr(0, secret_prefix.size()) != secret_prefix)
    return std::nullopt;
  const std::string_view encoded = whsec.substr(secret_prefix.size());
  if (encoded.empty() || encoded.size() % 4 != 0)
    return std::nullopt;
  // EVP_DecodeBlock tolerates surrounding whitespace and does not report padding; check the
  // shape here so only canonical padded base64 is accepted.
  std::size_t padding = 0;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    const char c = encoded[i];
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0 || !is_base64_char(c))
      return std::nullopt; // '=' only at the end
  }
  if (padding > 2)
    return std::nullopt;
  std::string key(encoded.size() / 4 * 3, '\0');
  const int decoded = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(key.data()),
                                      reinterpret_cast<const unsigned char*>(encoded.data()),
                                      static_cast<int>(encoded.size()));
  if (decoded < 0 || static_cast<std::size_t>(decoded) < padding)
    return std::nullopt;
  key.resize(static_cast<std::size_t>(decoded) - padding);
  if (key.empty())
    return std::nullopt;
  return key;
}

std::string sign_webhook(const std::string& key_bytes, std::string_view id, std::int64_t timestamp,
                         std::string_view body) {
  std::string content;
  const std::string ts = std::to_string(timestamp);
  content.reserve(id.size() + ts.size() + body.size() + 2);
  content.append(id).append(1, '.').append(ts).append(1, '.').append(body);

  return "v1," + base64_encode(hmac(EVP_sha256(), key_bytes, content));
}

std::string hmac_sha1(std::string_view key, std::string_view data) {
  return hmac(EVP_sha1(), key, data);
}

bool same_signature(std::string_view expected, std::string_view received) {
  return received.size() == expected.size() &&
         CRYPTO_memcmp(received.data(), expected.data(), expected.size()) == 0;
}

bool verify_webhook(const std::string& key_bytes, std::string_view id, std::int64_t timestamp,
                    std::string_view body, std::string_view signature_header) {
  const auto expected = sign_webhook(key_bytes, id, timestamp, body);
  bool match = false;
  while (!signature_header.empty()) {
    auto end = signature_header.find(' ');
    auto entry = signature_header.substr(0, end);
    signature_header.remove_prefix(end == std::string_view::npos ? signature_header.size()
                                                                 : end + 1);
    // Every entry is looked at, so the time taken does not tell which one matched.
    if (same_signature(expected, entry))
      match = true;
  }
  return match;
}

} // namespace herald::providers
