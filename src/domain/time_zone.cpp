#include "domain/time_zone.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace herald::domain {
namespace {

constexpr std::int64_t seconds_per_day = 86'400;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
}

int weekday_of(std::int64_t days) { // 0 = Sunday; 1970-01-01 was a Thursday
  return static_cast<int>(((days + 4) % 7 + 7) % 7);
}

/// The local day (days since 1970-01-01) a POSIX rule date falls on in `year`.
std::int64_t day_of(const time_zone::rule::date& d, std::int64_t year) {
  using kind = time_zone::rule::date::kind;
  const std::int64_t jan1 = days_from_civil(year, 1, 1);
  switch (d.form) {
  case kind::julian_no_leap: // 1..365, February 29 never counted
    return jan1 + d.day - 1 + (is_leap(year) && d.day >= 60 ? 1 : 0);
  case kind::zero_based_day:
    return jan1 + d.day;
  case kind::month_week_day:
    break;
  }
  const std::int64_t first = days_from_civil(year, static_cast<unsigned>(d.month), 1);
  const std::int64_t next_month =
      d.month == 12 ? days_from_civil(year + 1, 1, 1)
                    : days_from_civil(year, static_cast<unsigned>(d.month) + 1, 1);
  std::int64_t day = first + (d.weekday - weekday_of(first) + 7) % 7 + (d.week - 1) * 7;
  while (day >= next_month) // week 5 means the last such weekday of the month
    day -= 7;
  return day;
}

/// Reads the big-endian fields of a TZif file, refusing to read past its end.
class tzif_reader {
public:
  explicit tzif_reader(std::string_view bytes) : bytes_(bytes) {}
  bool has(std::size_t n) const { return bytes_.size() - pos_ >= n; }
  std::uint64_t unsigned_be(std::size_t width) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < width; ++i)
      value = (value << 8) | static_cast<unsigned char>(bytes_[pos_++]);
    return value;
  }
  void skip(std::size_t n) { pos_ += n; }
  std::string_view rest() const { return bytes_.substr(pos_); }
  std::size_t position() const { return pos_; }

private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

struct tzif_counts {
  std::uint64_t isut = 0, isstd = 0, leap = 0, time = 0, type = 0, chars = 0;
};

std::optional<tzif_counts> read_header(tzif_reader& in) {
  if (!in.has(44) || in.rest().substr(0, 4) != "TZif")
    return std::nullopt;
  in.skip(20);
  tzif_counts c;
  for (auto* count : {&c.isut, &c.isstd, &c.leap, &c.time, &c.type, &c.chars})
    *count = in.unsigned_be(4);
  return c;
}

/// Real zones stay within UTC-12 and UTC+14; TZif allows a little more, nothing beyond a day.
bool is_plausible_offset(std::int64_t seconds) {
  return seconds > -25 * 3600 && seconds < 26 * 3600;
}

/// Parses "[+-]hh[:mm[:ss]]" at `pos`; hours up to 167 (RFC 8536's extension).
std::optional<std::int32_t> posix_time(std::string_view s, std::size_t& pos) {
  int sign = 1;
  if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
    sign = s[pos++] == '-' ? -1 : 1;
  std::int32_t total = 0;
  for (int part = 0; part < 3; ++part) {
    if (part > 0) {
      if (pos >= s.size() || s[pos] != ':')
        break;
      ++pos;
    }
    const std::size_t begin = pos;
    std::int32_t value = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - begin < 3)
      value = value * 10 + (s[pos++] - '0');
    if (pos == begin || (part == 0 && value > 167) || (part > 0 && value > 59))
      return std::nullopt;
    total += value * (part == 0 ? 3600 : part == 1 ? 60 : 1);
  }
  return sign * total;
}

bool posix_name(std::string_view s, std::size_t& pos) {
  const std::size_t begin = pos;
  if (pos < s.size() && s[pos] == '<') {
    const std::size_t close = s.find('>', pos);
    if (close == std::string_view::npos)
      return false;
    pos = close + 1;
    return close - begin >= 4;
  }
  while (pos < s.size() && ((s[pos] >= 'A' && s[pos] <= 'Z') || (s[pos] >= 'a' && s[pos] <= 'z')))
    ++pos;
  return pos - begin >= 3;
}

