#include "domain/time.hpp"

#include <cstdint>

namespace herald::domain {

// Howard Hinnant's days_from_civil / civil_from_days: proleptic Gregorian calendar, no locale,
// no time zone database, valid for every year herald can meet.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

civil_date civil_from_days(std::int64_t z) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0), m, d};
}

bool is_leap(std::int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

namespace {

// The last year an instant given to herald may fall in (see parse_rfc3339).
constexpr unsigned max_year = 2200;

unsigned days_in_month(std::int64_t y, unsigned m) {
  static constexpr unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Reads exactly `n` digits at `pos`; false if any is not a digit or the text is too short.
bool read_digits(std::string_view text, std::size_t& pos, std::size_t n, unsigned& out) {
  if (text.size() < pos + n)
    return false;
  out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = text[pos + i];
    if (!is_digit(c))
      return false;
    out = out * 10 + static_cast<unsigned>(c - '0');
  }
  pos += n;
  return true;
}

bool expect(std::string_view text, std::size_t& pos, char c) {
  if (pos >= text.size() || text[pos] != c)
    return false;
  ++pos;
  return true;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

void append_padded(std::string& out, std::int64_t value, int width) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  if (value < 0)
    out += '-';
  for (int i = static_cast<int>(digits.size()); i < width; ++i)
    out += '0';
  out += digits;
}

} // namespace

std::string format_rfc3339(timestamp at) {
  const std::int64_t micros = to_unix_micros(at);
  const std::int64_t days = floor_div(micros, 86'400'000'000LL);
  const std::int64_t micros_of_day = micros - days * 86'400'000'000LL;
  const civil_date date = civil_from_days(days);
  const std::int64_t secs = micros_of_day / 1'000'000;
  std::string out;
  out.reserve(27);
  append_padded(out, date.year, 4);
  out += '-';
  append_padded(out, date.month, 2);
  out += '-';
  append_padded(out, date.day, 2);
  out += 'T';
  append_padded(out, secs / 3600, 2);
  out += ':';
  append_padded(out, secs / 60 % 60, 2);
  out += ':';
  append_padded(out, secs % 60, 2);
  out += '.';
  append_padded(out, micros_of_day % 1'000'000, 6);
  out += 'Z';
  return out;
}

std::optional<timestamp> parse_rfc3339(std::string_view text) {
  // date-time = full-date "T" partial-time time-offset (RFC 3339 §5.6); "t" and "z" are allowed
  // lower case by the RFC. Leap seconds (":60") are refused: nothing herald talks to emits them.
  std::size_t pos = 0;
  unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!read_digits(text, pos, 4, year) || !expect(text, pos, '-') ||
      !read_digits(text, pos, 2, month) || !expect(text, pos, '-') ||
      !read_digits(text, pos, 2, day))
    return std::nullopt;
  if (pos >= text.size() || (text[pos] != 'T' && text[pos] != 't'))
    return std::nullopt;
  ++pos;
  if (!read_digits(text, pos, 2, hour) || !expect(text, pos, ':') ||
      !read_digits(text, pos, 2, minute) || !expect(text, pos, ':') ||
      !read_digits(text, pos, 2, second))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 ||
      minute > 59 || second > 59)
    return std::nullopt;
  // Later instants are refused: a timestamp holds nanoseconds up to 2262, and policy adds days
  // and windows to the instants it is given (quiet hours, cap windows, deferrals).
  if (year > max_year)
    return std::nullopt;

  // Fractional seconds: 1 to 9 digits, truncated to the microseconds herald keeps.
  std::int64_t frac_micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    std::size_t digits = 0;
    std::int64_t scale = 100'000;
    while (pos < text.size() && is_digit(text[pos])) {
      if (++digits > 9)
        return std::nullopt;
      frac_micros += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (digits == 0)
      return std::nullopt;
  }

  std::int64_t offset_minutes = 0;
  if (pos >= text.size())
    return std::nullopt;
  if (text[pos] == 'Z' || text[pos] == 'z') {
    ++pos;
  } else if (text[pos] == '+' || text[pos] == '-') {
    const bool negative = text[pos] == '-';
    ++pos;
    unsigned off_h = 0, off_m = 0;
    if (!read_digits(text, pos, 2, off_h) || !expect(text, pos, ':') ||
        !read_digits(text, pos, 2, off_m) || off_h > 23 || off_m > 59)
      return std::nullopt;
    offset_minutes = (negative ? -1 : 1) * static_cast<std::int64_t>(off_h * 60 + off_m);
  } else {
    return std::nullopt;
  }
  if (pos != text.size())
    return std::nullopt;

  const std::int64_t days = days_from_civil(year, month, day);
  const std::int64_t local_secs = days * 86'400 + hour * 3600 + minute * 60 + second;
  const std::int64_t utc_secs = local_secs - offset_minutes * 60;
  // system_clock counts nanoseconds in 64 bits on common platforms (years 1678 to 2261):
  // an instant it cannot hold is refused, not wrapped around.
  constexpr std::int64_t min_micros =
      std::chrono::duration_cast<std::chrono::microseconds>(timestamp::min().time_since_epoch())
          .count();
  constexpr std::int64_t max_micros =
      std::chrono::duration_cast<std::chrono::microseconds>(timestamp::max().time_since_epoch())
          .count();
  const std::int64_t micros = utc_secs * 1'000'000 + frac_micros;
  if (micros < min_micros || micros > max_micros)
    return std::nullopt;
  return from_unix_micros(micros);
}

std::int64_t to_unix_micros(timestamp at) {
  return std::chrono::floor<std::chrono::microseconds>(at.time_since_epoch()).count();
}

timestamp from_unix_micros(std::int64_t micros) {
  return timestamp{
      std::chrono::duration_cast<timestamp::duration>(std::chrono::microseconds{micros})};
}

} // namespace herald::domain
