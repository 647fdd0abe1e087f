#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace herald::domain {

/// Wall-clock instants as herald stores and reports them (UTC, microsecond precision in text).
using timestamp = std::chrono::system_clock::time_point;

/// Source of the current time; injected so domain code and tests never read the wall clock.
class clock {
public:
  virtual ~clock() = default;
  /// The current instant.
  virtual timestamp now() const = 0;
};

/// The real wall clock.
class system_clock final : public clock {
public:
  timestamp now() const override { return std::chrono::system_clock::now(); }
};

/// A clock that only moves when told to; for tests.
class manual_clock final : public clock {
public:
  explicit manual_clock(timestamp start = timestamp{}) : now_(start) {}
  timestamp now() const override { return now_; }
  void advance(std::chrono::microseconds by) { now_ += by; }
  void set(timestamp to) { now_ = to; }

private:
  timestamp now_;
};

/// Formats as RFC 3339 UTC with microseconds, e.g. "2026-12-02T10:00:00.000000Z".
std::string format_rfc3339(timestamp at);

/// Parses RFC 3339 ("2026-12-02T10:00:00Z", fractional seconds and "+01:00" offsets allowed).
std::optional<timestamp> parse_rfc3339(std::string_view text);

/// A date of the proleptic Gregorian calendar.
struct civil_date {
  std::int64_t year;
  unsigned month; ///< 1-12
  unsigned day;   ///< 1-31
};

/// Days since 1970-01-01 of a date, and back.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d);
civil_date civil_from_days(std::int64_t days);
bool is_leap(std::int64_t year);

/// Microseconds since the Unix epoch; how timestamps are stored in the database.
std::int64_t to_unix_micros(timestamp at);
timestamp from_unix_micros(std::int64_t micros);

} // namespace herald::domain
