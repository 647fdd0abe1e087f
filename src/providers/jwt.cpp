#include "providers/jwt.hpp"

#include "providers/webhook_signature.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include <boost/json/serialize.hpp>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

namespace herald::providers {
namespace {

/// Frees an OpenSSL object with its own free function.
template <auto free_function> struct openssl_free {
  template <typename T> void operator()(T* object) const { free_function(object); }
};

template <typename T, auto free_function>
using openssl_ptr = std::unique_ptr<T, openssl_free<free_function>>;

using key_ptr = openssl_ptr<EVP_PKEY, EVP_PKEY_free>;

constexpr int rs256_minimum_bits = 2048; // RFC 7518 §3.3
constexpr int p256_scalar_size = 32;     // bytes of r, and of s

// OpenSSL queues an error per failed call on the calling thread; clearing it keeps a failure
// here from being reported later by unrelated code (libcurl's TLS, say) on the same thread.
[[noreturn]] void throw_openssl_failure(const char* what) {
  ERR_clear_error();
  throw std::runtime_error(std::string("jwt: ") + what + " failed");
}

std::optional<signing_key> refuse(std::string* problem, std::string reason) {
  ERR_clear_error();
  if (problem)
    *problem = std::move(reason);
  return std::nullopt;
}

int base64url_value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '-')
    return 62;
  if (c == '_')
    return 63;
  return -1;
}

// Called by OpenSSL only for an encrypted key. Refusing (instead of leaving the callback null)
// matters: OpenSSL's default would prompt for a passphrase on the terminal.
int refuse_passphrase(char*, int, int, void* asked) {
  *static_cast<bool*>(asked) = true;
  return -1;
}

std::string type_name(EVP_PKEY* key) {
  const char* name = EVP_PKEY_get0_type_name(key);
  return name ? name : "an unknown key type";
}

/// Why `key` cannot sign as `expected`, or "" when it can.
std::string unfit_for(EVP_PKEY* key, key_kind expected) {
  if (expected == key_kind::rsa) {
    if (!EVP_PKEY_is_a(key, "RSA"))
      return "expected an RSA private key (RS256), got " + type_name(key);
    const int bits = EVP_PKEY_get_bits(key);
    if (bits < rs256_minimum_bits)
      return "the RSA key has " + std::to_string(bits) + " bits, RS256 needs at least " +
             std::to_string(rs256_minimum_bits);
    return {};
  }
  if (!EVP_PKEY_is_a(key, "EC"))
    return "expected an EC P-256 private key (ES256), got " + type_name(key);
  char curve[80] = {};
  if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, curve, sizeof curve,
                                     nullptr) != 1)
    return "expected an EC P-256 private key (ES256), got an EC key without a named curve";
  if (std::string_view(curve) != SN_X9_62_prime256v1)
    return "expected an EC P-256 private key (ES256), got curve " + std::string(curve);
  return {};
}

/// The fixed-size r || s JWS wants from the DER ECDSA-Sig-Value OpenSSL produces. DER drops
/// leading zero bytes of r and s, so about one signature in 128 has a shorter r or s; each is
/// left-padded back to 32 bytes.
std::string jws_ecdsa_signature(const std::string& der) {
  const auto* cursor = reinterpret_cast<const unsigned char*>(der.data());
  const openssl_ptr<ECDSA_SIG, ECDSA_SIG_free> signature(
      d2i_ECDSA_SIG(nullptr, &cursor, static_cast<long>(der.size())));
  if (!signature)
    throw_openssl_failure("decoding the ECDSA signature");
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(signature.get(), &r, &s);
  std::string raw(2 * p256_scalar_size, '\0');
  auto* out = reinterpret_cast<unsigned char*>(raw.data());
  if (BN_bn2binpad(r, out, p256_scalar_size) != p256_scalar_size ||
      BN_bn2binpad(s, out + p256_scalar_size, p256_scalar_size) != p256_scalar_size)
    throw_openssl_failure("writing the ECDSA signature as r || s");
  return raw;
}

} // namespace

std::string base64url_encode(std::string_view bytes) {
  std::string text = base64_encode(bytes);
  text.erase(text.find_last_not_of('=') + 1);
  std::replace(text.begin(), text.end(), '+', '-');
  std::replace(text.begin(), text.end(), '/', '_');
  return text;
}

