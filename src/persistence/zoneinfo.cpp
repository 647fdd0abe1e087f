#include "persistence/zoneinfo.hpp"

#include <fstream>
#include <sstream>
#include <variant>

namespace herald::persistence {

zoneinfo::zoneinfo(std::string root) : root_(std::move(root)) {}

bool zoneinfo::plausible_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '/' || name.back() == '/')
    return false;
  if (name.find("..") != std::string_view::npos || name.find("//") != std::string_view::npos)
    return false;
  if (name.rfind("right/", 0) == 0) // TAI-based: local times would be off by the leap seconds
    return false;
  // Files of the database that are no zone of their own: the host's zone (a user's time would
  // depend on the server) and the database's internals.
  if (name == "localtime" || name == "posixrules" || name == "Factory")
    return false;
  for (char c : name) {
    const bool allowed = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                         (c >= '0' && c <= '9') || c == '/' || c == '_' || c == '-' || c == '+';
    if (!allowed)
      return false;
  }
  return true;
}

std::shared_ptr<const domain::time_zone> zoneinfo::find(const std::string& name) {
  if (!plausible_name(name))
    return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto known = loaded_.find(name); known != loaded_.end())
    return known->second;
  std::ifstream file(root_ + "/" + name, std::ios::binary);
  if (!file)
    return nullptr;
  std::ostringstream bytes;
  bytes << file.rdbuf();
  auto parsed = domain::time_zone::from_tzif(bytes.str());
  if (!std::holds_alternative<domain::time_zone>(parsed))
    return nullptr; // a directory, or a file that is no zone
  auto zone = std::make_shared<const domain::time_zone>(std::get<domain::time_zone>(parsed));
  loaded_.emplace(name, zone);
  return zone;
}

} // namespace herald::persistence
