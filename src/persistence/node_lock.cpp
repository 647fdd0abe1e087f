#include "persistence/node_lock.hpp"

#include "persistence/connection.hpp"

#include <cctype>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <soci/soci.h>

namespace herald::persistence {

namespace {

class file_lock final : public node_lock {
public:
  explicit file_lock(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
    held_ = fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
  }
  ~file_lock() override {
    if (fd_ >= 0)
      ::close(fd_);
  }
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;

  bool held() const override { return held_; }
  std::string where() const override { return path_; }

private:
  std::string path_;
  int fd_ = -1;
  bool held_ = false;
};

class advisory_lock final : public node_lock {
public:
  advisory_lock(const database_url& url, const std::string& name) : key_("herald-node:" + name) {
    try {
      session_ = connect(url);
      int taken = 0;
      *session_ << "SELECT CASE WHEN pg_try_advisory_lock(hashtext(:key)) THEN 1 ELSE 0 END",
          soci::use(key_), soci::into(taken);
      held_ = taken == 1;
    } catch (const std::exception& e) {
      problem_ = std::string{": "} + e.what();
    }
  }

  bool held() const override { return held_; }
  std::string where() const override { return "advisory lock hashtext('" + key_ + "')" + problem_; }

private:
  std::string key_;
  std::unique_ptr<soci::session> session_; // the lock lives as long as this connection
  bool held_ = false;
  std::string problem_;
};

std::string file_safe(const std::string& name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '_';
  return out;
}

} // namespace

std::unique_ptr<node_lock> try_lock_node_name(const database_url& url, const std::string& name) {
  if (url.backend == database_url::kind::postgresql)
    return std::make_unique<advisory_lock>(url, name);
  return std::make_unique<file_lock>(url.sqlite_path + ".node-" + file_safe(name) + ".lock");
}

} // namespace herald::persistence
