#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <openssl/types.h>

namespace herald::providers {

/// JSON Web Tokens (RFC 7519) in JWS compact form (RFC 7515), signed with RS256 or ES256: what
/// providers that authenticate with a private key (FCM's service accounts, APNs' token keys)
/// need from JOSE, and nothing else.

/// base64url (RFC 4648 §5) without padding, as every part of a JWS is written.
std::string base64url_encode(std::string_view bytes);

/// The bytes of unpadded base64url text. nullopt for padding, characters outside the alphabet,
/// an impossible length, or stray bits in the last character (so each byte string has exactly
/// one accepted spelling).
std::optional<std::string> base64url_decode(std::string_view text);

/// The kind of private key a signing algorithm needs.
enum class key_kind {
  rsa,     ///< RS256: RSASSA-PKCS1-v1_5 with SHA-256
  ec_p256, ///< ES256: ECDSA on P-256 with SHA-256
};

/// A private key checked on load to fit its algorithm. Copies share the one key: an OpenSSL key
/// does not change once loaded, and several threads may sign with it at once.
class signing_key {
public:
  /// The JWS "alg" this key signs with: "RS256" or "ES256".
  std::string_view algorithm() const;

  /// The JWS signature of `signing_input`: the PKCS#1 v1.5 signature for RS256, the 64 bytes
  /// r || s for ES256 (RFC 7518 §3.4; OpenSSL's DER encoding is not what JWS verifiers read).
  /// Throws std::runtime_error if OpenSSL fails, which a loaded key gives it no reason to.
  std::string sign(std::string_view signing_input) const;

private:
  friend std::optional<signing_key> load_private_key(std::string_view, key_kind, std::string*);
  signing_key(key_kind kind, std::shared_ptr<EVP_PKEY> key);

  key_kind kind_;
  std::shared_ptr<EVP_PKEY> key_;
};

/// The unencrypted private key in `pem`: PKCS#8 ("BEGIN PRIVATE KEY") or the traditional
/// "BEGIN RSA PRIVATE KEY" / "BEGIN EC PRIVATE KEY". nullopt, with a one-line reason in
/// `*problem` (when not null), for text holding no such key, an encrypted key, a key of another
/// type or curve than `expected`, or an RSA key shorter than the 2048 bits RFC 7518 requires.
/// The reason never quotes the text: it may hold key material.
std::optional<signing_key> load_private_key(std::string_view pem, key_kind expected,
                                            std::string* problem);

/// The compact JWS "<header>.<claims>.<signature>", each part base64url. The header's "alg" is
/// always the key's, whatever `header` says, so a token cannot name an algorithm other than the
/// one that signed it. Throws std::runtime_error when signing_key::sign does.
std::string sign_jwt(const signing_key& key, const boost::json::object& header,
                     const boost::json::object& claims);

} // namespace herald::providers
