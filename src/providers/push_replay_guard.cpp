#include "providers/push_replay_guard.hpp"

#include <openssl/evp.h>

namespace herald::providers {
namespace {

std::string sha256(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    return std::string{bytes}; // cannot hash: compare the bodies themselves
  return std::string(reinterpret_cast<const char*>(digest), length);
}

} // namespace

push_replay_guard::push_replay_guard(std::chrono::seconds window, std::size_t capacity)
    : window_(window), capacity_(capacity == 0 ? 1 : capacity) {}

bool push_replay_guard::admit(std::int64_t timestamp, std::string_view nonce, std::string_view body,
                              std::int64_t now) {
  auto digest = sha256(body);
  std::lock_guard<std::mutex> guard{mutex_};
  // Pairs older than the window cannot come again: their timestamp is refused as stale.
  const auto oldest = now - window_.count();
  while (!seen_.empty() && (seen_.begin()->first.first < oldest || seen_.size() >= capacity_))
    seen_.erase(seen_.begin());
  auto [found, added] = seen_.emplace(std::make_pair(timestamp, std::string{nonce}), digest);
  return added || found->second == digest;
}

} // namespace herald::providers
