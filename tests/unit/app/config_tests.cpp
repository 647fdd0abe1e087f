#include "app/config.hpp"
#include "support/herald_process.hpp"
#include "support/jws_test_keys.hpp"

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald;

namespace {

const std::string webhook_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// The message of the config_error that parsing and validating `text` throws; "" if none.
std::string error_of(const std::string& text) {
  try {
    app::validate(app::parse_config(text));
  } catch (const app::config_error& e) {
    return e.what();
  }
  return "";
}

std::string with_top(const std::string& fields) {
  return R"({"channels":[{"name":"sms"}], )" + fields + "}";
}

std::string with_channel(const std::string& fields) {
  return R"({"channels":[{"name":"sms", )" + fields + "}]}";
}

std::string with_webhook(const std::string& fields) {
  return with_channel(R"("type":"webhook","url":"http://127.0.0.1:9/sms","secret":")" +
                      webhook_secret + R"(","lease_ms":3600000, )" + fields);
}

/// One bounded key: where it sits in a document and the values at and beyond each end.
struct bounded_key {
  std::string path; ///< as error messages name it
  std::function<std::string(const std::string&)> document;
  std::string min, below_min, max, above_max;
};

std::vector<bounded_key> bounded_keys() {
  auto top = [](const std::string& key) {
    return [key](const std::string& v) { return with_top("\"" + key + "\":" + v); };
  };
  auto section = [](const std::string& name, const std::string& key) {
    return [name, key](const std::string& v) {
      return with_top("\"" + name + "\":{\"" + key + "\":" + v + "}");
    };
  };
  auto channel = [](const std::string& key) {
    return [key](const std::string& v) { return with_channel("\"" + key + "\":" + v); };
  };
  auto nested = [](const std::string& name, const std::string& key) {
    return [name, key](const std::string& v) {
      return with_channel("\"" + name + "\":{\"" + key + "\":" + v + "}");
    };
  };
  auto webhook = [](const std::string& key) {
    return [key](const std::string& v) { return with_webhook("\"" + key + "\":" + v); };
  };
  auto schedule = [](const std::string& v) {
    return with_channel(R"("retry":{"schedule_ms":[1000,)" + v + "]}");
  };
  return {
      {"scheduler_threads", top("scheduler_threads"), "1", "0", "64", "65"},
      {"shards", top("shards"), "1", "0", "1024", "1025"},
      {"drain_timeout_ms", top("drain_timeout_ms"), "1", "0", "86400000", "86400001"},
      {"sweep_interval_ms", top("sweep_interval_ms"), "10", "9", "86400000", "86400001"},
      {"http.max_body_bytes", section("http", "max_body_bytes"), "1024", "1023", "67108864",
       "67108865"},
      {"http.max_json_depth", section("http", "max_json_depth"), "1", "0", "1000", "1001"},
      {"http.io_threads", section("http", "io_threads"), "1", "0", "64", "65"},
      {"http.max_in_flight", section("http", "max_in_flight"), "1", "0", "10000000", "10000001"},
      {"ingest.max_in_flight", section("ingest", "max_in_flight"), "1", "0", "10000000",
       "10000001"},
      {"ingest.claim_timeout_ms", section("ingest", "claim_timeout_ms"), "2", "1", "3600000",
       "3600001"},
      {"store.batch_max", section("store", "batch_max"), "1", "0", "100000", "100001"},
      {"channels[0].rate_per_sec", channel("rate_per_sec"), "0.001", "0.0009", "1000000",
       "1000000.5"},
      {"channels[0].burst", channel("burst"), "1", "0.5", "1000000", "1000001"},
      {"channels[0].window", channel("window"), "1", "0", "100000", "100001"},
      {"channels[0].throttle_pause_ms", channel("throttle_pause_ms"), "1", "0", "3600000",
       "3600001"},
      {"channels[0].lease_ms", channel("lease_ms"), "100", "99", "86400000", "86400001"},
      {"channels[0].circuit.failure_threshold", nested("circuit", "failure_threshold"), "1", "0",
       "1000000", "1000001"},
      {"channels[0].circuit.cool_down_ms", nested("circuit", "cool_down_ms"), "1", "0", "86400000",
       "86400001"},
      {"channels[0].retry.schedule_ms", schedule, "1", "0", "604800000", "604800001"},
      {"channels[0].retry.jitter", nested("retry", "jitter"), "0", "-0.1", "0.9", "0.91"},
      {"channels[0].retry.max_attempts", nested("retry", "max_attempts"), "1", "0", "1000", "1001"},
      {"channels[0].status_questions.max", nested("status_questions", "max"), "1", "0", "1000",
       "1001"},
      {"channels[0].status_questions.jitter", nested("status_questions", "jitter"), "0", "-0.1",
       "0.9", "0.91"},
      {"channels[0].latency_ms", channel("latency_ms"), "0", "-1", "600000", "600001"},
      {"channels[0].retryable_failure_rate", channel("retryable_failure_rate"), "0", "-0.01", "1",
       "1.01"},
      {"channels[0].permanent_failure_rate", channel("permanent_failure_rate"), "0", "-0.01", "1",
       "1.01"},
      {"channels[0].seed", channel("seed"), "0", "-1", "9223372036854775807",
       "9223372036854775808"},
      {"channels[0].timeout_ms", webhook("timeout_ms"), "1", "0", "600000", "600001"},
      {"channels[0].max_connections", webhook("max_connections"), "1", "0", "10000", "10001"},
  };
}

} // namespace

BOOST_AUTO_TEST_SUITE(config_tests)

BOOST_AUTO_TEST_CASE(embedded_default_parses_and_validates) {
  const auto cfg = app::parse_config(app::embedded_config_text());
  BOOST_CHECK_NO_THROW(app::validate(cfg));
  BOOST_TEST(cfg.channels.size() == 5u);
  BOOST_TEST(cfg.http.host == "127.0.0.1");
  BOOST_TEST(cfg.http.port == 8080);
  // A first run's inbox fills: the embedded inapp channel is the real inbox.
  BOOST_TEST(cfg.channels.back().settings.name == "inapp");
  BOOST_TEST(cfg.channels.back().type == "inapp");
}