std::optional<std::string> base64url_decode(std::string_view text) {
  if (text.size() % 4 == 1)
    return std::nullopt; // six bits cannot end a byte
  std::string bytes;
  bytes.reserve(text.size() / 4 * 3 + 2);
  std::uint32_t pending = 0; // bits read but not yet written, the newest lowest
  int pending_count = 0;
  for (const char c : text) {
    const int value = base64url_value(c);
    if (value < 0)
      return std::nullopt;
    pending = (pending << 6) | static_cast<std::uint32_t>(value);
    pending_count += 6;
    if (pending_count >= 8) {
      pending_count -= 8;
      bytes.push_back(static_cast<char>(pending >> pending_count));
      pending &= (1u << pending_count) - 1;
    }
  }
  if (pending != 0)
    return std::nullopt; // an encoder leaves the last character's spare bits zero
  return bytes;
}

signing_key::signing_key(key_kind kind, std::shared_ptr<EVP_PKEY> key)
    : kind_(kind), key_(std::move(key)) {}

std::string_view signing_key::algorithm() const {
  return kind_ == key_kind::rsa ? "RS256" : "ES256";
}

std::string signing_key::sign(std::string_view signing_input) const {
  const openssl_ptr<EVP_MD_CTX, EVP_MD_CTX_free> context(EVP_MD_CTX_new());
  EVP_PKEY_CTX* key_context = nullptr; // belongs to `context`
  if (!context ||
      EVP_DigestSignInit(context.get(), &key_context, EVP_sha256(), nullptr, key_.get()) != 1)
    throw_openssl_failure("starting the signature");
  // PKCS#1 v1.5 is OpenSSL's default for RSA too; said here because RS256 means exactly it.
  if (kind_ == key_kind::rsa && EVP_PKEY_CTX_set_rsa_padding(key_context, RSA_PKCS1_PADDING) != 1)
    throw_openssl_failure("choosing PKCS#1 v1.5 padding");
  const auto* input = reinterpret_cast<const unsigned char*>(signing_input.data());
  std::size_t size = 0;
  if (EVP_DigestSign(context.get(), nullptr, &size, input, signing_input.size()) != 1)
    throw_openssl_failure("sizing the signature");
  std::string signature(size, '\0');
  if (EVP_DigestSign(context.get(), reinterpret_cast<unsigned char*>(signature.data()), &size,
                     input, signing_input.size()) != 1)
    throw_openssl_failure("signing");
  signature.resize(size);
  return kind_ == key_kind::ec_p256 ? jws_ecdsa_signature(signature) : signature;
}

std::optional<signing_key> load_private_key(std::string_view pem, key_kind expected,
                                            std::string* problem) {
  if (pem.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return refuse(problem, "the private key is empty");
  if (pem.find("-----BEGIN ") == std::string_view::npos)
    return refuse(problem, "the private key is not PEM text (no -----BEGIN line)");
  if (pem.size() > INT_MAX)
    return refuse(problem, "the private key text is too long");
  const openssl_ptr<BIO, BIO_free> source(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!source)
    throw_openssl_failure("reading the private key text");
  bool passphrase_asked = false;
  key_ptr key(PEM_read_bio_PrivateKey(source.get(), nullptr, refuse_passphrase, &passphrase_asked));
  if (passphrase_asked)
    return refuse(problem, "the private key is encrypted; herald reads only unencrypted keys");
  if (!key)
    return refuse(problem, "no readable private key in the PEM text");
  if (std::string reason = unfit_for(key.get(), expected); !reason.empty())
    return refuse(problem, std::move(reason));
  return signing_key(expected, std::shared_ptr<EVP_PKEY>(key.release(), EVP_PKEY_free));
}

std::string sign_jwt(const signing_key& key, const boost::json::object& header,
                     const boost::json::object& claims) {
  boost::json::object protected_header;
  protected_header["alg"] = key.algorithm();
  for (const auto& member : header)
    if (member.key() != "alg")
      protected_header.insert(member);
  std::string token = base64url_encode(boost::json::serialize(protected_header));
  token += '.';
  token += base64url_encode(boost::json::serialize(claims));
  const std::string signature = key.sign(token);
  token += '.';
  token += base64url_encode(signature);
  return token;
}

} // namespace herald::providers
