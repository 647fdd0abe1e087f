#pragma once

#include <deque>
#include <optional>
#include <utility>

namespace herald::domain {

/// The deadlines of requests that all share one timeout, so they come due in the order they
/// were made: one timer, armed for the front, serves them all, where a timer per request would
/// wake the clock twice (set and cancel) for every request. `Key` names a request; an entry
/// whose request was answered stays until it reaches the front, where `forget_front` drops it.
template <class TimePoint, class Key> class deadline_queue {
public:
  void push(TimePoint due, Key key) { entries_.push_back({due, std::move(key)}); }

  /// Drops the entries at the front whose request `answered(key)` says needs no deadline any
  /// more, so the queue holds about the requests still open and the front is one of them.
  template <class Answered> void forget_front(Answered&& answered) {
    while (!entries_.empty() && answered(entries_.front().key))
      entries_.pop_front();
  }

  /// Removes each entry due by `now`, in order, and hands its key to `expired`, which may push
  /// or forget entries itself.
  template <class Expired> void expire(TimePoint now, Expired&& expired) {
    while (!entries_.empty() && !(now < entries_.front().due)) {
      auto key = std::move(entries_.front().key);
      entries_.pop_front();
      expired(key);
    }
  }

  /// When the timer should fire next: the front's deadline, if any.
  std::optional<TimePoint> next() const {
    if (entries_.empty())
      return std::nullopt;
    return entries_.front().due;
  }

  bool empty() const { return entries_.empty(); }
  void clear() { entries_.clear(); }

private:
  struct entry {
    TimePoint due{};
    Key key{};
  };
  std::deque<entry> entries_;
};

} // namespace herald::domain
