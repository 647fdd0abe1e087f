// The SQLite database holds recipients, message bodies and key hashes: its file and the -wal and
// -shm files SQLite makes beside it are readable by herald's user alone, whatever the umask. A
// commit is synced (synchronous FULL) unless the configuration opts into NORMAL.
#include "persistence/connection.hpp"
#include "store_backends.hpp"
#include "task_store_contract.hpp"

#include <string>
#include <sys/stat.h>

#include <boost/test/unit_test.hpp>
#include <soci/soci.h>

namespace {

/// The permission bits of `path`, or -1 when it does not exist.
int mode_of(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return -1;
  return static_cast<int>(info.st_mode & 0777);
}

/// Sets the process's umask for one test, restoring the old one after.
class umask_of {
public:
  explicit umask_of(mode_t mask) : old_(::umask(mask)) {}
  ~umask_of() { ::umask(old_); }

private:
  mode_t old_;
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(sqlite_file_tests, herald::test::sqlite_backend)

BOOST_AUTO_TEST_CASE(a_new_database_and_its_wal_and_shm_files_are_0600) {
  const umask_of usual{022};
  auto store = open_store();
  store->claim({herald::test::task_store_contract::make_plan("order-mode", {"sms"})});
  const auto& path = url().sqlite_path;
  for (const auto& file : {path, path + "-wal", path + "-shm"})
    BOOST_TEST(mode_of(file) == 0600, file);
}

BOOST_AUTO_TEST_CASE(commits_are_synced_unless_normal_is_chosen) {
  // PRAGMA synchronous reads 2 for FULL, 1 for NORMAL.
  auto synchronous_of = [](const herald::persistence::database_url& url) {
    auto sql = herald::persistence::connect(url);
    int level = -1;
    *sql << "PRAGMA synchronous", soci::into(level);
    return level;
  };
  auto chosen = url();
  BOOST_TEST(synchronous_of(chosen) == 2);
  chosen.sqlite_synchronous = herald::persistence::database_url::sqlite_sync::normal;
  BOOST_TEST(synchronous_of(chosen) == 1);
}

BOOST_AUTO_TEST_SUITE_END()
