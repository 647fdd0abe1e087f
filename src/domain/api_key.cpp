#include "domain/api_key.hpp"

#include <algorithm>
#include <array>

#include <openssl/crypto.h>
#include <openssl/sha.h>

namespace herald::domain {

namespace {

constexpr std::string_view key_prefix = "hk_";
constexpr std::size_t key_id_digits = 16;
constexpr std::size_t key_secret_digits = 64;
constexpr std::array<scope, 4> every_scope{scope::submit, scope::read, scope::admin, scope::ops};

bool is_lower_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

} // namespace

std::string_view to_string(scope s) {
  switch (s) {
  case scope::submit:
    return "submit";
  case scope::read:
    return "read";
  case scope::admin:
    return "admin";
  case scope::ops:
    return "ops";
  }
  return "";
}

std::optional<scope_set> parse_scopes(std::string_view text) {
  scope_set scopes;
  for (std::size_t start = 0;;) {
    auto comma = text.find(',', start);
    auto name = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    auto known = std::find_if(every_scope.begin(), every_scope.end(),
                              [&](scope s) { return to_string(s) == name; });
    if (known == every_scope.end() || scopes.contains(*known))
      return std::nullopt;
    scopes.add(*known);
    if (comma == std::string_view::npos)
      return scopes;
    start = comma + 1;
  }
}

std::string to_string(scope_set scopes) {
  std::string out;
  for (scope s : every_scope)
    if (scopes.contains(s))
      out.append(out.empty() ? "" : ",").append(to_string(s));
  return out;
}

std::string api_key_text(std::string_view id, std::string_view secret) {
  return std::string(key_prefix) + std::string(id) + "_" + std::string(secret);
}

std::optional<std::string> api_key_id(std::string_view key_text) {
  if (key_text.size() != key_prefix.size() + key_id_digits + 1 + key_secret_digits ||
      key_text.substr(0, key_prefix.size()) != key_prefix ||
      key_text[key_prefix.size() + key_id_digits] != '_')
    return std::nullopt;
  auto id = key_text.substr(key_prefix.size(), key_id_digits);
  auto secret = key_text.substr(key_prefix.size() + key_id_digits + 1);
  if (!is_lower_hex(id) || !is_lower_hex(secret))
    return std::nullopt;
  return std::string(id);
}

std::string to_hex(std::string_view bytes) {
  static constexpr char alphabet[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char byte : bytes) {
    out += alphabet[byte >> 4];
    out += alphabet[byte & 0x0f];
  }
  return out;
}

std::string api_key_hash(std::string_view key_text) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(key_text.data()), key_text.size(), digest.data());
  return to_hex({reinterpret_cast<const char*>(digest.data()), digest.size()});
}

bool same_api_key_hash(std::string_view a, std::string_view b) {
  // Hashes have a fixed length, so comparing the lengths first reveals nothing.
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace herald::domain
