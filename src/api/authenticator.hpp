#pragma once

#include "domain/api_key.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace herald::api {

/// Who a request acts for.
struct caller {
  std::string tenant; ///< empty: any tenant (auth mode none; a submission names its own)
  domain::scope_set scopes;
};

/// Decides who a request acts for from its Authorization header. Called on HTTP threads for
/// every request, so it must not block.
class authenticator {
public:
  virtual ~authenticator() = default;

  /// The caller, or nullopt when the header carries no valid key (401).
  virtual std::optional<caller> authenticate(std::string_view authorization) const = 0;
};

/// auth.mode "none": every request acts with every scope and for any tenant.
class open_access final : public authenticator {
public:
  std::optional<caller> authenticate(std::string_view authorization) const override;
};

/// auth.mode "api_keys": "Bearer <key>" checked against the key table held in memory (no
/// database round trip per request). `replace` swaps in a fresh table as a whole; a key
/// revoked or created in the database counts from the next replace.
class api_key_table final : public authenticator {
public:
  std::optional<caller> authenticate(std::string_view authorization) const override;

  /// Makes `keys` the table; callable from any thread while requests are checked.
  void replace(const std::vector<domain::api_key>& keys);

private:
  using table = std::unordered_map<std::string, domain::api_key>;
  mutable std::mutex mutex_;
  std::shared_ptr<const table> keys_ = std::make_shared<table>();
};

} // namespace herald::api
