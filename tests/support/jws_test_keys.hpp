#pragma once

// Keys made on the spot, written as the PEM files herald is given, and a JWS verifier that
// checks tokens the way a receiver would: from the public key alone, with OpenSSL, rebuilding
// the DER ECDSA signature from JWS's r || s. Header-only: the shared test-support library does
// not link OpenSSL.

#include "providers/jwt.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <boost/json.hpp>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

namespace herald::test {

struct evp_pkey_free {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using test_key = std::unique_ptr<EVP_PKEY, evp_pkey_free>;

struct bio_free {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using test_bio = std::unique_ptr<BIO, bio_free>;

inline test_key checked_key(EVP_PKEY* key) {
  if (!key)
    throw std::runtime_error("test key generation failed");
  return test_key(key);
}

/// A fresh RSA key of `bits`.
inline test_key generate_rsa_key(std::size_t bits) {
  return checked_key(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", bits));
}

/// A fresh EC key on the named curve ("P-256", "P-384").
inline test_key generate_ec_key(const char* curve) {
  return checked_key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve));
}

/// A fresh Ed25519 key: a private key of a type neither algorithm takes.
inline test_key generate_ed25519_key() {
  return checked_key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
}

/// One 2048-bit RSA key for all the tests of a binary: generating one takes a while.
inline EVP_PKEY* shared_rsa_key() {
  static const test_key key = generate_rsa_key(2048);
  return key.get();
}

/// How a private key is written down.
enum class pem_form {
  pkcs8,           ///< "BEGIN PRIVATE KEY"
  traditional,     ///< "BEGIN RSA PRIVATE KEY" / "BEGIN EC PRIVATE KEY"
  encrypted_pkcs8, ///< "BEGIN ENCRYPTED PRIVATE KEY", passphrase "test passphrase"
};

inline std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(size));
}

inline std::string private_key_pem(EVP_PKEY* key, pem_form form = pem_form::pkcs8) {
  const test_bio out(BIO_new(BIO_s_mem()));
  static const char passphrase[] = "test passphrase";
  int written = 0;
  switch (form) {
  case pem_form::pkcs8:
    written = PEM_write_bio_PrivateKey(out.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
    break;
  case pem_form::traditional:
    written =
        PEM_write_bio_PrivateKey_traditional(out.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
    break;
  case pem_form::encrypted_pkcs8:
    written = PEM_write_bio_PKCS8PrivateKey(out.get(), key, EVP_aes_256_cbc(), passphrase,
                                            sizeof passphrase - 1, nullptr, nullptr);
    break;
  }
  if (written != 1)
    throw std::runtime_error("writing a private key as PEM failed");
  return bio_text(out.get());
}

inline std::string public_key_pem(EVP_PKEY* key) {
  const test_bio out(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PUBKEY(out.get(), key) != 1)
    throw std::runtime_error("writing a public key as PEM failed");
  return bio_text(out.get());
}

/// A Google service-account key file (its JSON text) holding `key`, trading assertions at
/// `token_uri`; the other fields as the fakes (tools/fcm_fake.hpp) expect them by default.
inline std::string service_account_file(EVP_PKEY* key, const std::string& token_uri,
                                        const std::string& project_id = "herald-fake") {
  return boost::json::serialize(
      boost::json::object{{"type", "service_account"},
                          {"project_id", project_id},
                          {"private_key_id", "fake-key-id-1"},
                          {"private_key", private_key_pem(key)},
                          {"client_email", "herald-sender@herald-fake.iam.gserviceaccount.com"},
                          {"client_id", "123456789012345678901"},
                          {"token_uri", token_uri}});
}

/// Whether `text` (a refusal's reason, say) holds any line of `pem`'s base64 body: a reason that
/// does could leak a key into a log.
inline bool quotes_pem_body(const std::string& text, const std::string& pem) {
  std::size_t start = 0;
  while (start < pem.size()) {
    const auto end = std::min(pem.find('\n', start), pem.size());
    const std::string line = pem.substr(start, end - start);
    if (line.size() >= 8 && line.rfind("-----", 0) != 0 && text.find(line) != std::string::npos)
      return true;
    start = end + 1;
  }
  return false;
}

/// The three parts of a compact JWS, decoded; nullopt unless there are exactly three, each
/// valid base64url.
struct jws_parts {
  std::string header;
  std::string claims;
  std::string signature;
};

inline std::optional<jws_parts> split_jws(std::string_view token) {
  const auto first = token.find('.');
  const auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos)
    return std::nullopt;
  auto header = providers::base64url_decode(token.substr(0, first));
  auto claims = providers::base64url_decode(token.substr(first + 1, second - first - 1));
  auto signature = providers::base64url_decode(token.substr(second + 1));
  if (!header || !claims || !signature)
    return std::nullopt;
  return jws_parts{std::move(*header), std::move(*claims), std::move(*signature)};
}

/// The token's header (which = 0) or claims (which = 1) as a JSON object; throws if either is
/// not one.
inline boost::json::object jws_json(std::string_view token, int which) {
  const auto parts = split_jws(token);
  if (!parts)
    throw std::runtime_error("not a compact JWS");
  return boost::json::parse(which == 0 ? parts->header : parts->claims).as_object();
}

/// The DER ECDSA-Sig-Value OpenSSL verifies, from JWS's 64-byte r || s; "" for any other size.
inline std::string der_ecdsa_signature(const std::string& raw) {
  if (raw.size() != 64)
    return {};
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  ECDSA_SIG* signature = ECDSA_SIG_new();
  ECDSA_SIG_set0(signature, BN_bin2bn(bytes, 32, nullptr), BN_bin2bn(bytes + 32, 32, nullptr));
  unsigned char* der = nullptr;
  const int size = i2d_ECDSA_SIG(signature, &der);
  std::string out(reinterpret_cast<const char*>(der),
                  size > 0 ? static_cast<std::size_t>(size) : 0);
  OPENSSL_free(der);
  ECDSA_SIG_free(signature);
  return out;
}

/// Whether `token` is a compact JWS whose signature the public key in `public_pem` verifies:
/// RS256 for an RSA key, ES256 for an EC key, as the header's "alg" must also say.
inline bool verify_jws(const std::string& public_pem, std::string_view token) {
  const test_bio source(BIO_new_mem_buf(public_pem.data(), static_cast<int>(public_pem.size())));
  const test_key key(PEM_read_bio_PUBKEY(source.get(), nullptr, nullptr, nullptr));
  const auto parts = split_jws(token);
  if (!key || !parts)
    return false;
  const bool ec = EVP_PKEY_is_a(key.get(), "EC");
  const auto header = boost::json::parse(parts->header).as_object();
  const auto* alg = header.if_contains("alg");
  if (!alg || !alg->is_string() || alg->get_string() != (ec ? "ES256" : "RS256"))
    return false;
  const std::string signature = ec ? der_ecdsa_signature(parts->signature) : parts->signature;
  const std::string_view signing_input = token.substr(0, token.rfind('.'));

  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(),
                                                                        EVP_MD_CTX_free);
  EVP_PKEY_CTX* key_context = nullptr;
  if (EVP_DigestVerifyInit(context.get(), &key_context, EVP_sha256(), nullptr, key.get()) != 1)
    return false;
  if (!ec && EVP_PKEY_CTX_set_rsa_padding(key_context, RSA_PKCS1_PADDING) != 1)
    return false;
  return EVP_DigestVerify(context.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(),
                          reinterpret_cast<const unsigned char*>(signing_input.data()),
                          signing_input.size()) == 1;
}

} // namespace herald::test
