#include "domain/claim_places.hpp"

#include <algorithm>

namespace herald::domain {

std::uint64_t claim_places::begin_epoch() {
  std::lock_guard lock(mutex_);
  offered_ = open_ = 0;
  return ++epoch_;
}

void claim_places::close(std::uint64_t epoch) {
  std::lock_guard lock(mutex_);
  if (epoch == epoch_)
    offered_ = open_ = 0;
}

std::size_t claim_places::offer(std::size_t places) {
  std::lock_guard lock(mutex_);
  const auto taken_since = offered_ - open_;
  offered_ = open_ = places;
  return taken_since;
}

claim_places::taken claim_places::take(std::size_t wanted) {
  std::lock_guard lock(mutex_);
  const auto got = std::min(wanted, open_);
  open_ -= got;
  return {got, epoch_};
}

} // namespace herald::domain
