// The SQLite database holds recipients, message bodies and key hashes: its file and the -wal and
// -shm files SQLite makes beside it are readable by herald's user alone, whatever the umask. A
// commit is synced (synchronous FULL) unless the configuration opts into NORMAL.
#include "persistence/connection.hpp"
#include "persistence/wal_checkpointer.hpp"
#include "store_backends.hpp"
#include "task_store_contract.hpp"

#include <chrono>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <thread>

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

/// Commits claims of `messages` new messages of three channels each, one claim per message.
void claim_messages(herald::persistence::task_store& store, const std::string& prefix,
                    int messages) {
  for (int i = 0; i < messages; ++i)
    store.claim({herald::test::task_store_contract::make_plan(prefix + std::to_string(i),
                                                              {"sms", "wechat", "app"})});
}

std::uintmax_t size_of(const std::string& path) {
  return std::filesystem::file_size(path);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(sqlite_file_tests, herald::test::sqlite_backend)

// SQLite's own checkpoint runs at 1,000 log pages (4 MiB) in the commit that crosses them; the
// store writer's connection leaves it to the wal_checkpointer, so its log grows past that.
BOOST_AUTO_TEST_CASE(a_writer_that_checkpoints_elsewhere_never_checkpoints_itself) {
  options_.checkpoints_elsewhere = true;
  auto store = open_store();
  const auto& path = url().sqlite_path;
  const auto database_size = size_of(path);
  claim_messages(*store, "order-", 3000);
  BOOST_TEST(size_of(path + "-wal") > 4u * 1024 * 1024);
  BOOST_TEST(size_of(path) == database_size); // nothing copied back yet
}

BOOST_AUTO_TEST_CASE(the_checkpointer_copies_the_log_into_the_database_file) {
  options_.checkpoints_elsewhere = true;
  auto store = open_store();
  const auto& path = url().sqlite_path;
  claim_messages(*store, "order-", 200);
  const auto before = size_of(path);
  std::string failed;
  herald::persistence::wal_checkpointer checkpointer(
      url(), std::chrono::milliseconds{5}, [&](const std::string& error) { failed = error; });
  // Waits for the thread's first checkpoint, bounded.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (checkpointer.checkpoints() == 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  BOOST_REQUIRE(checkpointer.checkpoints() > 0u);
  BOOST_TEST(failed.empty());
  BOOST_TEST(size_of(path) > before);
  // Writes go on beside it, and what they wrote is there: a resubmission is a duplicate.
  claim_messages(*store, "later-", 50);
  const auto again = store->claim(
      {herald::test::task_store_contract::make_plan("later-7", {"sms", "wechat", "app"})});
  BOOST_REQUIRE_EQUAL(again.size(), 1u);
  BOOST_REQUIRE_EQUAL(again[0].tasks.size(), 3u);
  BOOST_TEST(!again[0].tasks[0].created);
}

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
