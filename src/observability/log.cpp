#include "observability/log.hpp"

#include <cstdint>
#include <memory>
#include <random>

#include <spdlog/logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace herald::log {
namespace {

// The level name goes into the payload rather than spdlog's %l, whose names ("warning")
// differ from herald's ("warn").
constexpr const char* pattern = R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ",%v})";

spdlog::level::level_enum to_spdlog(level lvl) {
  switch (lvl) {
  case level::debug:
    return spdlog::level::debug;
  case level::info:
    return spdlog::level::info;
  case level::warn:
    return spdlog::level::warn;
  case level::error:
    return spdlog::level::err;
  }
  return spdlog::level::info;
}

std::string_view name_of(level lvl) {
  switch (lvl) {
  case level::debug:
    return "debug";
  case level::info:
    return "info";
  case level::warn:
    return "warn";
  case level::error:
    return "error";
  }
  return "info";
}

std::shared_ptr<spdlog::logger> make_logger(level min_level, spdlog::sink_ptr sink) {
  auto logger = std::make_shared<spdlog::logger>("herald", std::move(sink));
  logger->set_formatter(std::make_unique<spdlog::pattern_formatter>(
      pattern, spdlog::pattern_time_type::utc, std::string("\n")));
  logger->set_level(to_spdlog(min_level));
  logger->flush_on(spdlog::level::warn);
  return logger;
}

// Swapped atomically by init(); write() takes its own reference, so a concurrent init() never
// pulls the logger from under a writer.
std::shared_ptr<spdlog::logger> current_logger;

std::shared_ptr<spdlog::logger> logger() {
  auto found = std::atomic_load(&current_logger);
  if (found)
    return found;
  // Used before init(): log at info to stderr rather than drop lines.
  auto fresh = make_logger(level::info, std::make_shared<spdlog::sinks::stderr_sink_mt>());
  std::shared_ptr<spdlog::logger> expected;
  if (std::atomic_compare_exchange_strong(&current_logger, &expected, fresh))
    return fresh;
  return expected;
}

// Length of the valid UTF-8 sequence starting at text[i], or 0 if it is not valid.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  std::uint32_t code = 0;
  if (lead < 0x80)
    return 1;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    code = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    code = lead & 0x0f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    code = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size())
    return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80)
      return 0;
    code = (code << 6) | (byte(i + k) & 0x3f);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
  if ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000) || code > 0x10ffff ||
      (code >= 0xd800 && code <= 0xdfff))
    return 0;
  return length;
}

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 0x0f];
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t length = utf8_sequence_length(text, i); length > 0) {
      out.append(text, i, length);
      i += length;
    } else {
      out += "\\ufffd"; // a stray byte would make the whole line unparseable
      ++i;
    }
  }
  out += '"';
}

} // namespace

void init(level min_level) {
  std::atomic_store(&current_logger,
                    make_logger(min_level, std::make_shared<spdlog::sinks::stderr_sink_mt>()));
}

void init_to_stream(level min_level, std::ostream& out) {
  std::atomic_store(&current_logger,
                    make_logger(min_level, std::make_shared<spdlog::sinks::ostream_sink_mt>(
                                               out, /*force_flush=*/true)));
}

bool parse_level(std::string_view text, level& out) {
  for (level candidate : {level::debug, level::info, level::warn, level::error}) {
    if (name_of(candidate) == text) {
      out = candidate;
      return true;
    }
  }
  return false;
}

void write(level lvl, std::string_view event, std::initializer_list<field> fields) {
  const auto sink = logger();
  const auto spd_level = to_spdlog(lvl);
  if (!sink->should_log(spd_level))
    return;
  std::string payload;
  payload.reserve(64 + event.size() + fields.size() * 32);
  payload += R"("level":")";
  payload += name_of(lvl);
  payload += R"(","event":)";
  append_json_string(payload, event);
  for (const field& f : fields) {
    payload += ',';
    append_json_string(payload, f.key);
    payload += ':';
    append_json_string(payload, f.value);
  }
  sink->log(spd_level, spdlog::string_view_t(payload.data(), payload.size()));
}

std::string new_trace_id() {
  thread_local std::mt19937_64 engine{[] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    return std::mt19937_64{seed};
  }()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(32, '0');
  do {
    for (std::size_t half = 0; half < 2; ++half) {
      std::uint64_t bits = engine();
      for (std::size_t i = 0; i < 16; ++i, bits >>= 4)
        out[half * 16 + i] = hex[bits & 0x0f];
    }
  } while (out == std::string(32, '0')); // W3C trace context forbids the all-zero id
  return out;
}

} // namespace herald::log