std::optional<time_zone::rule::date> posix_date(std::string_view s, std::size_t& pos) {
  using kind = time_zone::rule::date::kind;
  time_zone::rule::date d;
  auto number = [&](int low, int high) -> std::optional<int> {
    const std::size_t begin = pos;
    int value = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - begin < 3)
      value = value * 10 + (s[pos++] - '0');
    if (pos == begin || value < low || value > high)
      return std::nullopt;
    return value;
  };
  if (pos < s.size() && s[pos] == 'M') {
    ++pos;
    auto month = number(1, 12);
    if (!month || pos >= s.size() || s[pos++] != '.')
      return std::nullopt;
    auto week = number(1, 5);
    if (!week || pos >= s.size() || s[pos++] != '.')
      return std::nullopt;
    auto weekday = number(0, 6);
    if (!weekday)
      return std::nullopt;
    d.form = kind::month_week_day;
    d.month = *month;
    d.week = *week;
    d.weekday = *weekday;
  } else if (pos < s.size() && s[pos] == 'J') {
    ++pos;
    auto day = number(1, 365);
    if (!day)
      return std::nullopt;
    d.form = kind::julian_no_leap;
    d.day = *day;
  } else {
    auto day = number(0, 365);
    if (!day)
      return std::nullopt;
    d.form = kind::zero_based_day;
    d.day = *day;
  }
  if (pos < s.size() && s[pos] == '/') {
    ++pos;
    auto time = posix_time(s, pos);
    if (!time)
      return std::nullopt;
    d.time = *time;
  }
  return d;
}

/// A POSIX TZ string such as "CET-1CEST,M3.5.0,M10.5.0/3"; offsets there count west of UTC.
std::optional<time_zone::rule> posix_rule(std::string_view s) {
  time_zone::rule r;
  std::size_t pos = 0;
  if (!posix_name(s, pos))
    return std::nullopt;
  auto std_west = posix_time(s, pos);
  if (!std_west)
    return std::nullopt;
  r.std_offset = -*std_west;
  if (!is_plausible_offset(r.std_offset))
    return std::nullopt;
  if (pos == s.size())
    return r;
  if (!posix_name(s, pos))
    return std::nullopt;
  r.has_dst = true;
  r.dst_offset = r.std_offset + 3600;
  if (pos < s.size() && s[pos] != ',') {
    auto dst_west = posix_time(s, pos);
    if (!dst_west)
      return std::nullopt;
    r.dst_offset = -*dst_west;
  }
  if (pos >= s.size() || s[pos++] != ',')
    return std::nullopt; // TZif footers always give the dates
  if (!is_plausible_offset(r.dst_offset))
    return std::nullopt;
  auto start = posix_date(s, pos);
  if (!start || pos >= s.size() || s[pos++] != ',')
    return std::nullopt;
  auto end = posix_date(s, pos);
  if (!end || pos != s.size())
    return std::nullopt;
  r.start = *start;
  r.end = *end;
  return r;
}

} // namespace

std::variant<time_zone, std::string> time_zone::from_tzif(std::string_view bytes) {
  tzif_reader in(bytes);
  auto v1 = read_header(in);
  if (!v1)
    return std::string("not a TZif file");
  if (bytes[4] < '2')
    return std::string("TZif version 1 (no 64-bit data) is not supported");
  const std::uint64_t v1_size =
      v1->time * 5 + v1->type * 6 + v1->chars + v1->leap * 8 + v1->isstd + v1->isut;
  if (v1->leap != 0) // the "right/" zones count leap seconds in their transition times
    return std::string("TZif with leap seconds (a right/ zone) is not supported");
  if (v1->time > bytes.size() || v1->type > bytes.size() || v1->leap > bytes.size() ||
      !in.has(v1_size))
    return std::string("truncated TZif file");
  in.skip(v1_size);
  auto c = read_header(in);
  if (!c)
    return std::string("TZif file without its 64-bit part");
  if (c->time > bytes.size() || c->type > bytes.size() || c->leap > bytes.size() ||
      c->chars > bytes.size() || c->type == 0 ||
      !in.has(c->time * 9 + c->type * 6 + c->chars + c->leap * 12 + c->isstd + c->isut))
    return std::string("truncated TZif file");
  time_zone zone;
  std::vector<std::int64_t> times(c->time);
  for (auto& t : times)
    t = static_cast<std::int64_t>(in.unsigned_be(8));
  std::vector<std::size_t> types(c->time);
  for (auto& t : types)
    t = in.unsigned_be(1);
  std::vector<std::int32_t> offsets(c->type);
  for (auto& o : offsets) {
    o = static_cast<std::int32_t>(static_cast<std::uint32_t>(in.unsigned_be(4)));
    in.skip(2); // is-DST flag and abbreviation index: not needed for offsets
    if (!is_plausible_offset(o))
      return std::string("UTC offset out of range");
  }
  in.skip(c->chars + c->leap * 12 + c->isstd + c->isut);
  for (std::size_t i = 0; i < times.size(); ++i) {
    if (types[i] >= offsets.size())
      return std::string("transition names a missing type");
    if (i > 0 && times[i] <= times[i - 1])
      return std::string("transitions out of order");
  }
  zone.transitions_ = std::move(times);
  for (auto t : types)
    zone.offset_after_.push_back(offsets[t]);
  zone.offset_before_first_ = offsets[0];
  const std::string_view footer = in.rest();
  if (footer.size() >= 2 && footer.front() == '\n') {
    const std::string_view tz = footer.substr(1, footer.find('\n', 1) - 1);
    if (!tz.empty()) {
      auto r = posix_rule(tz);
      if (!r)
        return std::string("unreadable rule \"" + std::string(tz) + "\"");
      zone.rule_ = *r;
      zone.has_rule_ = true;
    }
  }
  return zone;
}

