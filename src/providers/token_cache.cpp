#include "providers/token_cache.hpp"

#include "observability/log.hpp"

#include <algorithm>
#include <utility>

namespace herald::providers {
namespace {

constexpr std::chrono::seconds longest_lifetime = std::chrono::hours{24};

} // namespace

token_cache::token_cache(fetcher fetch, std::chrono::seconds margin, clock_fn clock,
                         std::chrono::milliseconds failure_hold)
    : fetch_(std::move(fetch)), margin_(margin), clock_(std::move(clock)),
      failure_hold_(failure_hold) {}

void token_cache::get(token_callback done) {
  std::unique_lock<std::mutex> lock{mutex_};
  const auto now = clock_();
  if (!token_.empty() && now < valid_until_) {
    auto token = token_;
    lock.unlock();
    done(std::move(token));
    return;
  }
  if (failure_ && now < failed_until_) {
    auto failure = *failure_;
    lock.unlock();
    done(std::move(failure));
    return;
  }
  waiting_.push_back(std::move(done));
  if (fetching_)
    return;
  fetching_ = true;
  ++fetches_;
  lock.unlock();
  try {
    fetch_([this](std::variant<issued_token, token_failure> outcome) {
      on_fetched(std::move(outcome));
    });
  } catch (const std::exception& e) {
    on_fetched(token_failure{{call_outcome::retryable,
                              std::string{"token request not started: "} + e.what(), std::nullopt},
                             false});
  }
}

void token_cache::on_fetched(std::variant<issued_token, token_failure> outcome) {
  std::vector<token_callback> waiting;
  token_or_failure answer = std::string{};
  {
    std::lock_guard<std::mutex> guard{mutex_};
    fetching_ = false;
    waiting.swap(waiting_);
    if (auto* issued = std::get_if<issued_token>(&outcome)) {
      token_ = issued->value;
      failure_.reset();
      // The provider's expires_in can be any 64-bit number: kept at most a day, so adding it
      // to the clock cannot overflow (a token the provider refuses sooner is fetched again).
      const auto lifetime = std::min(issued->lifetime, longest_lifetime);
      valid_until_ = clock_() + lifetime - std::min(margin_, lifetime / 2);
      answer = token_;
    } else {
      token_.clear();
      failure_ = std::get<token_failure>(std::move(outcome));
      failed_until_ = clock_() + failure_hold_;
      answer = *failure_;
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