BOOST_AUTO_TEST_CASE(sqlite_is_durable_on_power_loss_unless_told_otherwise) {
  using sync = persistence::database_url::sqlite_sync;
  BOOST_TEST(
      (app::parse_config(with_top(R"("log_level":"info")")).sqlite_synchronous == sync::full));
  BOOST_TEST((app::parse_config(app::embedded_config_text()).sqlite_synchronous == sync::full));
  const auto normal = app::parse_config(with_top(R"("sqlite":{"synchronous":"normal"})"));
  BOOST_TEST((normal.sqlite_synchronous == sync::normal));
  BOOST_TEST((app::database_url_of(normal).sqlite_synchronous == sync::normal));
  BOOST_TEST(error_of(with_top(R"("sqlite":{"synchronous":"off"})")) ==
             "sqlite.synchronous: must be full or normal");
  BOOST_TEST(error_of(with_top(R"("sqlite":{"journal":"wal"})")) == "sqlite.journal: unknown key");
}

BOOST_AUTO_TEST_CASE(every_bound_is_inclusive_and_enforced) {
  for (const auto& key : bounded_keys()) {
    BOOST_TEST(error_of(key.document(key.min)) == "", key.path << " = " << key.min);
    BOOST_TEST(error_of(key.document(key.max)) == "", key.path << " = " << key.max);
    for (const auto& outside : {key.below_min, key.above_max}) {
      const auto error = error_of(key.document(outside));
      BOOST_TEST(error.rfind(key.path + ": must be between ", 0) == 0,
                 key.path << " = " << outside << " gave '" << error << "'");
    }
  }
}

BOOST_AUTO_TEST_CASE(huge_retry_delay_is_refused) {
  // Accepted before: 9e18 ms overflowed `now + delay` (a chrono multiplication, UB).
  BOOST_TEST(error_of(with_channel(R"("retry":{"schedule_ms":[9000000000000000000]})")) ==
             "channels[0].retry.schedule_ms: must be between 1 and 604800000");
  BOOST_TEST(error_of(with_channel(R"("retry":{"schedule_ms":[604800001]})")) ==
             "channels[0].retry.schedule_ms: must be between 1 and 604800000");
  const auto week = app::parse_config(with_channel(R"("retry":{"schedule_ms":[604800000]})"));
  BOOST_TEST(week.channels.at(0).settings.retry.schedule.at(0).count() ==
             domain::max_retry_delay.count());
}

BOOST_AUTO_TEST_CASE(retry_schedule_shape_is_checked) {
  const std::string shape =
      "channels[0].retry.schedule_ms: must be an array of 1 to 100 delays in milliseconds";
  BOOST_TEST(error_of(with_channel(R"("retry":{"schedule_ms":[]})")) == shape);
  BOOST_TEST(error_of(with_channel(R"("retry":{"schedule_ms":1000})")) == shape);
  std::string many = "[1";
  for (int i = 0; i < 100; ++i)
    many += ",1";
  BOOST_TEST(error_of(with_channel(R"("retry":{"schedule_ms":)" + many + "]}")) == shape);
  BOOST_TEST(error_of(with_channel(R"("retry":{"schedule_ms":[1000, 1.5]})")) ==
             "channels[0].retry.schedule_ms: must be an integer");
}

BOOST_AUTO_TEST_CASE(too_large_integers_name_the_range) {
  // Boost.JSON reads these as a double and an unsigned: both are integers, just too large.
  const std::string range = "shards: must be between 1 and 1024";
  BOOST_TEST(error_of(with_top(R"("shards": 99999999999999999999)")) == range);
  BOOST_TEST(error_of(with_top(R"("shards": 18446744073709551615)")) == range);
  BOOST_TEST(error_of(with_top(R"("shards": -99999999999999999999)")) == range);
  BOOST_TEST(error_of(with_top(R"("shards": -1)")) == range);
}

BOOST_AUTO_TEST_CASE(non_integers_are_refused_as_such) {
  BOOST_TEST(error_of(with_top(R"("shards": 2.5)")) == "shards: must be an integer");
  BOOST_TEST(error_of(with_top(R"("shards": "8")")) == "shards: must be an integer");
  BOOST_TEST(error_of(with_top(R"("shards": true)")) == "shards: must be an integer");
  BOOST_TEST(error_of(with_channel(R"("rate_per_sec": "fast")")) ==
             "channels[0].rate_per_sec: must be a number");
  // 1e999 parses as infinity; it is out of range, never "unlimited".
  BOOST_TEST(error_of(with_channel(R"("rate_per_sec": 1e999)")) ==
             "channels[0].rate_per_sec: must be between 0.001 and 1000000");
}

BOOST_AUTO_TEST_CASE(failure_rates_add_up_to_at_most_one) {
  BOOST_TEST(
      error_of(with_channel(R"("retryable_failure_rate":0.5,"permanent_failure_rate":0.5)")) == "");
  BOOST_TEST(
      error_of(with_channel(R"("retryable_failure_rate":0.6,"permanent_failure_rate":0.5)")) ==
      "channels[0]: retryable_failure_rate and permanent_failure_rate must add up to at "
      "most 1");
}

