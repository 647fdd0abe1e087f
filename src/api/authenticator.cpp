#include "api/authenticator.hpp"

#include <algorithm>
#include <cctype>

namespace herald::api {

namespace {

/// The credentials of "Bearer <token>" (scheme case-insensitive, RFC 6750); empty otherwise.
std::string_view bearer_token(std::string_view authorization) {
  constexpr std::string_view scheme = "bearer ";
  if (authorization.size() <= scheme.size() ||
      !std::equal(scheme.begin(), scheme.end(), authorization.begin(),
                  [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); }))
    return {};
  auto token = authorization.substr(scheme.size());
  while (!token.empty() && token.front() == ' ')
    token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ')
    token.remove_suffix(1);
  return token;
}

} // namespace

std::optional<caller> open_access::authenticate(std::string_view) const {
  return caller{"", domain::scope_set::all()};
}

std::optional<caller> api_key_table::authenticate(std::string_view authorization) const {
  auto token = bearer_token(authorization);
  auto id = domain::api_key_id(token);
  if (!id)
    return std::nullopt;
  std::shared_ptr<const table> keys;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    keys = keys_;
  }
  auto found = keys->find(*id);
  if (found == keys->end() || found->second.revoked_at)
    return std::nullopt;
  if (!domain::same_api_key_hash(domain::api_key_hash(token), found->second.hash))
    return std::nullopt;
  return caller{found->second.tenant, found->second.scopes};
}

void api_key_table::replace(const std::vector<domain::api_key>& keys) {
  auto fresh = std::make_shared<table>();
  for (const auto& key : keys) {
    // An empty tenant means "every tenant" to the store: a key must never carry it, however
    // the row got into the table (`herald keys create` refuses one).
    if (!key.tenant.empty())
      fresh->emplace(key.id, key);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  keys_ = std::move(fresh);
}

} // namespace herald::api
