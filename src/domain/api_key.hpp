#pragma once

#include "domain/time.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace herald::domain {

/// What an API key may do: submit (POST /v1/messages), read (look up messages, list dead
/// letters), admin (replay dead letters, change templates), ops (the node-wide figures of
/// every tenant: channels, cluster). Scopes do not imply each other.
enum class scope : std::uint8_t { submit = 1, read = 2, admin = 4, ops = 8 };

/// A set of scopes.
class scope_set {
public:
  constexpr scope_set() = default;
  static constexpr scope_set all() { return scope_set{0b1111}; } ///< each scope's bit

  bool contains(scope s) const { return (bits_ & static_cast<std::uint8_t>(s)) != 0; }
  bool empty() const { return bits_ == 0; }
  void add(scope s) { bits_ |= static_cast<std::uint8_t>(s); }

  friend bool operator==(scope_set a, scope_set b) { return a.bits_ == b.bits_; }

private:
  constexpr explicit scope_set(std::uint8_t bits) : bits_(bits) {}
  std::uint8_t bits_ = 0;
};

/// "submit,read,admin,ops" (any order, no blanks) into a set; nullopt when empty, when a name is
/// unknown or named twice.
std::optional<scope_set> parse_scopes(std::string_view text);

/// The set as "submit,read,admin,ops" (that order; only those it holds).
std::string to_string(scope_set scopes);

/// The name of one scope, as parse_scopes reads it.
std::string_view to_string(scope s);

/// An API key as stored: never the key itself, only its SHA-256.
struct api_key {
  std::string id; ///< public part of the key, shown by `herald keys list`
  std::string tenant;
  scope_set scopes;
  std::string hash; ///< lower-case hex SHA-256 of the whole key text
  timestamp created_at;
  std::optional<timestamp> revoked_at;
};

/// The key text handed to its owner once: "hk_<id>_<secret>", where the id is 16 and the
/// secret 64 lower-case hex digits (8 and 32 random bytes).
std::string api_key_text(std::string_view id, std::string_view secret);

/// The id inside a key text; nullopt when the text does not have the key's shape.
std::optional<std::string> api_key_id(std::string_view key_text);

/// Lower-case hex SHA-256 of a key text: what is stored and compared.
std::string api_key_hash(std::string_view key_text);

/// Whether two hashes are equal, in time independent of where they differ.
bool same_api_key_hash(std::string_view a, std::string_view b);

/// Lower-case hex of `bytes`.
std::string to_hex(std::string_view bytes);

} // namespace herald::domain
