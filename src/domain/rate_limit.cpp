#include "domain/rate_limit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace herald::domain {
namespace {

// Tolerance for floating-point refill arithmetic: after waiting wait_time(), try_take() must
// succeed even if the sum lands a hair below one token.
constexpr double epsilon = 1e-9;

} // namespace

token_bucket::token_bucket(double rate_per_sec, double burst, timestamp now)
    // A bucket that cannot hold one token would never let anything through.
    : rate_per_sec_(rate_per_sec), burst_(std::max(burst, 1.0)), tokens_(burst_),
      last_refill_(now) {}

void token_bucket::refill(timestamp now) {
  if (now <= last_refill_)
    return; // time never runs backwards for the bucket
  const double elapsed = std::chrono::duration<double>(now - last_refill_).count();
  tokens_ = std::min(burst_, tokens_ + elapsed * rate_per_sec_);
  last_refill_ = now;
}

bool token_bucket::try_take(timestamp now) {
  if (rate_per_sec_ <= 0)
    return true;
  refill(now);
  if (tokens_ + epsilon < 1.0)
    return false;
  tokens_ = std::max(0.0, tokens_ - 1.0);
  return true;
}

std::chrono::microseconds token_bucket::wait_time(timestamp now) {
  if (rate_per_sec_ <= 0)
    return std::chrono::microseconds{0};
  refill(now);
  const double missing = 1.0 - tokens_;
  if (missing <= epsilon)
    return std::chrono::microseconds{0};
  return std::chrono::microseconds{
      static_cast<std::int64_t>(std::ceil(missing / rate_per_sec_ * 1e6))};
}

double token_bucket::available(timestamp now) {
  if (rate_per_sec_ <= 0)
    return std::numeric_limits<double>::infinity();
  refill(now);
  return tokens_;
}

void token_bucket::set_limits(double rate_per_sec, double burst, timestamp now) {
  refill(now);
  rate_per_sec_ = rate_per_sec;
  burst_ = std::max(burst, 1.0);
  tokens_ = std::min(tokens_, burst_);
}

} // namespace herald::domain
