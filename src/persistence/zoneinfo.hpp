#pragma once

#include "domain/time_zone.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace herald::persistence {

/// The IANA time zones of the system's tz database (Debian's tzdata: /usr/share/zoneinfo),
/// loaded by name on first use and kept. Thread-safe: the stores of several actors share one.
class zoneinfo {
public:
  explicit zoneinfo(std::string root = "/usr/share/zoneinfo");

  /// The zone named `name` ("Europe/Paris", "UTC"); nullptr when the name is not a zone of the
  /// database (or not a name at all: "..", absolute paths and "right/" leap-second zones are
  /// refused without touching the disk).
  std::shared_ptr<const domain::time_zone> find(const std::string& name);

  /// Whether `name` can be a zone name at all (characters, length, no path tricks).
  static bool plausible_name(std::string_view name);

private:
  std::string root_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const domain::time_zone>, std::less<>> loaded_;
};

} // namespace herald::persistence
