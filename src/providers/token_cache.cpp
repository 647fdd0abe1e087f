#include "providers/token_cache.hpp"

#include "observability/log.hpp"

#include <utility>

namespace herald::providers {

token_cache::token_cache(fetcher fetch, std::chrono::seconds margin, clock_fn clock)
    : fetch_(std::move(fetch)), margin_(margin), clock_(std::move(clock)) {}

void token_cache::get(token_callback done) {
  std::unique_lock<std::mutex> lock{mutex_};
  if (!token_.empty() && clock_() < valid_until_) {
    auto token = token_;
    lock.unlock();
    done(std::move(token));
    return;
  }
  waiting_.push_back(std::move(done));
  if (fetching_)
    return;
  fetching_ = true;
  ++fetches_;
  lock.unlock();
  try {
    fetch_([this](std::variant<issued_token, provider_result> outcome) {
      on_fetched(std::move(outcome));
    });
  } catch (const std::exception& e) {
    on_fetched(provider_result{call_outcome::retryable,
                               std::string{"token request not started: "} + e.what(),
                               std::nullopt});
  }
}

void token_cache::on_fetched(std::variant<issued_token, provider_result> outcome) {
  std::vector<token_callback> waiting;
  token_or_failure answer = std::string{};
  {
    std::lock_guard<std::mutex> guard{mutex_};
    fetching_ = false;
    waiting.swap(waiting_);
    if (auto* issued = std::get_if<issued_token>(&outcome)) {
      token_ = issued->value;
      // A lifetime shorter than the margin is used once at least, for the sends waiting now.
      valid_until_ = clock_() + (issued->lifetime > margin_ ? issued->lifetime - margin_
                                                            : std::chrono::seconds{0});
      answer = token_;
    } else {
      token_.clear();
      answer = std::get<provider_result>(std::move(outcome));
    }
  }
  for (auto& done : waiting) {
    try {
      done(answer);
    } catch (...) {
      log::error("provider.token_callback_threw", {});
    }
  }
}

void token_cache::invalidate(const std::string& stale) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (token_ == stale)
    token_.clear();
}

std::uint64_t token_cache::fetches() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return fetches_;
}

} // namespace herald::providers
