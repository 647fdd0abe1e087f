#pragma once

// Fixtures giving each integration test its own empty database: a file in a fresh temporary
// folder for SQLite, a freshly created database on the test server for PostgreSQL. Header-only
// because it needs SOCI, which the shared test-support library does not link.

#include "persistence/connection.hpp"
#include "persistence/task_store.hpp"
#include "support/postgres.hpp"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <soci/soci.h>

namespace herald::test {

/// One backend under test; url() is an empty (unmigrated) database of it.
class store_backend {
public:
  virtual ~store_backend() = default;

  const persistence::database_url& url() const { return url_; }

  /// Another empty database on the same backend, removed with the fixture.
  virtual persistence::database_url fresh_database() = 0;

  /// A store on url(), migrated, with the backend's options.
  std::unique_ptr<persistence::task_store> open_store() const {
    return persistence::open_task_store(url_, true, options_);
  }

protected:
  persistence::database_url url_;
  persistence::store_options options_;
};

class sqlite_backend : public store_backend {
public:
  sqlite_backend() {
    std::string pattern = (std::filesystem::temp_directory_path() / "herald-store-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    folder_ = pattern;
    // A nested, not yet existing folder: opening must create it.
    url_ = persistence::parse_database_url("sqlite:" + (folder_ / "var" / "herald.db").string());
  }
  ~sqlite_backend() override {
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }

  persistence::database_url fresh_database() override {
    return persistence::parse_database_url(
        "sqlite:" + (folder_ / ("extra-" + std::to_string(++extra_) + ".db")).string());
  }

private:
  std::filesystem::path folder_;
  int extra_ = 0;
};

class postgres_backend : public store_backend {
public:
  postgres_backend() : server_url_(require_test_postgres_url()) { url_ = fresh_database(); }
  ~postgres_backend() override {
    try {
      auto sql = maintenance();
      for (const auto& name : created_)
        *sql << "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)";
    } catch (const std::exception&) {
      // The server is gone; its throwaway cluster goes with it.
    }
  }

  persistence::database_url fresh_database() override {
    const std::string name = unique_database_name();
    *maintenance() << "CREATE DATABASE " + name;
    created_.push_back(name);
    return persistence::parse_database_url(with_database(server_url_, name));
  }

private:
  std::unique_ptr<soci::session> maintenance() const {
    return persistence::connect(persistence::parse_database_url(server_url_));
  }

  std::string server_url_;
  std::vector<std::string> created_;
};

/// PostgreSQL as the store writers use it: statements planned once (store_options::plans_once).
class postgres_plans_once_backend : public postgres_backend {
public:
  postgres_plans_once_backend() { options_.plans_once = true; }
};

} // namespace herald::test
