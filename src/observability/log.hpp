#pragma once

#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>

namespace herald::log {

/// One key/value of a structured log line. Personal data goes in masked (domain/masking.hpp).
struct field {
  std::string_view key;
  std::string value;
};

enum class level { debug, info, warn, error };

/// Sets up the process logger: one JSON object per line on stderr, UTC timestamps.
void init(level min_level);

/// Same, but writes to `out` (which must outlive the logger); lets tests read the lines.
void init_to_stream(level min_level, std::ostream& out);

/// Parses "debug" | "info" | "warn" | "error".
bool parse_level(std::string_view text, level& out);

/// Writes {"ts":…,"level":…,"event":event, key:value…}. Safe from any thread.
void write(level lvl, std::string_view event, std::initializer_list<field> fields);

inline void debug(std::string_view event, std::initializer_list<field> fields = {}) {
  write(level::debug, event, fields);
}
inline void info(std::string_view event, std::initializer_list<field> fields = {}) {
  write(level::info, event, fields);
}
inline void warn(std::string_view event, std::initializer_list<field> fields = {}) {
  write(level::warn, event, fields);
}
inline void error(std::string_view event, std::initializer_list<field> fields = {}) {
  write(level::error, event, fields);
}

/// A fresh random trace id (32 hex characters, W3C trace-context style).
std::string new_trace_id();

} // namespace herald::log
