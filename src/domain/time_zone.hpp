#pragma once

#include "domain/time.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace herald::domain {

/// Wall-clock time in some zone, as seconds since 1970-01-01T00:00 of that wall clock (the
/// count a UTC clock showing the same date and time would have).
using local_seconds = std::int64_t;

/// One IANA time zone: its recorded offset changes and, after the last, the POSIX rule that
/// continues them (RFC 8536 "TZif", as in /usr/share/zoneinfo). Pure: the bytes are read by
/// whoever loads it.
class time_zone {
public:
  /// Parses TZif version 2 or later; the error says what is wrong with the bytes.
  static std::variant<time_zone, std::string> from_tzif(std::string_view bytes);

  /// A zone that is always `offset` from UTC.
  static time_zone fixed(std::chrono::seconds offset);

  /// Local minus UTC at `at`.
  std::chrono::seconds utc_offset_at(timestamp at) const;

  /// The wall-clock time at `at`.
  local_seconds to_local(timestamp at) const;

  /// Of two instants showing the same wall-clock time (the repeated hour of a fall-back).
  enum class occurrence { earlier, later };

  /// The instant whose wall-clock time is `local` (of two, the one `which` says) or, when the
  /// clocks skip it (a spring-forward gap), the instant they jump past it. Offsets are taken
  /// from a day either side: a zone changing its offset twice within that (none does) is not
  /// supported.
  timestamp from_local(local_seconds local, occurrence which = occurrence::earlier) const;

  /// The POSIX rule for times after the last recorded change, e.g. 2 transitions a year.
  struct rule {
    std::int32_t std_offset = 0; ///< seconds east of UTC
    std::int32_t dst_offset = 0;
    bool has_dst = false;
    struct date {
      enum class kind { month_week_day, julian_no_leap, zero_based_day } form{};
      int month = 0, week = 0, weekday = 0, day = 0;
      std::int32_t time = 7200; ///< seconds after local midnight; may be negative or > 24 h
    } start, end;
  };

private:
  std::vector<std::int64_t> transitions_;  // UTC seconds, ascending
  std::vector<std::int32_t> offset_after_; // per transition
  std::int32_t offset_before_first_ = 0;
  rule rule_;
  bool has_rule_ = false;

  std::int32_t offset_at_seconds(std::int64_t utc) const;
  std::int32_t rule_offset_at(std::int64_t utc) const;
};

} // namespace herald::domain
