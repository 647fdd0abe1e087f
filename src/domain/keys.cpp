#include "domain/keys.hpp"

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/sha.h>

namespace herald::domain {
namespace {

using digest = std::array<unsigned char, SHA256_DIGEST_LENGTH>;

digest sha256(std::string_view data) {
  digest out{};
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data());
  return out;
}

// HMAC-SHA256 with a context per thread that is keyed once. OpenSSL 3's one-shot HMAC()
// fetches the algorithm and expands the key on every call: 3.7 % of herald's CPU under load,
// at seven ids per three-channel message. Re-initialising a keyed context without a key
// restarts it from the expanded key.
class keyed_hmac {
public:
  keyed_hmac() : mac_(EVP_MAC_fetch(nullptr, "HMAC", nullptr)), ctx_(EVP_MAC_CTX_new(mac_)) {}
  ~keyed_hmac() {
    EVP_MAC_CTX_free(ctx_);
    EVP_MAC_free(mac_);
  }
  keyed_hmac(const keyed_hmac&) = delete;
  keyed_hmac& operator=(const keyed_hmac&) = delete;

  digest operator()(const std::string& key, std::string_view data) {
    if (ctx_ == nullptr)
      throw std::runtime_error("OpenSSL has no HMAC");
    const bool rekey = !keyed_ || key != key_;
    if (rekey) {
      char sha256[] = "SHA256";
      const OSSL_PARAM params[] = {
          OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, sha256, 0),
          OSSL_PARAM_construct_end()};
      keyed_ = false;
      check(EVP_MAC_init(ctx_, reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                         params));
      key_ = key;
      keyed_ = true;
    } else {
      check(EVP_MAC_init(ctx_, nullptr, 0, nullptr));
    }
    check(EVP_MAC_update(ctx_, reinterpret_cast<const unsigned char*>(data.data()), data.size()));
    digest out{};
    std::size_t length = 0;
    check(EVP_MAC_final(ctx_, out.data(), &length, out.size()));
    return out;
  }

private:
  static void check(int ok) {
    if (ok != 1)
      throw std::runtime_error("HMAC-SHA256 failed in OpenSSL");
  }

  EVP_MAC* mac_;
  EVP_MAC_CTX* ctx_;
  std::string key_;
  bool keyed_ = false;
};

digest hmac_sha256(const id_secret& secret, std::string_view data) {
  thread_local keyed_hmac hmac;
  return hmac(secret.bytes, data);
}

// Lower-case hex of the first `chars` hex digits of `bytes`.
std::string hex_prefix(const digest& bytes, std::size_t chars) {
  static constexpr char alphabet[] = "0123456789abcdef";
  std::string out;
  out.reserve(chars);
  for (std::size_t i = 0; i < chars; ++i) {
    const unsigned char byte = bytes[i / 2];
    out += alphabet[i % 2 == 0 ? byte >> 4 : byte & 0x0f];
  }
  return out;
}

void append_field(std::string& out, const std::string& field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

} // namespace

std::string encode(const message_key& key) {
  std::string out;
  out.reserve(key.tenant.size() + key.biz_type.size() + key.biz_id.size() + key.user_id.size() +
              16);
  append_field(out, key.tenant);
  append_field(out, key.biz_type);
  append_field(out, key.biz_id);
  append_field(out, key.user_id);
  return out;
}

std::string encode(const task_key& key) {
  std::string out = encode(key.message);
  append_field(out, key.channel);
  return out;
}

// Each kind of id has its own domain prefix, so a message id and a task id never share a MAC
// input and the provider-facing id reveals nothing about the task id.
std::string message_id_for(const message_key& key, const id_secret& secret) {
  return "msg_" + hex_prefix(hmac_sha256(secret, "message\n" + encode(key)), 24);
}

std::string task_id_for(const task_key& key, const id_secret& secret) {
  return "tsk_" + hex_prefix(hmac_sha256(secret, "task\n" + encode(key)), 24);
}

std::string provider_request_id_for(const task_key& key, const id_secret& secret) {
  return "hrq_" + hex_prefix(hmac_sha256(secret, "provider-request\n" + encode(key)), 32);
}

std::string cluster_id_for(const id_secret& secret) {
  return "cls_" + hex_prefix(hmac_sha256(secret, "cluster\n"), 24);
}

std::uint64_t stable_hash(const std::string& encoded_key) {
  const digest bytes = sha256(encoded_key);
  std::uint64_t out = 0;
  for (std::size_t i = 0; i < 8; ++i)
    out = (out << 8) | bytes[i];
  return out;
}

std::size_t shard_of(const message_key& key, std::size_t shard_count) {
  if (shard_count == 0)
    return 0;
  return static_cast<std::size_t>(stable_hash(encode(key)) % shard_count);
}

} // namespace herald::domain
