#include "persistence/connection.hpp"

#include "persistence/sql.hpp"

#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <thread>
#include <unistd.h>

#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

namespace herald::persistence {

namespace {

/// SOCI's SQLite backend reads "key=value" options when the string holds a '='; a plain path
/// is taken whole.
std::string sqlite_connect_string(const std::string& path) {
  if (path.find('=') == std::string::npos)
    return path;
  if (path.find('"') != std::string::npos)
    throw store_error("SQLite path '" + path + "' may not contain both '=' and '\"'");
  return "db=\"" + path + "\"";
}

/// Creates the database file readable and writable by its owner alone, unless it exists:
/// SQLite would create it with the process's umask (0644 as a rule), and it creates the -wal and
/// -shm files with the mode of the database file, so they follow. The file holds recipients,
/// message bodies and API key hashes.
void create_private_file(const std::string& path) {
  if (path == ":memory:")
    return;
  const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    return;
  }
  if (errno != EEXIST)
    throw store_error("cannot create the database file '" + path +
                      "': " + std::error_code(errno, std::generic_category()).message());
}

} // namespace

void configure(soci::session& sql, const database_url& url) {
  if (url.backend == database_url::kind::postgresql) {
    // herald's statements join a batch (json_to_recordset, which the planner always guesses at
    // 100 rows) with tasks by key. With the default cost of a random page (4, for spinning
    // disks) a table of up to ~25k rows looked cheaper to scan whole and hash than to probe
    // 100 times, so every batch read the whole table (perf: hash joins and seq scans were
    // PostgreSQL's top symbols in a load from an empty database). 1.1 is the usual setting
    // for SSDs and cached data; it applies to herald's sessions only.
    sql << "SET random_page_cost = 1.1";
    // A node frozen (SIGSTOP, a VM pause) inside a transaction would hold its row locks for as
    // long as it stays frozen, and every other node's write of those rows would wait with it
    // (seen: a cluster's survivors stalled behind a stopped node's open transaction). herald
    // never waits inside a transaction, so one idle for seconds belongs to a stalled process:
    // PostgreSQL ends it, its locks go, and the node's commit fails and is retried.
    sql << "SET idle_in_transaction_session_timeout = '5s'";
    return;
  }
  // busy_timeout first: switching to WAL needs a lock another connection may hold.
  sql << "PRAGMA busy_timeout = 5000";
  // Switching a fresh file to WAL while other connections open it can be refused at once,
  // without the busy handler (SQLite's deadlock avoidance): seen with six nodes migrating one
  // new file together under load. It is safe to ask again.
  std::string mode;
  for (int attempt = 1;; ++attempt) {
    try {
      sql << "PRAGMA journal_mode = WAL", soci::into(mode);
      break;
    } catch (const soci::soci_error& e) {
      if (attempt == 100 ||
          std::string_view{e.what()}.find("database is locked") == std::string_view::npos)
        throw;
      std::this_thread::sleep_for(std::chrono::milliseconds{20}); // a blocking connect, by design
    }
  }
  // "2xx means committed" must hold through a power loss too; NORMAL is an operator's opt-in.
  sql << (url.sqlite_synchronous == database_url::sqlite_sync::full
              ? "PRAGMA synchronous = FULL"
              : "PRAGMA synchronous = NORMAL");
  sql << "PRAGMA foreign_keys = ON";
}

std::unique_ptr<soci::session> connect(const database_url& url) {
  try {
    std::unique_ptr<soci::session> sql;
    if (url.backend == database_url::kind::sqlite) {
      std::filesystem::path parent = std::filesystem::path(url.sqlite_path).parent_path();
      if (!parent.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(parent, ec);
        if (ec)
          throw store_error("cannot create folder '" + parent.string() + "' for " + url.text +
                            ": " + ec.message());
      }
      create_private_file(url.sqlite_path);
      sql = std::make_unique<soci::session>(soci::sqlite3, sqlite_connect_string(url.sqlite_path));
    } else {
      sql = std::make_unique<soci::session>(soci::postgresql, url.connection_string);
    }
    configure(*sql, url);
    return sql;
  } catch (const soci::soci_error& e) {
    throw store_error("cannot open database " + url.text + ": " + short_message(e.what()));
  }
}

} // namespace herald::persistence
