#include "app/api_access.hpp"

#include "domain/masking.hpp"
#include "observability/log.hpp"

namespace herald::app {

api_access::api_access(const auth_config& auth, const persistence::database_url& url)
    : auth_(auth), url_(url) {
  if (auth_.mode != auth_config::auth_mode::api_keys)
    return;
  log::info("auth.keys_loaded", {{"keys", std::to_string(refresh())}});
  refresher_ = std::thread([this] { refresh_until_stopped(); });
}

api_access::~api_access() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (refresher_.joinable())
    refresher_.join();
}

const api::authenticator& api_access::authenticator() const {
  if (auth_.mode == auth_config::auth_mode::api_keys)
    return keys_;
  return open_;
}

std::size_t api_access::refresh() {
  if (!store_)
    store_ = std::make_unique<persistence::api_key_store>(url_);
  try {
    auto keys = store_->list();
    keys_.replace(keys);
    return keys.size();
  } catch (...) {
    store_.reset(); // reconnect next time: the connection may be what failed
    throw;
  }
}

void api_access::refresh_until_stopped() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, auth_.key_refresh, [this] { return stopping_; })) {
    lock.unlock();
    try {
      refresh();
    } catch (const std::exception& e) {
      // The last table stays in force; the database being down must not lock everyone out.
      log::warn("auth.key_refresh_failed", {{"error", domain::mask_free_text(e.what())}});
    }
    lock.lock();
  }
}

} // namespace herald::app
