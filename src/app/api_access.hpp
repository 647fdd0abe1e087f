#pragma once

#include "api/authenticator.hpp"
#include "app/config.hpp"
#include "persistence/api_key_store.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace herald::app {

/// The API's access control as configured (auth.mode): open access, or the API key table,
/// loaded before serving and re-read every auth.key_refresh on a thread of its own, so a
/// request never waits on the database and a revoked key is refused within that bound.
class api_access {
public:
  /// Loads the key table once when the mode is api_keys; throws store_error if it cannot.
  api_access(const auth_config& auth, const persistence::database_url& url);
  /// Stops the refresh thread.
  ~api_access();
  api_access(const api_access&) = delete;
  api_access& operator=(const api_access&) = delete;

  const api::authenticator& authenticator() const;

private:
  void refresh_until_stopped();
  /// Replaces the key table with the database's; the number of keys read.
  std::size_t refresh();

  auth_config auth_;
  persistence::database_url url_;
  std::unique_ptr<persistence::api_key_store> store_; ///< the refresher's connection
  api::open_access open_;
  api::api_key_table keys_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread refresher_;
};

} // namespace herald::app
