#include "domain/push_seal.hpp"

#include "domain/api_key.hpp"

#include <memory>
#include <stdexcept>

#include <openssl/evp.h>

namespace herald::domain {

push_seal seal_push(std::string channel, std::int64_t signed_at, std::string nonce,
                    std::string_view method, std::string_view body, std::chrono::seconds window) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context{EVP_MD_CTX_new(),
                                                                  &EVP_MD_CTX_free};
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(context.get(), method.data(), method.size()) != 1 ||
      EVP_DigestUpdate(context.get(), "\n", 1) != 1 ||
      EVP_DigestUpdate(context.get(), body.data(), body.size()) != 1 ||
      EVP_DigestFinal_ex(context.get(), digest, &length) != 1)
    throw std::runtime_error("SHA-256 is not available");
  push_seal seal;
  seal.channel = std::move(channel);
  seal.signed_at = signed_at;
  seal.nonce = std::move(nonce);
  seal.digest = to_hex({reinterpret_cast<const char*>(digest), length});
  // A timestamp up to `window` ahead is accepted until `window` after it; another node's clock
  // may run up to `window` behind and still accept it that much later.
  seal.kept_until = signed_at + 2 * window.count();
  return seal;
}

} // namespace herald::domain