BOOST_AUTO_TEST_CASE(unknown_keys_are_named_with_their_path) {
  BOOST_TEST(error_of(with_top(R"("shard": 8)")) == "shard: unknown key");
  BOOST_TEST(error_of(with_top(R"("http": {"io_thread": 2})")) == "http.io_thread: unknown key");
  BOOST_TEST(error_of(with_channel(R"("rate": 5)")) == "channels[0].rate: unknown key");
  BOOST_TEST(error_of(with_channel(R"("retry": {"delays_ms": [1]})")) ==
             "channels[0].retry.delays_ms: unknown key");
  BOOST_TEST(error_of(with_channel(R"("circuit": {"threshold": 1})")) ==
             "channels[0].circuit.threshold: unknown key");
  // A webhook key on a simulated channel is a mistake, not something to ignore.
  BOOST_TEST(error_of(with_channel(R"("url": "http://127.0.0.1:9/x")")) ==
             "channels[0].url: unknown key");
}

BOOST_AUTO_TEST_CASE(a_section_of_the_wrong_type_is_named_plainly) {
  BOOST_TEST(error_of(with_top(R"("http": [])")) == "http: must be an object");
  BOOST_TEST(error_of(with_channel(R"("circuit": 3)")) == "channels[0].circuit: must be an object");
}

BOOST_AUTO_TEST_CASE(a_key_given_twice_is_refused) {
  BOOST_TEST(error_of(with_top(R"("shards": 2, "shards": 4)")) == "shards: given twice");
  BOOST_TEST(error_of(with_channel(R"("window": 2, "window": 4)")) ==
             "channels[0].window: given twice");
}

BOOST_AUTO_TEST_CASE(a_node_id_cannot_pass_for_another_nodes_process) {
  BOOST_TEST(error_of(with_top(R"("node_id": "eu/2")")).rfind("node_id: ", 0) == 0u);
  BOOST_TEST(error_of(with_top(R"("node_id": "eu-2")")) == "");
}

BOOST_AUTO_TEST_CASE(a_broken_template_is_refused_with_its_position) {
  BOOST_TEST(
      error_of(with_top(R"("templates": {"t": {"title": "Hi", "body": "Code ${code"}})")) ==
      R"(templates.t.body: character 6: "${" is not closed by "}" (write "$${" for a literal "${"))");
  BOOST_TEST(
      error_of(with_top(R"("templates": {"t": {"title": "${a b}", "body": "x"}})")) ==
      R"(templates.t.title: character 4: a parameter name may only contain A-Z a-z 0-9 _ . - (in "${a b}"))");
  BOOST_TEST(
      error_of(with_top(
          R"("templates": {"t": {"title": "${a}", "body": "{{ b }} $${c} {{ not a name }}"}})")) ==
      "");
}

BOOST_AUTO_TEST_CASE(a_route_is_its_channels_or_an_object_with_defaults) {
  const auto cfg = app::parse_config(with_top(
      R"("templates": {"code": {"title": "", "body": "Your code is ${code}"}},)"
      R"("routes": {"A": ["sms"], "LOGIN_CODE": {"channels": ["sms"], "category": "verification",)"
      R"( "priority": "high", "template": "code"}})"));
  app::validate(cfg);
  BOOST_TEST((cfg.rules.routes.at("A").channels == std::vector<std::string>{"sms"}));
  BOOST_TEST(!cfg.rules.routes.at("A").category.has_value());
  const auto& login = cfg.rules.routes.at("LOGIN_CODE");
  BOOST_TEST((login.category == domain::category::verification));
  BOOST_TEST((login.priority == domain::priority::high));
  BOOST_TEST(login.template_name == "code");

  BOOST_TEST(error_of(with_top(R"("routes": {"B": {"channels": ["sms"], "category": "spam"}})")) ==
             "routes.B.category: must be one of verification, transactional, marketing, system");
  BOOST_TEST(error_of(with_top(R"("routes": {"B": {"channels": ["sms"], "template": "nope"}})")) ==
             "routes.B.template: unknown template 'nope'");
  BOOST_TEST(error_of(with_top(R"("routes": {"B": {"channels": ["sms"], "template": ""}})")) ==
             "routes.B.template: must name a template (leave the key out for none)");
  BOOST_TEST(error_of(with_top(R"("routes": {"B": {"category": "marketing"}})")) ==
             "routes.B: must name at least one channel");
  BOOST_TEST(error_of(with_top(R"("routes": {"B": {"channels": ["sms"], "cost": 3}})")) ==
             "routes.B.cost: unknown key");
  BOOST_TEST(error_of(with_top(R"("routes": {"B": "sms"})")) ==
             "routes.B: must be an array of channels or an object");
}

BOOST_AUTO_TEST_CASE(a_routes_escalation_is_read_and_checked) {
  const auto two = [](const std::string& route) {
    return R"({"channels":[{"name":"inapp","type":"inapp"},{"name":"sms"},{"name":"mail"}],)"
           R"("routes": {"R": )" +
           route + "}}";
  };
  const auto cfg = app::parse_config(
      two(R"({"channels": ["inapp"], "escalation": [{"channel": "sms", "after_ms": 300000},)"
          R"( {"channel": "mail", "after_ms": 3600000}]})"));
  app::validate(cfg);
  const auto& steps = cfg.rules.routes.at("R").escalation;
  BOOST_REQUIRE_EQUAL(steps.size(), 2U);
  BOOST_TEST(steps.at(0).channel == "sms");
  BOOST_TEST(steps.at(0).after.count() == 300000);
  BOOST_TEST(steps.at(1).after.count() == 3600000);

  const std::vector<std::pair<std::string, std::string>> refused{
      {two(R"({"channels": ["inapp"], "escalation": []})"),
       "routes.R.escalation: must be a non-empty array of {channel, after_ms} steps"},
      {two(R"({"channels": ["inapp"], "escalation": [{"channel": "fax", "after_ms": 1}]})"),
       "routes.R.escalation[0].channel: unknown channel 'fax'"},
      {two(R"({"channels": ["inapp"], "escalation": [{"channel": "inapp", "after_ms": 1}]})"),
       "routes.R.escalation[0].channel: 'inapp' is already one of the route's channels"},
      {two(R"({"channels": ["inapp"], "escalation": [{"channel": "sms", "after_ms": 1},)"
           R"( {"channel": "sms", "after_ms": 2}]})"),
       "routes.R.escalation[1].channel: 'sms' is already an earlier step"},
      {two(R"({"channels": ["inapp"], "escalation": [{"channel": "sms"}]})"),
       "routes.R.escalation[0].after_ms: is required"},
      {two(R"({"channels": ["inapp"], "escalation": [{"after_ms": 5}]})"),
       "routes.R.escalation[0].channel: is required"},
      {two(R"({"channels": ["inapp"], "escalation": [{"channel": "sms", "after_ms": 0}]})"),
       "routes.R.escalation[0].after_ms: must be between 1 and 2592000000"},
      {two(R"({"channels": ["inapp"], "escalation": [{"channel": "sms", "after_ms": 50},)"
           R"( {"channel": "mail", "after_ms": 50}]})"),
       "routes.R.escalation[1].after_ms: must be later than the step before"},
      {two(R"({"channels": ["inapp"], "escalation": [{"channel": "sms", "after_ms": 5,)"
           R"( "when": "unread"}]})"),
       "routes.R.escalation[0].when: unknown key"},
  };
  for (const auto& [text, message] : refused)
    BOOST_TEST(error_of(text) == message, text);
}

BOOST_AUTO_TEST_CASE(the_policy_section_is_read_and_checked) {
  const auto cfg = app::parse_config(with_top(
      R"("policy": {"quiet_hours": {"start": "21:30", "end": "07:00", "categories": ["marketing",)"
      R"( "system"]}, "default_time_zone": "Asia/Shanghai", "frequency_caps": [{"category":)"
      R"( "marketing", "channel": "sms", "per": "day", "limit": 3}]},)"
      R"("routes": {"P": {"channels": ["sms"], "quiet_hours": "drop", "over_cap": "defer"}})"));
  app::validate(cfg);
  BOOST_TEST(cfg.policy.quiet_hours.start.count() == 21 * 60 + 30);
  BOOST_TEST(cfg.policy.quiet_hours.end.count() == 7 * 60);
  BOOST_TEST(cfg.policy.quiet_categories.size() == 2U);
  BOOST_TEST(cfg.policy.caps.at(0).counter() == "marketing/sms/day");
  BOOST_TEST((cfg.rules.routes.at("P").in_quiet_hours == domain::when_held::drop));
  BOOST_TEST((cfg.rules.routes.at("P").over_cap == domain::when_held::defer));

  const auto policy = [](const std::string& fields) {
    return with_top(R"("policy": {)" + fields + "}");
  };
  const std::vector<std::pair<std::string, std::string>> refused{
      {policy(R"("quiet_hours": {"start": "24:00"})"),
       "policy.quiet_hours.start: must be a time of day from 00:00 to 23:59"},
      {policy(R"("quiet_hours": {"end": "8:00"})"),
       R"(policy.quiet_hours.end: must be a time of day "HH:MM")"},
      {policy(R"("quiet_hours": {"categories": ["verification"]})"),
       "policy.quiet_hours.categories: verification codes are never held by quiet hours"},
      {policy(R"("default_time_zone": "Mars/Olympus")"),
       "policy.default_time_zone: unknown time zone 'Mars/Olympus' (an IANA name such as "
       "Asia/Shanghai)"},
      {policy(R"("frequency_caps": [{"category": "marketing", "per": "week", "limit": 3}])"),
       "policy.frequency_caps[0].per: must be hour or day"},
      {policy(R"("frequency_caps": [{"category": "marketing", "per": "day", "limit": 0}])"),
       "policy.frequency_caps[0].limit: must be between 1 and 1000000"},
      {policy(R"("frequency_caps": [{"category": "marketing", "per": "day"}])"),
       "policy.frequency_caps[0].limit: is required"},
      {policy(R"("frequency_caps": [{"category": "marketing", "channel": "fax", "per": "day",)"
              R"( "limit": 1}])"),
       "policy.frequency_caps[0].channel: unknown channel 'fax'"},
      {policy(R"("frequency_caps": [{"category": "marketing", "per": "day", "limit": 1},)"
              R"( {"category": "marketing", "per": "day", "limit": 2}])"),
       "policy.frequency_caps[1]: a second cap on marketing/day"},
      {policy(R"("quiet_hours": {"start": ""})"),
       R"(policy.quiet_hours.start: must be a time of day "HH:MM")"},
      {policy(R"("frequency_caps": [{"category": "marketing", "channel": "", "per": "day",)"
              R"( "limit": 1}])"),
       "policy.frequency_caps[0].channel: must name a channel (leave the key out to count every "
       "channel)"},
      {policy(R"("default_time_zone": "localtime")"),
       "policy.default_time_zone: unknown time zone 'localtime' (an IANA name such as "
       "Asia/Shanghai)"},
      {with_top(R"("routes": {"P": {"channels": ["sms"], "quiet_hours": "later"}})"),
       "routes.P.quiet_hours: must be one of defer, drop"},
  };
  for (const auto& [text, message] : refused)
    BOOST_TEST(error_of(text) == message);
}

BOOST_AUTO_TEST_CASE(errors_stay_on_one_line) {
  const auto error = error_of(with_top(R"("sha\nrds": 8)"));
  BOOST_TEST(error == "sha?rds: unknown key");
}

BOOST_AUTO_TEST_CASE(file_name_comes_first_in_every_error) {
  test::temp_dir dir{"herald-config"};
  const auto path = dir.file("herald.json");

  test::write_file(path, with_top(R"("shards": 0)"));
  BOOST_CHECK_EXCEPTION(
      app::load_config_file(path), app::config_error, [&](const app::config_error& e) {
        return std::string{e.what()} == path + ": shards: must be between 1 and 1024";
      });

  test::write_file(path, "{ not json");
  BOOST_CHECK_EXCEPTION(
      app::load_config_file(path), app::config_error,
      [&](const app::config_error& e) { return std::string{e.what()}.rfind(path + ": ", 0) == 0; });

  BOOST_CHECK_EXCEPTION(app::load_config_file(dir.file("missing.json")), app::config_error,
                        [&](const app::config_error& e) {
                          return std::string{e.what()} ==
                                 dir.file("missing.json") + ": cannot read the file";
                        });

  // Problems only the whole configuration shows (validate()) name the file too.
  test::write_file(path, R"({"channels": []})");
  const auto cfg = app::load_config_file(path);
  BOOST_CHECK_EXCEPTION(
      app::validate(cfg, path), app::config_error, [&](const app::config_error& e) {
        return std::string{e.what()} == path + ": channels: at least one channel is needed";
      });
}

BOOST_AUTO_TEST_CASE(webhook_credentials_are_not_echoed) {
  const auto error =
      error_of(with_channel(R"("type":"webhook","secret":")" + webhook_secret +
                            R"(","url":"https://alice:hunter2@/hook?token=s3cr3t")"));
  BOOST_TEST(!error.empty());
  BOOST_TEST(error.find("hunter2") == std::string::npos, error);
  BOOST_TEST(error.find("s3cr3t") == std::string::npos, error);
  BOOST_TEST(error.find("channels[0]") == 0u, error);
}

std::string with_wechat(const std::string& fields) {
  return with_channel(R"("type":"wechat_template","appid":"wx1","template_id":"tpl",)"
                      R"("body_field":"keyword1",)" +
                      fields);
}

BOOST_AUTO_TEST_CASE(every_secret_has_an_env_form) {
  ::setenv("HERALD_TEST_HOOK_SECRET", webhook_secret.c_str(), 1);
  ::setenv("HERALD_TEST_RECEIPT_SECRET", "whsec_cmVjZWlwdHMtc2VjcmV0", 1);
  ::setenv("HERALD_TEST_EVENTS_SECRET", "whsec_ZXZlbnRzLXNlY3JldA==\n", 1);
  ::setenv("HERALD_TEST_DATABASE", "postgresql://herald:pw@127.0.0.1:5432/herald", 1);
  const auto cfg = app::parse_config(
      R"({"database_env":"HERALD_TEST_DATABASE",)"
      R"("events":{"url":"http://127.0.0.1:9/events","secret_env":"HERALD_TEST_EVENTS_SECRET"},)"
      R"("channels":[{"name":"hook","type":"webhook","url":"http://127.0.0.1:9/hook",)"
      R"("secret_env":"HERALD_TEST_HOOK_SECRET","receipt_secret_env":"HERALD_TEST_RECEIPT_SECRET",)"
      R"("lease_ms":3600000}]})");
  app::validate(cfg);
  BOOST_TEST(cfg.database == "postgresql://herald:pw@127.0.0.1:5432/herald");
  BOOST_TEST(cfg.events.secret == "whsec_ZXZlbnRzLXNlY3JldA=="); // a mounted file's line break
  BOOST_TEST(cfg.channels[0].webhook.secret == webhook_secret);
  BOOST_TEST(cfg.channels[0].webhook.receipt_secret == "whsec_cmVjZWlwdHMtc2VjcmV0");
}

BOOST_AUTO_TEST_CASE(a_secret_env_naming_an_unset_variable_is_one_line) {
  ::unsetenv("HERALD_TEST_UNSET_SECRET");
  ::setenv("HERALD_TEST_DATABASE", "sqlite:x.db", 1);
  const std::string unset = "environment variable HERALD_TEST_UNSET_SECRET is not set";
  BOOST_TEST(error_of(with_top(R"("database_env":"HERALD_TEST_UNSET_SECRET")")) ==
             "database_env: " + unset);
  BOOST_TEST(
      error_of(with_top(R"("database":"sqlite:x.db","database_env":"HERALD_TEST_DATABASE")")) ==
      "database_env: give database or database_env, not both");
  BOOST_TEST(error_of(with_top(R"("events":{"url":"http://127.0.0.1:9/e",)"
                               R"("secret_env":"HERALD_TEST_UNSET_SECRET"})")) ==
             "events.secret_env: " + unset);
  BOOST_TEST(error_of(with_channel(R"("type":"webhook","url":"http://127.0.0.1:9/hook",)"
                                   R"("secret_env":"HERALD_TEST_UNSET_SECRET")")) ==
             "channels[0].secret_env: " + unset);
  BOOST_TEST(error_of(with_webhook(R"("receipt_secret_env":"HERALD_TEST_UNSET_SECRET")")) ==
             "channels[0].receipt_secret_env: " + unset);
}

BOOST_AUTO_TEST_CASE(a_wechat_channel_takes_its_secrets_from_the_environment) {
  ::setenv("HERALD_TEST_WECHAT_SECRET", "s3cr3t-from-env", 1);
  const auto cfg = app::parse_config(
      with_wechat(R"("app_secret_env":"HERALD_TEST_WECHAT_SECRET","callback_token":"tok")"));
  app::validate(cfg);
  BOOST_TEST(cfg.channels[0].wechat.app_secret == "s3cr3t-from-env");
  ::setenv("HERALD_TEST_WECHAT_SECRET", "mounted\n", 1); // a secret file's final line break
  BOOST_TEST(app::parse_config(with_wechat(R"("app_secret_env":"HERALD_TEST_WECHAT_SECRET")"))
                 .channels[0]
                 .wechat.app_secret == "mounted");
  BOOST_TEST(cfg.channels[0].wechat.callback_token == "tok");
  BOOST_TEST(cfg.channels[0].wechat.base_url == "https://api.weixin.qq.com");
  BOOST_TEST(cfg.channels[0].wechat.quota_pause.count() == 600000);
}

BOOST_AUTO_TEST_CASE(wechat_configuration_errors_are_one_line_naming_the_field) {
  ::unsetenv("HERALD_TEST_UNSET_SECRET");
  BOOST_TEST(error_of(with_wechat(R"("app_secret_env":"HERALD_TEST_UNSET_SECRET")")) ==
             "channels[0].app_secret_env: environment variable HERALD_TEST_UNSET_SECRET is not "
             "set");
  BOOST_TEST(error_of(with_wechat("")).find("app_secret is required") != std::string::npos);
  ::setenv("HERALD_TEST_WECHAT_SECRET", "x", 1);
  BOOST_TEST(
      error_of(with_wechat(R"("app_secret":"a","app_secret_env":"HERALD_TEST_WECHAT_SECRET")")) ==
      "channels[0].app_secret_env: give app_secret or app_secret_env, not both");
  BOOST_TEST(error_of(with_wechat(R"("app_secret":"a","timeout_ms":20000,"lease_ms":60000)"))
                 .find("lease_ms: must be longer than the provider call's timeout (80000 ms)") !=
             std::string::npos);
  BOOST_TEST(error_of(with_channel(R"("type":"carrier_pigeon")"))
                 .find("(supported: simulated, webhook, wechat_template, sms_twilio, fcm, "
                       "apns, smtp, inapp)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(provider_credentials_never_travel_in_clear_off_this_machine) {
  BOOST_TEST(error_of(with_wechat(R"("app_secret":"a","base_url":"http://api.weixin.qq.com")")) ==
             "channels[0].base_url: must be https:// (http:// only on loopback): the channel's "
             "credentials travel with every call");
  BOOST_TEST(error_of(with_wechat(R"("app_secret":"a","base_url":"http://127.0.0.1:9300")")) == "");
  BOOST_TEST(error_of(with_wechat(R"("app_secret":"a","base_url":"http://[::1]:9300/")")) == "");
  BOOST_TEST(error_of(with_wechat(R"("app_secret":"a","base_url":"http://localhost")")) == "");
}

BOOST_AUTO_TEST_CASE(one_channel_takes_the_pushes_of_an_appid) {
  const auto channel = [](const std::string& name) {
    return R"({"name":")" + name +
           R"(","type":"wechat_template","appid":"wx1","app_secret":"s","template_id":"t",)"
           R"("body_field":"b","callback_token":"tok"})";
  };
  const auto error = error_of(R"({"channels":[)" + channel("wx-a") + "," + channel("wx-b") + "]}");
  BOOST_TEST(error.find("channel 'wx-a' takes its pushes already") != std::string::npos, error);
}

BOOST_AUTO_TEST_CASE(channels_of_one_appid_must_share_its_secret) {
  const auto two = [](const std::string& second_secret) {
    return R"({"channels":[)"
           R"({"name":"wx-a","type":"wechat_template","appid":"wx1","app_secret":"one",)"
           R"("template_id":"t","body_field":"b"},)"
           R"({"name":"wx-b","type":"wechat_template","appid":"wx1","app_secret":")" +
           second_secret + R"(","template_id":"t2","body_field":"b"}]})";
  };
  BOOST_TEST(error_of(two("one")) == "");
  const auto error = error_of(two("two"));
  BOOST_TEST(error.find("appid wx1 is configured with another app_secret") != std::string::npos,
             error);
  BOOST_TEST(error.find("\"two\"") == std::string::npos, error); // the secret is not quoted
}

// "https://api.weixin.qq.com" and "https://api.weixin.qq.com/" are the same API: channels of one
// appid on them are one account (one token), so they too must share the secret.
BOOST_AUTO_TEST_CASE(a_trailing_slash_on_base_url_does_not_make_another_account) {
  const auto two = [](const std::string& second_secret) {
    return R"({"channels":[)"
           R"({"name":"wx-a","type":"wechat_template","appid":"wx1","app_secret":"one",)"
           R"("template_id":"t","body_field":"b"},)"
           R"({"name":"wx-b","type":"wechat_template","appid":"wx1","app_secret":")" +
           second_secret +
           R"(","base_url":"https://api.weixin.qq.com/","template_id":"t2","body_field":"b"}]})";
  };
  BOOST_TEST(error_of(two("one")) == "");
  BOOST_TEST(error_of(two("two")).find("appid wx1 is configured with another app_secret") !=
             std::string::npos);
}

/// A folder holding a Google service-account key file and an APNs .p8 key for the push cases.
struct push_credentials {
  test::temp_dir dir{"herald-config-push"};
  std::string service_account = dir.file("service-account.json");
  std::string apns_key = dir.file("AuthKey_FAKEKEY001.p8");
  std::string apns_pem = test::private_key_pem(ec_key());

  push_credentials() {
    test::write_file(service_account, test::service_account_file(test::shared_rsa_key(),
                                                                 "https://oauth2.example/token"));
    test::write_file(apns_key, apns_pem);
  }
  static EVP_PKEY* ec_key() {
    static const auto key = test::generate_ec_key("P-256");
    return key.get();
  }
  std::string fcm(const std::string& fields = "") const {
    return with_channel(R"("type":"fcm","service_account_file":")" + service_account + "\"" +
                        fields);
  }
  std::string apns(const std::string& fields = "") const {
    return with_channel(R"("type":"apns","key_file":")" + apns_key +
                        R"(","key_id":"FAKEKEY001","team_id":"FAKETEAM01",)"
                        R"("topic":"org.herald.app")" +
                        fields);
  }
};

BOOST_AUTO_TEST_CASE(an_fcm_channel_reads_its_service_account_from_a_file_or_the_environment) {
  push_credentials files;
  auto cfg = app::parse_config(files.fcm(R"(,"timeout_ms":3000,"max_connections":4)"));
  app::validate(cfg);
  const auto& fcm = cfg.channels[0].fcm;
  BOOST_TEST(fcm.service_account_json == test::read_file(files.service_account));
  BOOST_TEST(fcm.base_url == "https://fcm.googleapis.com");
  BOOST_TEST(fcm.project_id.empty()); // the service account's
  BOOST_TEST(fcm.timeout.count() == 3000);
  BOOST_TEST(fcm.max_connections == 4u);

  ::setenv("HERALD_TEST_FCM_ACCOUNT", test::read_file(files.service_account).c_str(), 1);
  cfg = app::parse_config(with_channel(
      R"("type":"fcm","service_account_json_env":"HERALD_TEST_FCM_ACCOUNT","project_id":"p2")"));
  app::validate(cfg);
  BOOST_TEST(cfg.channels[0].fcm.service_account_json == test::read_file(files.service_account));
  BOOST_TEST(cfg.channels[0].fcm.project_id == "p2");
}

BOOST_AUTO_TEST_CASE(fcm_configuration_errors_are_one_line_naming_the_field) {
  push_credentials files;
  BOOST_TEST(error_of(with_channel(R"("type":"fcm")")) ==
             "channels[0]: fcm service account is required (service_account_file or "
             "service_account_json_env)");
  BOOST_TEST(
      error_of(with_channel(R"("type":"fcm","service_account_file":"/nonexistent/sa.json")")) ==
      "channels[0].service_account_file: cannot read the file /nonexistent/sa.json");
  ::setenv("HERALD_TEST_FCM_ACCOUNT", "{}", 1);
  BOOST_TEST(error_of(files.fcm(R"(,"service_account_json_env":"HERALD_TEST_FCM_ACCOUNT")")) ==
             "channels[0].service_account_json_env: give service_account_file or "
             "service_account_json_env, not both");
  BOOST_TEST(error_of(files.fcm(R"(,"timeout_ms":20000,"lease_ms":60000)"))
                 .find("lease_ms: must be longer than the provider call's timeout (80000 ms)") !=
             std::string::npos);

  // A malformed key file: a field missing, a key that is none. One line, never the key.
  auto file = boost::json::parse(test::read_file(files.service_account)).as_object();
  file.erase("client_email");
  test::write_file(files.service_account, boost::json::serialize(file));
  BOOST_TEST(error_of(files.fcm()) == "channels[0]: fcm service account: client_email is missing");
  const auto pem = test::private_key_pem(test::shared_rsa_key());
  file = boost::json::parse(test::service_account_file(test::shared_rsa_key(), "https://x/token"))
             .as_object();
  file["private_key"] = pem.substr(0, pem.size() / 2);
  test::write_file(files.service_account, boost::json::serialize(file));
  const auto error = error_of(files.fcm());
  BOOST_TEST(error.rfind("channels[0]: fcm service account: private_key: ", 0) == 0u, error);
  BOOST_TEST(error.find('\n') == std::string::npos, error);
  BOOST_TEST(!test::quotes_pem_body(error, pem), error);
}

BOOST_AUTO_TEST_CASE(an_apns_channel_reads_its_key_from_a_file_or_the_environment) {
  push_credentials files;
  auto cfg = app::parse_config(files.apns(R"(,"push_type":"voip","timeout_ms":3000)"));
  app::validate(cfg);
  const auto& apns = cfg.channels[0].apns;
  BOOST_TEST(apns.private_key_pem == files.apns_pem);
  BOOST_TEST(apns.key_id == "FAKEKEY001");
  BOOST_TEST(apns.team_id == "FAKETEAM01");
  BOOST_TEST(apns.topic == "org.herald.app");
  BOOST_TEST(apns.push_type == "voip");
  BOOST_TEST(apns.base_url == "https://api.push.apple.com");
  BOOST_TEST(apns.timeout.count() == 3000);

  ::setenv("HERALD_TEST_APNS_KEY", files.apns_pem.c_str(), 1);
  cfg = app::parse_config(
      with_channel(R"("type":"apns","key_env":"HERALD_TEST_APNS_KEY","key_id":"K1","team_id":"T1",)"
                   R"("topic":"org.herald.app","base_url":"https://api.sandbox.push.apple.com")"));
  app::validate(cfg);
  BOOST_TEST(cfg.channels[0].apns.private_key_pem == files.apns_pem);
  BOOST_TEST(cfg.channels[0].apns.push_type == "alert");
}

BOOST_AUTO_TEST_CASE(apns_configuration_errors_are_one_line_naming_the_field) {
  push_credentials files;
  BOOST_TEST(error_of(files.apns(R"(,"push_type":"background")")) ==
             "channels[0]: apns push_type must be alert or voip");
  BOOST_TEST(error_of(with_channel(R"("type":"apns","key_id":"K","team_id":"T","topic":"t")")) ==
             "channels[0]: apns key is required (key_file or key_env: the .p8 signing key)");
  BOOST_TEST(error_of(files.apns(R"(,"timeout_ms":40000,"lease_ms":60000)"))
                 .find("lease_ms: must be longer than the provider call's timeout (80000 ms)") !=
             std::string::npos);
  // An RSA key where the .p8 (P-256) belongs: refused in one line that does not quote it.
  const auto rsa = test::private_key_pem(test::shared_rsa_key());
  test::write_file(files.apns_key, rsa);
  const auto error = error_of(files.apns());
  BOOST_TEST(error.rfind("channels[0]: apns key: ", 0) == 0u, error);
  BOOST_TEST(!test::quotes_pem_body(error, rsa), error);
}

BOOST_AUTO_TEST_CASE(channels_of_one_apns_key_must_share_the_key) {
  push_credentials files;
  const auto other = files.dir.file("other.p8");
  const auto other_key = test::generate_ec_key("P-256");
  test::write_file(other, test::private_key_pem(other_key.get()));
  const auto two = [&](const std::string& second_key_file) {
    return R"({"channels":[)"
           R"({"name":"ios-a","type":"apns","key_file":")" +
           files.apns_key +
           R"(","key_id":"K1","team_id":"T1","topic":"org.a"},)"
           R"({"name":"ios-b","type":"apns","key_file":")" +
           second_key_file + R"(","key_id":"K1","team_id":"T1","topic":"org.b"}]})";
  };
  BOOST_TEST(error_of(two(files.apns_key)) == "");
  BOOST_TEST(error_of(two(other)) == "channel 'ios-b': APNs key K1 of team T1 is configured with "
                                     "another private key by an earlier channel");
}

