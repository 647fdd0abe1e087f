// A configuration herald cannot run with stops the binary before anything starts: exit code
// 2 and one line on stderr, `herald: config error: FILE: key: reason` (design.md §8). A port
// in use is exit code 1 with its one line, before herald opens or logs anything.

#include "support/herald_process.hpp"
#include "support/jws_test_keys.hpp"

#include <filesystem>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;

namespace {

/// Runs `herald migrate` (it loads and validates the configuration, then exits) with
/// `config_text` as its --config file; `path` receives the file's name.
run_result migrate_with(const temp_dir& dir, const std::string& config_text, std::string& path) {
  path = dir.file("herald.json");
  write_file(path, config_text);
  return run_herald({"migrate", "--config", path, "--db", "sqlite:" + dir.file("herald.db")});
}

} // namespace

BOOST_AUTO_TEST_SUITE(config_error_tests)

BOOST_AUTO_TEST_CASE(huge_retry_delay_is_refused_at_load) {
  // 9e18 ms used to pass and overflow `now + delay` on the first retry.
  temp_dir dir("herald-e2e-config");
  std::string path;
  const auto run = migrate_with(
      dir, R"({"channels":[{"name":"sms","retry":{"schedule_ms":[9000000000000000000]}}]})", path);
  BOOST_TEST(run.exit_code == 2);
  BOOST_TEST(run.err == "herald: config error: " + path +
                            ": channels[0].retry.schedule_ms: must be between 1 and 604800000\n");
}

BOOST_AUTO_TEST_CASE(whole_config_problems_name_the_file) {
  temp_dir dir("herald-e2e-config");
  std::string path;
  const auto run = migrate_with(dir, R"({"channels":[]})", path);
  BOOST_TEST(run.exit_code == 2);
  BOOST_TEST(run.err ==
             "herald: config error: " + path + ": channels: at least one channel is needed\n");
}

BOOST_AUTO_TEST_CASE(a_broken_template_is_refused_with_its_position) {
  temp_dir dir("herald-e2e-config");
  std::string path;
  const auto run = migrate_with(
      dir,
      R"({"channels":[{"name":"sms"}],"templates":{"code":{"title":"","body":"Code: ${code"}}})",
      path);
  BOOST_TEST(run.exit_code == 2);
  BOOST_TEST(run.err == "herald: config error: " + path +
                            R"(: templates.code.body: character 7: "${" is not closed by "}" )"
                            R"((write "$${" for a literal "${")
)");
}

BOOST_AUTO_TEST_CASE(unreadable_file_is_named) {
  temp_dir dir("herald-e2e-config");
  const auto run = run_herald({"serve", "--config", dir.file("absent.json")});
  BOOST_TEST(run.exit_code == 2);
  BOOST_TEST(run.err ==
             "herald: config error: " + dir.file("absent.json") + ": cannot read the file\n");
}

BOOST_AUTO_TEST_CASE(a_malformed_service_account_stops_herald_in_one_line) {
  temp_dir dir("herald-e2e-config");
  const auto key_file = dir.file("service-account.json");
  auto file = service_account_file(shared_rsa_key(), "https://oauth2.example/token");
  file.replace(file.find("\"client_email\""), 1, "\"x"); // "client_email" missing
  write_file(key_file, file);
  std::string path;
  const auto run = migrate_with(
      dir,
      R"({"channels":[{"name":"app","type":"fcm","service_account_file":")" + key_file + "\"}]}",
      path);
  BOOST_TEST(run.exit_code == 2);
  BOOST_TEST(run.err == "herald: config error: " + path +
                            ": channels[0]: fcm service account: client_email is missing\n");
}

BOOST_AUTO_TEST_CASE(a_bad_sqlite_synchronous_stops_herald_in_one_line) {
  temp_dir dir("herald-e2e-config");
  std::string path;
  const auto run =
      migrate_with(dir, R"({"channels":[{"name":"sms"}],"sqlite":{"synchronous":"off"}})", path);
  BOOST_TEST(run.exit_code == 2);
  BOOST_TEST(run.err ==
             "herald: config error: " + path + ": sqlite.synchronous: must be full or normal\n");
}

BOOST_AUTO_TEST_CASE(a_port_in_use_stops_herald_with_one_line_and_nothing_opened) {
  namespace asio = boost::asio;
  temp_dir dir("herald-e2e-config");
  for (const bool metrics_port : {false, true}) {
    asio::io_context io;
    asio::ip::tcp::acceptor taken{io, {asio::ip::make_address("127.0.0.1"), 0}};
    const auto address = "127.0.0.1:" + std::to_string(taken.local_endpoint().port());
    const auto database = dir.file(metrics_port ? "metrics.db" : "api.db");
    std::vector<std::string> args{"serve", "--db", "sqlite:" + database};
    if (metrics_port) {
      const auto config = dir.file("metrics.json");
      write_file(config, R"({"channels":[{"name":"sms"}],"metrics_listen":")" + address + "\"}");
      args.insert(args.end(), {"--config", config, "--listen", "127.0.0.1:0"});
    } else {
      args.insert(args.end(), {"--listen", address});
    }
    BOOST_TEST_CONTEXT(address << (metrics_port ? " (metrics_listen)" : " (listen)")) {
      const auto run = run_herald(args);
      BOOST_TEST(run.exit_code == 1);
      BOOST_TEST(run.err ==
                 "herald: cannot listen on " + address + " (bind): Address already in use\n");
      BOOST_TEST(run.out.empty());
      BOOST_TEST(!std::filesystem::exists(database)); // the database was never opened
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
