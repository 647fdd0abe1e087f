#include "observability/log.hpp"

#include <cctype>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

namespace json = boost::json;

namespace {

// Captures log lines for one test, then hands the logger back to stderr.
struct captured_log {
  std::ostringstream out;

  captured_log() { herald::log::init_to_stream(herald::log::level::debug, out); }
  ~captured_log() { herald::log::init(herald::log::level::info); }

  std::vector<std::string> lines() const {
    std::vector<std::string> result;
    std::istringstream in(out.str());
    for (std::string line; std::getline(in, line);)
      result.push_back(line);
    return result;
  }

  // The only line written so far, parsed; fails the test if it is not one JSON object.
  json::object only_object() const {
    const auto all = lines();
    BOOST_REQUIRE_EQUAL(all.size(), 1u);
    json::error_code ec;
    json::value value = json::parse(all.front(), ec);
    BOOST_REQUIRE_MESSAGE(!ec, "not JSON: " << all.front());
    BOOST_REQUIRE(value.is_object());
    return value.as_object();
  }
};

bool is_rfc3339_micros_utc(const std::string& ts) {
  // YYYY-MM-DDTHH:MM:SS.ffffffZ
  if (ts.size() != 27)
    return false;
  const std::string pattern = "dddd-dd-ddTdd:dd:dd.ddddddZ";
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (pattern[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(ts[i])) : ts[i] != pattern[i])
      return false;
  }
  return true;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(log_tests, captured_log)

BOOST_AUTO_TEST_CASE(one_json_object_per_line) {
  herald::log::info("task_sent", {{"channel", "sms"}, {"task_id", "tsk_1"}});
  const std::string line = lines().at(0);
  const json::object object = only_object();
  BOOST_TEST(object.at("level").as_string() == "info");
  BOOST_TEST(object.at("event").as_string() == "task_sent");
  BOOST_TEST(object.at("channel").as_string() == "sms");
  BOOST_TEST(object.at("task_id").as_string() == "tsk_1");
  BOOST_TEST(object.size() == 5u);
  BOOST_TEST(is_rfc3339_micros_utc(std::string(object.at("ts").as_string())), line);
  // Keys in a fixed order, so lines read well with grep too.
  BOOST_TEST(line.find(R"({"ts":")") == 0u);
  BOOST_TEST(
      line.find(R"(,"level":"info","event":"task_sent","channel":"sms","task_id":"tsk_1"})") !=
      std::string::npos);
}

BOOST_AUTO_TEST_CASE(level_names_are_herald_s) {
  herald::log::debug("d");
  herald::log::info("i");
  herald::log::warn("w");
  herald::log::error("e");
  const auto all = lines();
  BOOST_REQUIRE_EQUAL(all.size(), 4u);
  const char* expected[] = {"debug", "info", "warn", "error"};
  for (std::size_t i = 0; i < 4; ++i)
    BOOST_TEST(json::parse(all[i]).as_object().at("level").as_string() == expected[i]);
}

BOOST_AUTO_TEST_CASE(escapes_strings) {
  const std::string nasty =
      std::string("quote\" backslash\\ newline\n tab\t bell\x07 nul") + '\0' + " del\x7f é 漢";
  herald::log::warn("odd \"event\"", {{"value", nasty}, {"key\n", "v"}});
  const std::string line = lines().at(0);
  BOOST_TEST(line.find('\n') == std::string::npos);
  BOOST_TEST(line.find("\\u000a") != std::string::npos);
  BOOST_TEST(line.find("\\u0000") != std::string::npos);
  const json::object object = only_object();
  BOOST_TEST(object.at("event").as_string() == "odd \"event\"");
  BOOST_TEST(std::string(object.at("value").as_string()) == nasty);
  BOOST_TEST(object.at("key\n").as_string() == "v");
}

BOOST_AUTO_TEST_CASE(invalid_utf8_becomes_a_replacement_character) {
  herald::log::info("bytes", {{"value", "a\xff"
                                        "b\xc3"},
                              {"overlong", "\xc0\xaf"}});
  const json::object object = only_object();
  BOOST_TEST(object.at("value").as_string() == "a\xef\xbf\xbd"
                                               "b\xef\xbf\xbd");
  BOOST_TEST(object.at("overlong").as_string() == "\xef\xbf\xbd\xef\xbf\xbd");
}

BOOST_AUTO_TEST_CASE(lines_below_the_level_are_dropped) {
  herald::log::init_to_stream(herald::log::level::warn, out);
  herald::log::debug("hidden");
  herald::log::info("hidden");
  herald::log::warn("shown");
  herald::log::error("shown");
  const auto all = lines();
  BOOST_TEST(all.size() == 2u);
  for (const auto& line : all)
    BOOST_TEST(line.find("hidden") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(parse_level_accepts_the_four_names) {
  herald::log::level parsed = herald::log::level::info;
  BOOST_TEST(herald::log::parse_level("debug", parsed));
  BOOST_TEST((parsed == herald::log::level::debug));
  BOOST_TEST(herald::log::parse_level("warn", parsed));
  BOOST_TEST((parsed == herald::log::level::warn));
  BOOST_TEST(herald::log::parse_level("error", parsed));
  BOOST_TEST((parsed == herald::log::level::error));
  BOOST_TEST(herald::log::parse_level("info", parsed));
  BOOST_TEST((parsed == herald::log::level::info));
  for (const char* bad : {"", "INFO", "warning", "trace", "fatal"}) {
    BOOST_TEST(!herald::log::parse_level(bad, parsed), bad);
    BOOST_TEST((parsed == herald::log::level::info));
  }
}

BOOST_AUTO_TEST_CASE(concurrent_writes_keep_lines_whole) {
  constexpr int threads = 4;
  constexpr int per_thread = 250;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([t] {
      for (int i = 0; i < per_thread; ++i)
        herald::log::info("tick", {{"thread", std::to_string(t)}, {"i", std::to_string(i)}});
    });
  for (auto& worker : workers)
    worker.join();
  const auto all = lines();
  BOOST_REQUIRE_EQUAL(all.size(), static_cast<std::size_t>(threads * per_thread));
  std::set<std::string> seen;
  for (const auto& line : all) {
    json::error_code ec;
    const json::value value = json::parse(line, ec);
    BOOST_REQUIRE_MESSAGE(!ec, line);
    const auto& object = value.as_object();
    seen.insert(std::string(object.at("thread").as_string()) + "/" +
                std::string(object.at("i").as_string()));
  }
  BOOST_TEST(seen.size() == static_cast<std::size_t>(threads * per_thread));
}

BOOST_AUTO_TEST_CASE(trace_ids_are_random_hex) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = herald::log::new_trace_id();
    BOOST_TEST_REQUIRE(id.size() == 32u);
    BOOST_TEST_REQUIRE(id.find_first_not_of("0123456789abcdef") == std::string::npos, id);
    ids.insert(id);
  }
  BOOST_TEST(ids.size() == 1000u);

  // Another thread draws from its own generator, not a copy of this one.
  std::string other;
  std::thread([&other] { other = herald::log::new_trace_id(); }).join();
  BOOST_TEST(ids.count(other) == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