time_zone time_zone::fixed(std::chrono::seconds offset) {
  time_zone zone;
  zone.offset_before_first_ = static_cast<std::int32_t>(offset.count());
  return zone;
}

std::int32_t time_zone::rule_offset_at(std::int64_t utc) const {
  if (!rule_.has_dst)
    return rule_.std_offset;
  const std::int64_t year =
      civil_from_days(floor_div(utc + rule_.std_offset, seconds_per_day)).year;
  const std::int64_t starts =
      day_of(rule_.start, year) * seconds_per_day + rule_.start.time - rule_.std_offset;
  const std::int64_t ends =
      day_of(rule_.end, year) * seconds_per_day + rule_.end.time - rule_.dst_offset;
  const bool in_dst = starts < ends ? (utc >= starts && utc < ends)  // northern hemisphere
                                    : (utc < ends || utc >= starts); // southern
  return in_dst ? rule_.dst_offset : rule_.std_offset;
}

std::int32_t time_zone::offset_at_seconds(std::int64_t utc) const {
  const auto after = std::upper_bound(transitions_.begin(), transitions_.end(), utc);
  if (after == transitions_.begin())
    return transitions_.empty() && has_rule_ ? rule_offset_at(utc) : offset_before_first_;
  if (after == transitions_.end() && has_rule_)
    return rule_offset_at(utc);
  return offset_after_[static_cast<std::size_t>(after - transitions_.begin()) - 1];
}

std::chrono::seconds time_zone::utc_offset_at(timestamp at) const {
  return std::chrono::seconds{
      offset_at_seconds(std::chrono::floor<std::chrono::seconds>(at.time_since_epoch()).count())};
}

local_seconds time_zone::to_local(timestamp at) const {
  const std::int64_t utc = std::chrono::floor<std::chrono::seconds>(at.time_since_epoch()).count();
  return utc + offset_at_seconds(utc);
}

timestamp time_zone::from_local(local_seconds local, occurrence which) const {
  // Offsets stay within ±26 h, so every instant showing `local` lies within 100,000 s of it.
  const std::int32_t earlier = offset_at_seconds(local - 100'000);
  const std::int32_t later = offset_at_seconds(local + 100'000);
  std::optional<std::int64_t> found;
  for (std::int32_t offset : {earlier, later}) {
    const std::int64_t utc = local - offset;
    if (offset_at_seconds(utc) == offset &&
        (!found || (which == occurrence::earlier ? utc < *found : utc > *found)))
      found = utc;
  }
  if (!found) { // a gap: the first instant whose wall clock is past `local`
    std::int64_t low = local - std::max(earlier, later);
    std::int64_t high = local - std::min(earlier, later);
    while (low < high) {
      const std::int64_t mid = low + (high - low) / 2;
      if (mid + offset_at_seconds(mid) >= local)
        high = mid;
      else
        low = mid + 1;
    }
    found = low;
  }
  return timestamp{std::chrono::seconds{*found}};
}

} // namespace herald::domain