std::string with_smtp(const std::string& fields) {
  return with_channel(R"("type":"smtp","url":"smtp://mail.example.com:587",)"
                      R"("from":"notify@example.com",)" +
                      fields);
}

BOOST_AUTO_TEST_CASE(an_smtp_channel_takes_its_password_from_the_environment_and_requires_tls) {
  ::setenv("HERALD_TEST_SMTP_PASSWORD", "pw-from-env", 1);
  const auto cfg = app::parse_config(
      with_smtp(R"("username":"mailer","password_env":"HERALD_TEST_SMTP_PASSWORD",)"
                R"("from_name":"Shop","html":true,"timeout_ms":15000,"max_connections":2)"));
  app::validate(cfg);
  const auto& smtp = cfg.channels[0].smtp;
  BOOST_TEST(smtp.password == "pw-from-env");
  BOOST_TEST(smtp.tls_required()); // a username makes TLS the default
  BOOST_TEST(smtp.html);
  BOOST_TEST(smtp.timeout.count() == 15000);
  BOOST_TEST(smtp.max_connections == 2u);
}

BOOST_AUTO_TEST_CASE(smtp_configuration_errors_are_one_line_naming_the_field) {
  BOOST_TEST(error_of(with_smtp(R"("username":"mailer","password":"pw","require_tls":false)"))
                 .find("channels[0]: smtp require_tls is false with a username") == 0u);
  BOOST_TEST(error_of(with_smtp(R"("require_tls":"yes")")) ==
             "channels[0].require_tls: must be true or false");
  BOOST_TEST(error_of(with_smtp(R"("username":"mailer")")).find("smtp password is required") !=
             std::string::npos);
  BOOST_TEST(error_of(with_smtp(R"("timeout_ms":60000,"lease_ms":60000)"))
                 .find("lease_ms: must be longer than the provider call's timeout (60000 ms)") !=
             std::string::npos);
  BOOST_TEST(error_of(with_channel(R"("type":"smtp","url":"smtp://mail.example.com",)"
                                   R"("from":"not an address")"))
                 .find("smtp from must be") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_inapp_channel_is_addressed_by_the_user_id) {
  const auto cfg = app::parse_config(with_channel(R"("type":"inapp","batch_max":50)"));
  app::validate(cfg);
  BOOST_TEST(cfg.channels[0].inapp.batch_max == 50u);
  BOOST_TEST(cfg.rules.user_addressed.count(cfg.channels[0].settings.name) == 1u);
  BOOST_TEST(error_of(with_channel(R"("type":"inapp","batch_max":0)")) ==
             "channels[0].batch_max: must be between 1 and 10000");
  BOOST_TEST(error_of(with_channel(R"("type":"inapp","url":"x")")) ==
             "channels[0].url: unknown key");
}

// A cluster's block (docs/cluster.md): read whole, its name becomes the node's lease owner
// name, and every problem is one line naming the key.
BOOST_AUTO_TEST_CASE(a_cluster_block_is_read_and_checked) {
  const std::string pg = R"("database":"postgresql://herald@127.0.0.1:5432/herald", )";
  auto cluster = [&](const std::string& fields) {
    return with_top(pg + R"("cluster":{)" + fields + "}");
  };
  const std::string good =
      R"("node_id":"n1","listen":"127.0.0.1:7101","peers":["127.0.0.1:7102","[::1]:7103"],)"
      R"("heartbeat_ms":100,"timeout_ms":1000)";
  auto cfg = app::parse_config(cluster(good));
  app::validate(cfg);
  BOOST_REQUIRE(cfg.cluster.has_value());
  BOOST_TEST(cfg.node_id == "n1");
  BOOST_TEST(cfg.cluster->peers.size() == 2u);
  BOOST_TEST(cfg.cluster->heartbeat.count() == 100);
  BOOST_TEST(cfg.cluster->timeout.count() == 1000);
  BOOST_TEST(!app::parse_config(with_top(pg + R"("node_id":"a")")).cluster.has_value());

  const std::vector<std::pair<std::string, std::string>> refused{
      {cluster(R"("listen":"127.0.0.1:7101")"), "cluster.node_id: required"},
      {cluster(R"("node_id":"n/1","listen":"127.0.0.1:7101")"), "cluster.node_id: required"},
      {cluster(R"("node_id":"n1")"), "cluster.listen"},
      {cluster(R"("node_id":"n1","listen":"127.0.0.1:0")"), "not 0"},
      {cluster(R"("node_id":"n1","listen":"127.0.0.1:7101","peers":["x"])"), "cluster.peers[0]"},
      {cluster(R"("node_id":"n1","listen":"127.0.0.1:7101","peers":["127.0.0.1:7101"])"),
       "cluster.peers[0]: '127.0.0.1:7101' is listed twice, or is this node's own"},
      {cluster(R"("node_id":"n1","listen":"127.0.0.1:7101","peers":[7102])"),
       "cluster.peers: must be an array"},
      {cluster(R"("node_id":"n1","listen":"127.0.0.1:7101","heartbeat_ms":500,"timeout_ms":1000)"),
       "cluster.timeout_ms: must be more than twice heartbeat_ms"},
      {cluster(R"("node_id":"n1","listen":"127.0.0.1:7101","gossip":true)"),
       "cluster.gossip: unknown key"},
      {with_top(R"("cluster":{"node_id":"n1","listen":"127.0.0.1:7101"})"),
       "cluster: needs a PostgreSQL database"},
      {with_top(pg + R"("node_id":"a","cluster":{"node_id":"n1","listen":"127.0.0.1:7101"})"),
       "cluster.node_id: differs from node_id 'a'"},
  };
  for (const auto& [document, expected] : refused) {
    const auto error = error_of(document);
    BOOST_TEST(error.find(expected) != std::string::npos, document << " -> " << error);
  }
}

// The cluster port speaks CAF's BASP, which trusts what it reads: off loopback only with
// mutual TLS, whose files are loaded and matched at start (a bad file is a config error, not
// a node that cannot talk to its peers).
BOOST_AUTO_TEST_CASE(a_cluster_off_loopback_needs_tls_whose_files_load) {
  herald::test::temp_dir certs{"herald-certs"};
  const auto script = std::string(HERALD_SOURCE_DIR) + "/scripts/cluster-certs.sh '" +
                      certs.path() + "' n1 n2 >/dev/null";
  BOOST_REQUIRE_EQUAL(std::system(script.c_str()), 0);
  const auto file = [&](const std::string& name) { return "\"" + certs.file(name) + "\""; };
  const std::string pg = R"("database":"postgresql://herald@127.0.0.1:5432/herald", )";
  const auto cluster = [&](const std::string& listen, const std::string& more) {
    return with_top(pg + R"("cluster":{"node_id":"n1","listen":")" + listen +
                    R"(","peers":["10.0.0.12:7100"])" + more + "}");
  };
  const auto tls = [&](const std::string& certificate, const std::string& key) {
    return R"(,"tls":{"certificate":)" + file(certificate) + R"(,"key":)" + file(key) +
           R"(,"ca_file":)" + file("ca.pem") + "}";
  };

  auto cfg = app::parse_config(cluster("10.0.0.11:7100", tls("n1.pem", "n1.key") +
                                                             R"(,"handshake_timeout_ms":2000,)"
                                                             R"("max_frame_bytes":1048576)"));
  app::validate(cfg);
  BOOST_TEST(cfg.cluster->tls.enabled());
  BOOST_TEST(cfg.cluster->tls.ca_file == certs.file("ca.pem"));
  BOOST_TEST(cfg.cluster->port_limits.handshake_timeout.count() == 2000);
  BOOST_TEST(cfg.cluster->port_limits.max_frame_bytes == 1048576u);
  BOOST_TEST(cfg.cluster->port_limits.max_handshakes == 64u);

  const std::vector<std::pair<std::string, std::string>> refused{
      {cluster("10.0.0.11:7100", ""),
       "cluster.tls: required, as 10.0.0.12:7100 is not a loopback address"},
      {with_top(pg + R"("cluster":{"node_id":"n1","listen":"0.0.0.0:7100"})"),
       "cluster.tls: required, as 0.0.0.0:7100 is not a loopback address"},
      {cluster("10.0.0.11:7100", R"(,"tls":{"certificate":)" + file("n1.pem") + "}"),
       "cluster.tls: needs certificate, key and ca_file"},
      {cluster("10.0.0.11:7100", tls("missing.pem", "n1.key")),
       "cluster.tls.certificate: cannot load " + certs.file("missing.pem")},
      {cluster("10.0.0.11:7100", tls("n1.pem", "n2.key")),
       "cluster.tls.key: is not the key of " + certs.file("n1.pem")},
      {cluster("10.0.0.11:7100", tls("n1.pem", "n1.key") + R"(,"max_frame_bytes":10)"),
       "cluster.max_frame_bytes: must be between"},
  };
  for (const auto& [document, expected] : refused) {
    const auto error = error_of(document);
    BOOST_TEST(error.find(expected) != std::string::npos, document << " -> " << error);
  }
}

BOOST_AUTO_TEST_SUITE_END()
