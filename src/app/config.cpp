#include "app/config.hpp"

#include "api/json_codec.hpp"
#include "api/routes.hpp"
#include "domain/status_event.hpp"
#include "domain/template_text.hpp"
#include "persistence/zoneinfo.hpp"
#include "providers/webhook_signature.hpp"

#include <cmath>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <boost/asio/ip/address.hpp>
#include <boost/json.hpp>

namespace herald::app {

namespace json = boost::json;

namespace {

std::string one_line(std::string text) {
  for (auto& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  return text;
}

constexpr std::int64_t one_minute_ms = std::int64_t{60} * 1000;
constexpr std::int64_t one_hour_ms = 60 * one_minute_ms;
constexpr std::int64_t one_day_ms = 24 * one_hour_ms;

/// A bound as people write it: 0.001, 1000000, not 1.000000e+06.
std::string shortest(double bound) {
  std::ostringstream out;
  out << std::setprecision(15) << bound;
  return out.str();
}

/// Reads one JSON object, remembering its path for messages and rejecting unknown keys.
class object_reader {
public:
  object_reader(const json::value& value, std::string path) : path_(std::move(path)) {
    if (!value.is_object())
      fail("", "must be an object");
    object_ = &value.as_object();
  }

  const std::string& path() const { return path_; }

  /// Rejects every key no read asked for; call after the last read.
  void done() const {
    for (auto& entry : *object_)
      if (used_.count(std::string{entry.key()}) == 0)
        fail(std::string{entry.key()}, "unknown key");
  }

  const json::value* find(const char* key) {
    used_.insert(key);
    return object_->if_contains(key);
  }

  std::string path(const std::string& key) const {
    return path_.empty() || key.empty() ? path_ + key : path_ + "." + key;
  }

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    auto where = path(key);
    throw config_error(where.empty() ? what : where + ": " + what);
  }

  void read(const char* key, std::string& out) {
    if (auto* v = find(key)) {
      if (!v->is_string())
        fail(key, "must be a string");
      out = std::string{v->as_string()};
    }
  }

  /// A secret given inline as `key`, or (better: it stays out of the file) as `key` + "_env",
  /// the name of an environment variable holding it, which must then be set and non-empty.
  /// `out` may hold a default (the database URL has one): only a `key` written in the file
  /// clashes with `key` + "_env".
  void read_secret(const std::string& key, std::string& out) {
    const bool given_inline = object_->if_contains(key) != nullptr;
    read(key.c_str(), out);
    const auto env_key = key + "_env";
    std::string variable;
    read(env_key.c_str(), variable);
    if (variable.empty())
      return;
    if (given_inline)
      fail(env_key, "give " + key + " or " + env_key + ", not both");
    out = environment_variable(env_key, variable);
    // Secret mounts often end the file with a line break, which is no part of the secret.
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r'))
      out.pop_back();
    if (out.empty())
      fail(env_key, "environment variable " + variable + " holds only a line break");
  }

  /// A secret too long for a line of the config (a private key, a service account's key file):
  /// the text of the file `file_key` names, or of the environment variable `env_key` names,
  /// which must then be set and non-empty. A relative path is taken from the working directory.
  void read_secret_text(const std::string& file_key, const std::string& env_key, std::string& out) {
    std::string path;
    std::string variable;
    read(file_key.c_str(), path);
    read(env_key.c_str(), variable);
    if (!path.empty() && !variable.empty())
      fail(env_key, "give " + file_key + " or " + env_key + ", not both");
    if (!variable.empty()) {
      out = environment_variable(env_key, variable);
    } else if (!path.empty()) {
      std::ifstream in{path, std::ios::binary};
      if (!in)
        fail(file_key, "cannot read the file " + path);
      std::stringstream text;
      text << in.rdbuf();
      out = text.str();
      if (out.empty())
        fail(file_key, "the file " + path + " is empty or unreadable");
    }
  }

  /// The value of the environment variable `variable` (named by `env_key`); fails when it is
  /// not set or empty.
  std::string environment_variable(const std::string& env_key, const std::string& variable) const {
    const char* value = std::getenv(variable.c_str());
    if (value == nullptr || *value == '\0')
      fail(env_key, "environment variable " + variable + " is not set");
    return value;
  }

  void read(const char* key, bool& out) {
    if (auto* v = find(key)) {
      if (!v->is_bool())
        fail(key, "must be true or false");
      out = v->as_bool();
    }
  }

  void read_number(const char* key, double& out, double min, double max) {
    if (auto* v = find(key)) {
      // Boost.JSON reads 1e999 as infinity: refuse it with every other out-of-range value.
      if (!v->is_number())
        fail(key, "must be a number");
      const auto number = v->to_number<double>();
      if (!(number >= min && number <= max))
        fail(key, "must be between " + shortest(min) + " and " + shortest(max));
      out = number;
    }
  }

  template <class Integer>
  void read_integer(const char* key, Integer& out, std::int64_t min, std::int64_t max) {
    if (auto* v = find(key))
      out = static_cast<Integer>(integer_in_range(*v, key, min, max));
  }

  void read_ms(const char* key, std::chrono::milliseconds& out, std::int64_t min_ms = 1,
               std::int64_t max_ms = one_day_ms) {
    std::int64_t ms = out.count();
    read_integer(key, ms, min_ms, max_ms);
    out = std::chrono::milliseconds{ms};
  }

  /// `value` as an integer within [min, max]. An integer too large for 64 bits (Boost.JSON
  /// reads it as a double or an unsigned) is out of range, not "not an integer".
  std::int64_t integer_in_range(const json::value& value, const std::string& key, std::int64_t min,
                                std::int64_t max) const {
    const auto out_of_range = [&] {
      fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
    };
    if (value.is_int64()) {
      const auto n = value.as_int64();
      if (n < min || n > max)
        out_of_range();
      return n;
    }
    if (value.is_uint64()) // above INT64_MAX, so above every max
      out_of_range();
    if (value.is_double() && std::isfinite(value.as_double()) &&
        std::trunc(value.as_double()) == value.as_double() && std::abs(value.as_double()) >= 0x1p63)
      out_of_range();
    fail(key, "must be an integer");
  }

  void read(const char* key, std::vector<std::string>& out) {
    if (auto* v = find(key)) {
      if (!v->is_array())
        fail(key, "must be an array of strings");
      out.clear();
      for (auto& item : v->as_array()) {
        if (!item.is_string())
          fail(key, "must be an array of strings");
        out.emplace_back(item.as_string());
      }
    }
  }

private:
  const json::object* object_ = nullptr;
  std::string path_;
  std::set<std::string> used_;
};

providers::simulated_profile read_simulated(object_reader& r, providers::simulated_profile p) {
  auto latency = p.latency.count();
  r.read_integer("latency_ms", latency, 0, 600000);
  p.latency = std::chrono::milliseconds{latency};
  r.read_number("retryable_failure_rate", p.retryable_failure_rate, 0, 1);
  r.read_number("permanent_failure_rate", p.permanent_failure_rate, 0, 1);
  r.read_integer("seed", p.seed, 0, std::numeric_limits<std::int64_t>::max());
  return p;
}

// A schedule of delays and a bound on their count (`count_key`): a channel's retries, its
// status questions, the events' posts.
domain::retry_policy read_retry(const json::value& value, const std::string& path,
                                domain::retry_policy policy,
                                const char* count_key = "max_attempts") {
  object_reader r{value, path};
  if (auto* schedule = r.find("schedule_ms")) {
    constexpr std::size_t max_steps = 100;
    if (!schedule->is_array() || schedule->as_array().empty() ||
        schedule->as_array().size() > max_steps)
      r.fail("schedule_ms",
             "must be an array of 1 to " + std::to_string(max_steps) + " delays in milliseconds");
    policy.schedule.clear();
    for (auto& step : schedule->as_array())
      policy.schedule.emplace_back(
          r.integer_in_range(step, "schedule_ms", 1, domain::max_retry_delay.count()));
  }
  r.read_number("jitter", policy.jitter, 0, 0.9);
  r.read_integer(count_key, policy.max_attempts, 1, 1000);
  r.done();
  return policy;
}

channel_config read_channel(const json::value& value, const std::string& path) {
  object_reader r{value, path};
  channel_config ch;
  r.read("name", ch.settings.name);
  r.read("type", ch.type);
  // The floor keeps the token bucket's longest wait (1 / rate) within 1000 s.
  r.read_number("rate_per_sec", ch.settings.rate_per_sec, 0.001, 1e6);
  r.read_number("burst", ch.settings.burst, 1, 1e6);
  r.read_integer("window", ch.settings.window, 1, 100000);
  // Unless set, the queue holds at least a few windows, so a wide window is not refused.
  ch.settings.queue_limit = std::max(ch.settings.queue_limit, 4 * ch.settings.window);
  r.read_integer("queue_limit", ch.settings.queue_limit, 1, 10000000);
  r.read("fallback", ch.settings.fallback);
  r.read_ms("throttle_pause_ms", ch.settings.throttle_pause, 1, one_hour_ms);
  r.read_ms("lease_ms", ch.settings.lease, 100);
  r.read_ms("receipt_window_ms", ch.settings.receipt_window, 0, 30 * 24 * one_hour_ms);
  if (auto* circuit = r.find("circuit")) {
    object_reader c{*circuit, r.path("circuit")};
    c.read_integer("failure_threshold", ch.settings.circuit_failure_threshold, 1, 1000000);
    c.read_ms("cool_down_ms", ch.settings.circuit_cool_down);
    c.done();
  }
  if (ch.type == "webhook") {
    r.read("url", ch.webhook.url);
    r.read_secret("secret", ch.webhook.secret);
    r.read_ms("timeout_ms", ch.webhook.timeout, 1, 10 * one_minute_ms);
    r.read_integer("max_connections", ch.webhook.max_connections, 1, 10000);
    r.read("status_url", ch.webhook.status_url);
    r.read_secret("receipt_secret", ch.webhook.receipt_secret);
  } else if (ch.type == "wechat_template") {
    auto& w = ch.wechat;
    r.read("appid", w.appid);
    r.read_secret("app_secret", w.app_secret);
    r.read("template_id", w.template_id);
    r.read("title_field", w.title_field);
    r.read("body_field", w.body_field);
    r.read("link_url", w.link_url);
    r.read("base_url", w.base_url);
    r.read_secret("callback_token", w.callback_token);
    r.read_ms("timeout_ms", w.timeout, 1, 10 * one_minute_ms);
    r.read_integer("max_connections", w.max_connections, 1, 10000);
    r.read_ms("quota_pause_ms", w.quota_pause, 1000, one_day_ms);
  } else if (ch.type == "sms_twilio") {
    auto& t = ch.twilio;
    r.read("account_sid", t.account_sid);
    r.read_secret("auth_token", t.auth_token);
    r.read("sender", t.sender);
    r.read("base_url", t.base_url);
    r.read("status_callback_url", t.status_callback_url);
    r.read_ms("timeout_ms", t.timeout, 1, 10 * one_minute_ms);
    r.read_integer("max_connections", t.max_connections, 1, 10000);
  } else if (ch.type == "fcm") {
    auto& f = ch.fcm;
    r.read_secret_text("service_account_file", "service_account_json_env", f.service_account_json);
    r.read("project_id", f.project_id);
    r.read("base_url", f.base_url);
    r.read_ms("timeout_ms", f.timeout, 1, 10 * one_minute_ms);
    r.read_integer("max_connections", f.max_connections, 1, 10000);
  } else if (ch.type == "apns") {
    auto& a = ch.apns;
    r.read_secret_text("key_file", "key_env", a.private_key_pem);
    r.read("key_id", a.key_id);
    r.read("team_id", a.team_id);
    r.read("topic", a.topic);
    r.read("push_type", a.push_type);
    r.read("base_url", a.base_url);
    r.read_ms("timeout_ms", a.timeout, 1, 10 * one_minute_ms);
    r.read_integer("max_connections", a.max_connections, 1, 10000);
  } else if (ch.type == "smtp") {
    auto& m = ch.smtp;
    r.read("url", m.url);
    r.read("from", m.from);
    r.read("from_name", m.from_name);
    r.read("username", m.username);
    r.read_secret("password", m.password);
    if (r.find("require_tls") != nullptr) {
      bool require = true;
      r.read("require_tls", require);
      m.require_tls = require;
    }
    r.read_ms("timeout_ms", m.timeout, 1, 10 * one_minute_ms);
    r.read_integer("max_connections", m.max_connections, 1, 10000);
    r.read("html", m.html);
  } else if (ch.type == "inapp") {
    r.read_integer("batch_max", ch.inapp.batch_max, 1, 10000);
  } else {
    ch.simulated = read_simulated(r, ch.simulated);
  }
  if (auto* retry = r.find("retry"))
    ch.settings.retry = read_retry(*retry, r.path("retry"), ch.settings.retry);
  if (auto* questions = r.find("status_questions"))
    ch.settings.questions =
        read_retry(*questions, r.path("status_questions"), ch.settings.questions, "max");
  r.done();
  return ch;
}

void read_templates(const json::value& value, domain::routing_rules& rules) {
  if (!value.is_object())
    throw config_error("templates: must be an object");
  for (auto& [name, body] : value.as_object()) {
    object_reader r{body, "templates." + std::string{name}};
    domain::message_template t;
    r.read("title", t.title);
    r.read("body", t.body);
    r.done();
    for (auto [field, text] : {std::pair{"title", &t.title}, std::pair{"body", &t.body}})
      if (auto error = domain::check_template(*text))
        throw config_error("templates." + std::string{name} + "." + field + ": character " +
                           std::to_string(error->position) + ": " + error->message);
    rules.templates[std::string{name}] = std::move(t);
  }
}

/// Reads `key` into `out` when given: one of the names `parse` accepts (listed in `allowed`).
template <class T, class Parse>
void read_choice(object_reader& r, const char* key, Parse parse, const char* allowed,
                 std::optional<T>& out) {
  const json::value* given = r.find(key);
  if (given == nullptr)
    return;
  if (given->is_string())
    out = parse(std::string_view{given->get_string()});
  if (!out)
    throw config_error(r.path() + "." + key + ": must be one of " + allowed);
}

std::optional<domain::when_held> parse_when_held(std::string_view text) {
  if (text == "defer")
    return domain::when_held::defer;
  if (text == "drop")
    return domain::when_held::drop;
  return std::nullopt;
}

void read_when_held(object_reader& r, const char* key, domain::when_held& out) {
  std::optional<domain::when_held> given;
  read_choice(r, key, parse_when_held, "defer, drop", given);
  out = given.value_or(out);
}

/// "HH:MM", 00:00 to 23:59, as minutes after midnight.
std::chrono::minutes read_time_of_day(object_reader& r, const char* key,
                                      std::chrono::minutes fallback) {
  if (r.find(key) == nullptr)
    return fallback;
  std::string text;
  r.read(key, text);
  const auto digit = [&](std::size_t i) { return text[i] >= '0' && text[i] <= '9'; };
  if (text.size() != 5 || text[2] != ':' || !digit(0) || !digit(1) || !digit(3) || !digit(4))
    r.fail(key, "must be a time of day \"HH:MM\"");
  const int hours = (text[0] - '0') * 10 + (text[1] - '0');
  const int minutes = (text[3] - '0') * 10 + (text[4] - '0');
  if (hours > 23 || minutes > 59)
    r.fail(key, "must be a time of day from 00:00 to 23:59");
  return std::chrono::minutes{hours * 60 + minutes};
}

domain::frequency_cap read_frequency_cap(const json::value& value, const std::string& path) {
  object_reader r{value, path};
  domain::frequency_cap cap;
  std::optional<domain::category> category;
  read_choice(r, "category", domain::parse_category,
              "verification, transactional, marketing, system", category);
  if (!category)
    r.fail("category", "is required");
  cap.category = *category;
  if (r.find("channel") != nullptr) { // absent: every channel together; "" is a mistake
    std::string channel;
    r.read("channel", channel);
    if (channel.empty())
      r.fail("channel", "must name a channel (leave the key out to count every channel)");
    cap.channel = channel;
  }
  std::string per;
  r.read("per", per);
  if (per == "hour")
    cap.per = domain::frequency_cap::period::hour;
  else if (per == "day")
    cap.per = domain::frequency_cap::period::day;
  else
    r.fail("per", "must be hour or day");
  r.read_integer("limit", cap.limit, 1, 1'000'000);
  if (r.find("limit") == nullptr)
    r.fail("limit", "is required");
  r.done();
  return cap;
}

/// "policy": quiet hours, the default time zone and frequency caps (docs/policy.md).
domain::policy_rules read_policy(const json::value& value) {
  object_reader r{value, "policy"};
  domain::policy_rules policy;
  if (auto* quiet = r.find("quiet_hours")) {
    object_reader q{*quiet, r.path("quiet_hours")};
    policy.quiet_hours.start = read_time_of_day(q, "start", policy.quiet_hours.start);
    policy.quiet_hours.end = read_time_of_day(q, "end", policy.quiet_hours.end);
    if (q.find("categories") != nullptr) {
      std::vector<std::string> names;
      q.read("categories", names);
      policy.quiet_categories.clear();
      for (const auto& name : names) {
        auto category = domain::parse_category(name);
        if (!category)
          q.fail("categories", "unknown category '" + name + "'");
        if (*category == domain::category::verification)
          q.fail("categories", "verification codes are never held by quiet hours");
        policy.quiet_categories.insert(*category);
      }
    }
    q.done();
  }
  r.read("default_time_zone", policy.default_time_zone);
  if (auto* caps = r.find("frequency_caps")) {
    if (!caps->is_array())
      r.fail("frequency_caps", "must be an array of caps");
    for (std::size_t i = 0; i < caps->as_array().size(); ++i)
      policy.caps.push_back(read_frequency_cap(caps->as_array()[i], r.path("frequency_caps") + "[" +
                                                                        std::to_string(i) + "]"));
  }
  r.done();
  return policy;
}

/// A route's escalation: `[{"channel": "sms", "after_ms": 300000}, ...]`, steps in the order
/// they fire (docs/policy.md).
std::vector<domain::escalation_step> read_escalation(const json::value& value,
                                                     const std::string& path) {
  if (!value.is_array() || value.as_array().empty())
    throw config_error(path + ": must be a non-empty array of {channel, after_ms} steps");
  std::vector<domain::escalation_step> steps;
  for (std::size_t i = 0; i < value.as_array().size(); ++i) {
    object_reader r{value.as_array()[i], path + "[" + std::to_string(i) + "]"};
    domain::escalation_step step;
    r.read("channel", step.channel);
    if (step.channel.empty())
      r.fail("channel", "is required");
    if (r.find("after_ms") == nullptr)
      r.fail("after_ms", "is required");
    r.read_ms("after_ms", step.after, 1, 30 * one_day_ms);
    if (!steps.empty() && step.after <= steps.back().after)
      r.fail("after_ms", "must be later than the step before");
    r.done();
    steps.push_back(std::move(step));
  }
  return steps;
}

/// A route is its channels (`["sms", "app"]`) or an object that may also set the category,
/// priority and template of requests that give none, and its escalation.
void read_routes(const json::value& value, domain::routing_rules& rules) {
  if (!value.is_object())
    throw config_error("routes: must be an object of biz_type -> route");
  for (auto& [biz_type, spec] : value.as_object()) {
    domain::route route;
    const std::string path = "routes." + std::string{biz_type};
    if (spec.is_array()) {
      const json::value channels_only = json::object{{"channels", spec}};
      object_reader r{channels_only, path};
      r.read("channels", route.channels);
    } else if (spec.is_object()) {
      object_reader r{spec, path};
      r.read("channels", route.channels);
      read_choice(r, "category", domain::parse_category,
                  "verification, transactional, marketing, system", route.category);
      read_choice(r, "priority", domain::parse_priority, "high, normal, low", route.priority);
      r.read("template", route.template_name);
      if (r.find("template") != nullptr && route.template_name.empty())
        throw config_error(path + ".template: must name a template (leave the key out for none)");
      read_when_held(r, "quiet_hours", route.in_quiet_hours);
      read_when_held(r, "over_cap", route.over_cap);
      if (auto* escalation = r.find("escalation"))
        route.escalation = read_escalation(*escalation, r.path("escalation"));
      r.done();
    } else {
      throw config_error(path + ": must be an array of channels or an object");
    }
    rules.routes[std::string{biz_type}] = std::move(route);
  }
}

events_config read_events(const json::value& value) {
  object_reader r{value, "events"};
  events_config events;
  r.read("url", events.url);
  r.read_secret("secret", events.secret);
  r.read("types", events.types);
  r.read_ms("timeout_ms", events.timeout, 1, 10 * one_minute_ms);
  if (auto* retry = r.find("retry"))
    events.retry = read_retry(*retry, r.path("retry"), events.retry);
  r.done();
  return events;
}

/// How long one provider call of `ch` may take at worst, the adapter's own second try
/// included; nullopt for channels that call nothing over a network (simulated, inapp).
std::optional<std::chrono::milliseconds> call_timeout_of(const channel_config& ch) {
  if (ch.type == "webhook")
    return ch.webhook.timeout;
  if (ch.type == "sms_twilio")
    return ch.twilio.timeout;
  if (ch.type == "smtp")
    return ch.smtp.timeout;
  // A token fetch, the send, a second fetch and the send again (an expired token).
  if (ch.type == "wechat_template")
    return 4 * ch.wechat.timeout;
  if (ch.type == "fcm")
    return 4 * ch.fcm.timeout;
  // The provider token is signed here, not fetched: the send, and once more with a new one.
  if (ch.type == "apns")
    return 2 * ch.apns.timeout;
  return std::nullopt;
}

actors::cluster_config read_cluster(const json::value& value) {
  object_reader r{value, "cluster"};
  actors::cluster_config cluster;
  r.read("node_id", cluster.node_id);
  r.read("listen", cluster.listen);
  if (auto* peers = r.find("peers")) {
    if (!peers->is_array())
      r.fail("peers", "must be an array of HOST:PORT strings");
    for (auto& peer : peers->as_array()) {
      if (!peer.is_string())
        r.fail("peers", "must be an array of HOST:PORT strings");
      cluster.peers.emplace_back(peer.as_string());
    }
  }
  r.read_ms("heartbeat_ms", cluster.heartbeat, 10, one_minute_ms);
  r.read_ms("timeout_ms", cluster.timeout, 30, 10 * one_minute_ms);
  r.read_ms("database_timeout_ms", cluster.database_timeout, 100, 10 * one_minute_ms);
  if (auto* tls = r.find("tls")) {
    object_reader t{*tls, r.path("tls")};
    t.read("certificate", cluster.tls.certificate);
    t.read("key", cluster.tls.key);
    t.read("ca_file", cluster.tls.ca_file);
    t.read_secret("key_passphrase", cluster.tls.key_passphrase);
    t.done();
    if (cluster.tls.certificate.empty() || cluster.tls.key.empty() || cluster.tls.ca_file.empty())
      t.fail("", "needs certificate, key and ca_file (PEM files)");
  }
  auto& limits = cluster.port_limits;
  r.read_integer("max_handshakes", limits.max_handshakes, 1, 10000);
  r.read_integer("max_handshakes_per_address", limits.max_handshakes_per_address, 1, 10000);
  r.read_ms("handshake_timeout_ms", limits.handshake_timeout, 100, one_minute_ms);
  r.read_integer("max_frame_bytes", limits.max_frame_bytes, 64 * 1024, 1024 * 1024 * 1024);
  r.done();
  return cluster;
}

auth_config read_auth(const json::value& value) {
  object_reader r{value, "auth"};
  auth_config auth;
  std::string mode;
  r.read("mode", mode);
  if (mode == "api_keys")
    auth.mode = auth_config::auth_mode::api_keys;
  else if (!mode.empty() && mode != "none")
    r.fail("mode", "must be api_keys or none");
  if (auto* allow = r.find("allow_unauthenticated_on_network")) {
    if (!allow->is_bool())
      r.fail("allow_unauthenticated_on_network", "must be true or false");
    auth.allow_unauthenticated_on_network = allow->as_bool();
  }
  r.read_ms("key_refresh_ms", auth.key_refresh);
  r.done();
  return auth;
}

} // namespace

config_error::config_error(const std::string& what) : std::runtime_error(one_line(what)) {}

config parse_config(const std::string& text) {
  json::parse_options options;
  options.allow_comments = true;
  options.allow_trailing_commas = true;
  boost::system::error_code ec;
  auto doc = json::parse(text, ec, {}, options);
  if (ec)
    throw config_error("not valid JSON: " + ec.message());
  // Refused as the API refuses them: a key given twice would silently keep the last value.
  // (Numbers out of range are left to each key's own bounds, which name them.)
  if (auto problem = api::check_strict_json(text, options);
      problem && problem->code == "duplicate_key")
    throw config_error(problem->field + ": given twice");
  config cfg;
  object_reader r{doc, ""};
  std::string listen;
  r.read("listen", listen);
  if (!listen.empty())
    apply_listen(listen, cfg.http);
  r.read("metrics_listen", cfg.metrics_listen);
  if (auto* auth = r.find("auth"))
    cfg.auth = read_auth(*auth);
  // A PostgreSQL URL may hold a password: database_env keeps it out of the file.
  r.read_secret("database", cfg.database);
  if (auto* sqlite = r.find("sqlite")) {
    object_reader q{*sqlite, "sqlite"};
    std::string synchronous;
    q.read("synchronous", synchronous);
    if (synchronous == "normal")
      cfg.sqlite_synchronous = persistence::database_url::sqlite_sync::normal;
    else if (!synchronous.empty() && synchronous != "full")
      q.fail("synchronous", "must be full or normal");
    q.done();
  }
  std::string level;
  r.read("log_level", level);
  if (!level.empty() && !log::parse_level(level, cfg.log_level))
    r.fail("log_level", "must be one of debug, info, warn, error");
  r.read_integer("scheduler_threads", cfg.scheduler_threads, 1, 64);
  r.read_integer("shards", cfg.shards, 1, 1024);
  r.read_ms("drain_timeout_ms", cfg.drain_timeout);
  r.read_ms("sweep_interval_ms", cfg.dispatcher.sweep_interval, 10);
  r.read("node_id", cfg.node_id);
  std::size_t max_batch_body_bytes = api::default_max_batch_body_bytes;
  if (auto* http = r.find("http")) {
    object_reader h{*http, "http"};
    h.read_integer("max_body_bytes", cfg.http.max_body_bytes, 1024, 64 * 1024 * 1024);
    h.read_integer("max_batch_body_bytes", max_batch_body_bytes, 1024, 256 * 1024 * 1024);
    h.read_integer("max_json_depth", cfg.http.max_json_depth, 1, 1000);
    h.read_integer("io_threads", cfg.http.io_threads, 1, 64);
    h.read_integer("max_in_flight", cfg.http.max_in_flight, 1, 10000000);
    h.read_integer("max_connections", cfg.http.max_connections, 1, 1000000);
    h.read_integer("max_connections_per_peer", cfg.http.max_connections_per_peer, 1, 1000000);
    h.read_ms("header_timeout_ms", cfg.http.header_timeout, 100, 600000);
    h.read_integer("min_body_bytes_per_second", cfg.http.min_body_bytes_per_second, 1,
                   1024 * 1024 * 1024);
    h.read_ms("body_grace_ms", cfg.http.body_grace, 100, 600000);
    h.read_integer("max_body_bytes_in_flight", cfg.http.max_body_bytes_in_flight, 1024 * 1024,
                   std::int64_t{64} * 1024 * 1024 * 1024);
    // Big bodies may fill half the budget and anonymous ones a quarter: the largest of each
    // must fit in its share.
    if (cfg.http.max_body_bytes_in_flight / 2 < max_batch_body_bytes ||
        cfg.http.max_body_bytes_in_flight / 4 < cfg.http.max_body_bytes)
      h.fail("max_body_bytes_in_flight", "must be at least twice max_batch_body_bytes (" +
                                             std::to_string(max_batch_body_bytes) +
                                             ") and four times max_body_bytes (" +
                                             std::to_string(cfg.http.max_body_bytes) + ")");
    h.done();
  }
  cfg.http.body_limits_by_path[std::string(api::batch_path)] = max_batch_body_bytes;
  if (auto* ingest = r.find("ingest")) {
    object_reader i{*ingest, "ingest"};
    i.read_integer("max_in_flight", cfg.ingest.max_in_flight, 1, 10000000);
    // At least 2 ms: the dedup shards' default is 4/5 of it, and must stay above zero.
    i.read_ms("claim_timeout_ms", cfg.ingest.claim_timeout, 2, one_hour_ms);
    i.done();
  }
  // The shard must give up on the database before ingest gives up on the shard.
  cfg.dedup.claim_timeout = cfg.ingest.claim_timeout * 4 / 5;
  if (auto* dedup = r.find("dedup")) {
    object_reader d{*dedup, "dedup"};
    d.read_integer("max_waiting", cfg.dedup.max_waiting, 1, 10000000);
    d.read_ms("claim_timeout_ms", cfg.dedup.claim_timeout);
    d.done();
  }
  if (auto* timer = r.find("retry_timer")) {
    object_reader t{*timer, "retry_timer"};
    t.read_integer("max_held", cfg.retry_timer.max_held, 1, 100000000);
    t.read_integer("hand_out_batch", cfg.retry_timer.hand_out_batch, 1, 100000);
    t.done();
  }
  if (auto* supervision = r.find("supervision")) {
    object_reader s{*supervision, "supervision"};
    s.read_integer("max_restarts", cfg.supervision.max_restarts, 1, 1000);
    s.read_ms("restart_window_ms", cfg.supervision.restart_window);
    s.read_ms("shutdown_grace_ms", cfg.supervision.shutdown_grace);
    s.read_ms("shutdown_kill_timeout_ms", cfg.supervision.shutdown_kill_timeout);
    s.done();
  }
  if (auto* store = r.find("store")) {
    object_reader s{*store, "store"};
    s.read_integer("batch_max", cfg.store.batch_max, 1, 100000);
    if (auto* faults = s.find("faults")) {
      object_reader f{*faults, s.path("faults")};
      f.read_number("write_failure_rate", cfg.store_faults.write_failure_rate, 0, 1);
      f.read_number("lost_answer_share", cfg.store_faults.lost_answer_share, 0, 1);
      f.read_integer("seed", cfg.store_faults.seed, 0, std::numeric_limits<std::int64_t>::max());
      f.done();
    }
    s.done();
  }
  if (auto* receipts = r.find("receipts")) {
    object_reader c{*receipts, "receipts"};
    c.read_ms("timestamp_tolerance_ms", cfg.receipts.timestamp_tolerance, 1000, one_hour_ms);
    c.read_ms("reconcile_interval_ms", cfg.receipts.reconcile_interval, 10, one_hour_ms);
    c.read_integer("reconcile_batch", cfg.receipts.reconcile_batch, 1, 100000);
    c.done();
  }
  if (auto* events = r.find("events"))
    cfg.events = read_events(*events);
  if (auto* cluster = r.find("cluster")) {
    cfg.cluster = read_cluster(*cluster);
    // The cluster's name for this node is its lease owner name: one name, given once.
    if (!cfg.node_id.empty() && cfg.node_id != cfg.cluster->node_id)
      r.fail("cluster.node_id", "differs from node_id '" + cfg.node_id + "': give one of them");
    cfg.node_id = cfg.cluster->node_id;
  }
  if (auto* stored = r.find("stored_templates")) {
    object_reader t{*stored, "stored_templates"};
    t.read_ms("refresh_ms", cfg.stored_templates.refresh_interval, 10, one_hour_ms);
    t.done();
  }
  if (auto* channels = r.find("channels")) {
    if (!channels->is_array())
      r.fail("channels", "must be an array");
    std::size_t index = 0;
    for (auto& ch : channels->as_array())
      cfg.channels.push_back(read_channel(ch, "channels[" + std::to_string(index++) + "]"));
  }
  if (auto* routes = r.find("routes"))
    read_routes(*routes, cfg.rules);
  r.read("default_route", cfg.rules.default_route);
  if (auto* policy = r.find("policy"))
    cfg.policy = read_policy(*policy);
  if (auto* templates = r.find("templates"))
    read_templates(*templates, cfg.rules);
  r.done();
  for (auto& ch : cfg.channels) {
    ch.settings.call_budget = call_timeout_of(ch).value_or(std::chrono::milliseconds{0});
    cfg.rules.channels.insert(ch.settings.name);
    if (ch.type == "inapp") // the inbox is the user's: `to` may leave it out
      cfg.rules.user_addressed.insert(ch.settings.name);
  }
  return cfg;
}

config load_config_file(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    throw config_error(path + ": cannot read the file");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return parse_config(text.str());
  } catch (const config_error& e) {
    throw config_error(path + ": " + e.what());
  }
}

persistence::database_url database_url_of(const config& cfg) {
  auto url = persistence::parse_database_url(cfg.database);
  url.sqlite_synchronous = cfg.sqlite_synchronous;
  return url;
}

void apply_listen(const std::string& listen, api::http_options& http) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size())
    throw config_error("listen address '" + listen + "' must be HOST:PORT, e.g. 127.0.0.1:8080");
  auto host = listen.substr(0, colon);
  auto port_text = listen.substr(colon + 1);
  if (port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(port_text) > 65535)
    throw config_error("listen address '" + listen + "': port must be 0-65535");
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  http.host = host;
  http.port = static_cast<std::uint16_t>(std::stoul(port_text));
}

void validate(const config& cfg, const std::string& source) {
  try {
    validate(cfg);
  } catch (const config_error& e) {
    throw config_error(source + ": " + e.what());
  }
}

bool is_loopback_host(const std::string& host) {
  return api::is_loopback_host(host);
}

namespace {

/// Credentials (an AppSecret in a token request, Twilio's basic auth) must not cross a network
/// in the clear: a provider's base_url is https://, or http:// on this machine (fakes, tests).
void require_tls_off_loopback(const std::string& url, const std::string& where) {
  const std::string plain = "http://";
  if (url.compare(0, plain.size(), plain) != 0)
    return;
  auto host = url.substr(plain.size());
  host = host.substr(0, host.find_first_of("/?#"));
  if (auto at = host.rfind('@'); at != std::string::npos)
    host = host.substr(at + 1);
  if (!host.empty() && host.front() == '[')
    host = host.substr(1, host.find(']') - 1);
  else
    host = host.substr(0, host.find(':'));
  if (!is_loopback_host(host))
    throw config_error(where + ".base_url: must be https:// (http:// only on loopback): the "
                               "channel's credentials travel with every call");
}

} // namespace

namespace {

/// A cluster address: HOST:PORT with a port peers can dial (not 0).
void check_cluster_address(const std::string& address, const std::string& where) {
  api::http_options parsed;
  try {
    apply_listen(address, parsed);
  } catch (const config_error& e) {
    throw config_error(where + ": " + e.what());
  }
  if (parsed.port == 0)
    throw config_error(where + ": '" + address + "' needs a port other nodes can dial, not 0");
}

void validate_cluster(const actors::cluster_config& cluster, const std::string& database) {
  const auto& name = cluster.node_id;
  if (name.empty() || name.size() > 64 ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
          std::string::npos)
    throw config_error("cluster.node_id: required, at most 64 letters, digits, '.', '_' or '-'");
  check_cluster_address(cluster.listen, "cluster.listen");
  std::set<std::string> seen{cluster.listen};
  for (std::size_t i = 0; i < cluster.peers.size(); ++i) {
    const auto where = "cluster.peers[" + std::to_string(i) + "]";
    check_cluster_address(cluster.peers[i], where);
    if (!seen.insert(cluster.peers[i]).second)
      throw config_error(where + ": '" + cluster.peers[i] +
                         "' is listed twice, or is this node's own listen address");
  }
  // BASP trusts every byte it reads: off this machine, only peers holding a certificate of the
  // cluster's authority may reach it.
  if (!cluster.tls.enabled()) {
    auto addresses = cluster.peers;
    addresses.push_back(cluster.listen);
    for (const auto& address : addresses) {
      api::http_options parsed;
      apply_listen(address, parsed);
      if (!is_loopback_host(parsed.host))
        throw config_error("cluster.tls: required, as " + address +
                           " is not a loopback address (plaintext cluster transport only on "
                           "loopback; docs/cluster.md, making certificates)");
    }
  } else if (auto problem = actors::check_cluster_tls(cluster.tls); !problem.empty()) {
    throw config_error(problem);
  }
  if (cluster.timeout <= 2 * cluster.heartbeat)
    throw config_error("cluster.timeout_ms: must be more than twice heartbeat_ms, or one late "
                       "heartbeat would drop a live member");
  if (cluster.database_timeout <= cluster.heartbeat)
    throw config_error("cluster.database_timeout_ms: must be more than heartbeat_ms, the "
                       "interval of the database pings it bounds");
  // Nodes on different hosts share the database; an SQLite file cannot be shared that way.
  persistence::database_url url;
  try {
    url = persistence::parse_database_url(database);
  } catch (const std::invalid_argument&) {
    return; // the database check reports it
  }
  if (url.backend != persistence::database_url::kind::postgresql)
    throw config_error("cluster: needs a PostgreSQL database (nodes share it), not " + url.text);
}

} // namespace

void validate(const config& cfg) {
  if (cfg.cluster)
    validate_cluster(*cfg.cluster, cfg.database);
  // Leases are compared on each node's clock: a test clock starts wherever its process did.
  if (cfg.cluster && cfg.test_clock_start)
    throw config_error("cluster: --test-clock cannot be used in a cluster (the nodes' clocks "
                       "would disagree by their start times, and leases with them)");
  // "/" separates the name from each process's incarnation in lease owners: a name holding one
  // could pass for another node's process when leases are resumed.
  if (cfg.node_id.size() > 200 || cfg.node_id.find_first_of("/\r\n") != std::string::npos)
    throw config_error("node_id: must be at most 200 characters, without '/' or line breaks");
  if (cfg.auth.mode == auth_config::auth_mode::none && !is_loopback_host(cfg.http.host) &&
      !cfg.auth.allow_unauthenticated_on_network)
    throw config_error("auth.mode is none but the listen address " + cfg.http.host +
                       " is not loopback: use auth.mode api_keys, or set "
                       "auth.allow_unauthenticated_on_network to true");
  if (!cfg.metrics_listen.empty()) {
    api::http_options metrics_http;
    apply_listen(cfg.metrics_listen, metrics_http);
  }
  if (cfg.channels.empty())
    throw config_error("channels: at least one channel is needed");
  std::set<std::string> names;
  for (std::size_t i = 0; i < cfg.channels.size(); ++i) {
    auto& ch = cfg.channels[i];
    auto where = "channels[" + std::to_string(i) + "]";
    auto& name = ch.settings.name;
    if (name.empty() || name.size() > 32 ||
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos)
      throw config_error(where + ".name: must be 1-32 characters of a-z, 0-9, _ or -");
    if (!names.insert(name).second)
      throw config_error(where + ".name: channel '" + name + "' is configured twice");
    if (ch.type == "webhook") {
      if (auto problem = ch.webhook.validate(); !problem.empty())
        throw config_error(where + ": " + problem);
    } else if (ch.type == "wechat_template") {
      if (auto problem = ch.wechat.validate(); !problem.empty())
        throw config_error(where + ": " + problem);
      require_tls_off_loopback(ch.wechat.base_url, where);
    } else if (ch.type == "sms_twilio") {
      if (auto problem = ch.twilio.validate(); !problem.empty())
        throw config_error(where + ": " + problem);
      require_tls_off_loopback(ch.twilio.base_url, where);
    } else if (ch.type == "fcm") {
      if (auto problem = ch.fcm.validate(); !problem.empty())
        throw config_error(where + ": " + problem);
      require_tls_off_loopback(ch.fcm.base_url, where);
    } else if (ch.type == "apns") {
      if (auto problem = ch.apns.validate(); !problem.empty())
        throw config_error(where + ": " + problem);
      require_tls_off_loopback(ch.apns.base_url, where);
    } else if (ch.type == "smtp") {
      if (auto problem = ch.smtp.validate(); !problem.empty())
        throw config_error(where + ": " + problem);
    } else if (ch.type == "inapp") {
      if (auto problem = ch.inapp.validate(); !problem.empty())
        throw config_error(where + ": " + problem);
    } else if (ch.type != "simulated") {
      throw config_error(where + ".type: unknown channel type '" + ch.type +
                         "' (supported: simulated, webhook, wechat_template, sms_twilio, fcm, " +
                         "apns, smtp, inapp)");
    }
    // A lease shorter than a call would let a sweep resend a call still in flight.
    if (auto call_timeout = call_timeout_of(ch); call_timeout && ch.settings.lease <= *call_timeout)
      throw config_error(where + ".lease_ms: must be longer than the provider call's timeout (" +
                         std::to_string(call_timeout->count()) + " ms)");
    if (auto problem = ch.settings.validate(); !problem.empty())
      throw config_error(where + ": " + problem);
    if (ch.simulated.retryable_failure_rate + ch.simulated.permanent_failure_rate > 1)
      throw config_error(where + ": retryable_failure_rate and permanent_failure_rate must add " +
                         "up to at most 1");
  }
  // Channels of one appid share its access token, fetched with one secret; and the account
  // has one server URL, so one channel takes its pushes (the others' would not be found).
  std::map<std::pair<std::string, std::string>, std::string> wechat_secrets;
  std::map<std::string, std::string> wechat_push_channel;
  for (auto& ch : cfg.channels) {
    if (ch.type != "wechat_template")
      continue;
    const auto& w = ch.wechat;
    if (auto [known, added] =
            wechat_secrets.emplace(std::make_pair(w.api_base(), w.appid), w.app_secret);
        !added && known->second != w.app_secret)
      throw config_error("channel '" + ch.settings.name + "': appid " + w.appid +
                         " is configured with another app_secret by an earlier channel");
    if (w.callback_token.empty())
      continue;
    if (auto [other, added] = wechat_push_channel.emplace(w.appid, ch.settings.name); !added)
      throw config_error("channel '" + ch.settings.name + "': appid " + w.appid +
                         " has one server URL, and channel '" + other->second +
                         "' takes its pushes already (callback_token on one channel only)");
  }
  // Channels of one APNs key (team and key id) share its provider token, signed with one key.
  std::map<std::pair<std::string, std::string>, std::string> apns_keys;
  for (auto& ch : cfg.channels)
    if (ch.type == "apns")
      if (auto [known, added] = apns_keys.emplace(std::make_pair(ch.apns.team_id, ch.apns.key_id),
                                                  ch.apns.private_key_pem);
          !added && known->second != ch.apns.private_key_pem)
        throw config_error("channel '" + ch.settings.name + "': APNs key " + ch.apns.key_id +
                           " of team " + ch.apns.team_id +
                           " is configured with another private key by an earlier channel");
  for (auto& ch : cfg.channels) {
    auto& fallback = ch.settings.fallback;
    if (!fallback.empty() && (fallback == ch.settings.name || names.count(fallback) == 0))
      throw config_error("channel '" + ch.settings.name + "': fallback '" + fallback +
                         "' must name another configured channel");
  }
  for (auto& [biz_type, route] : cfg.rules.routes) {
    if (route.channels.empty())
      throw config_error("routes." + biz_type + ": must name at least one channel");
    for (auto& name : route.channels)
      if (names.count(name) == 0)
        throw config_error("routes." + biz_type + ": unknown channel '" + name + "'");
    if (!route.template_name.empty() && cfg.rules.templates.count(route.template_name) == 0)
      throw config_error("routes." + biz_type + ".template: unknown template '" +
                         route.template_name + "'");
    std::set<std::string> escalated;
    for (std::size_t i = 0; i < route.escalation.size(); ++i) {
      const auto& channel = route.escalation[i].channel;
      const auto path = "routes." + biz_type + ".escalation[" + std::to_string(i) + "].channel";
      if (names.count(channel) == 0)
        throw config_error(path + ": unknown channel '" + channel + "'");
      if (std::find(route.channels.begin(), route.channels.end(), channel) != route.channels.end())
        throw config_error(path + ": '" + channel + "' is already one of the route's channels");
      if (!escalated.insert(channel).second)
        throw config_error(path + ": '" + channel + "' is already an earlier step");
    }
  }
  for (auto& name : cfg.rules.default_route)
    if (names.count(name) == 0)
      throw config_error("default_route: unknown channel '" + name + "'");
  std::set<std::string> cap_counters;
  for (std::size_t i = 0; i < cfg.policy.caps.size(); ++i) {
    const auto& cap = cfg.policy.caps[i];
    const auto path = "policy.frequency_caps[" + std::to_string(i) + "]";
    if (cap.channel && names.count(*cap.channel) == 0)
      throw config_error(path + ".channel: unknown channel '" + *cap.channel + "'");
    if (!cap_counters.insert(cap.counter()).second)
      throw config_error(path + ": a second cap on " + cap.counter());
  }
  if (!persistence::zoneinfo().find(cfg.policy.default_time_zone))
    throw config_error("policy.default_time_zone: unknown time zone '" +
                       cfg.policy.default_time_zone + "' (an IANA name such as Asia/Shanghai)");
  for (auto& [name, t] : cfg.rules.templates)
    if (t.body.empty())
      throw config_error("templates." + name + ".body: must not be empty");
  if (!cfg.events.url.empty()) {
    if (auto problem = providers::http_url_problem(cfg.events.url, "events.url"); !problem.empty())
      throw config_error(problem);
    if (!providers::decode_webhook_secret(cfg.events.secret))
      throw config_error("events.secret: must be \"whsec_\" followed by base64");
    for (auto& type : cfg.events.types)
      if (!domain::is_event_type(type))
        throw config_error("events.types: unknown event type '" + type + "'");
  }
  if (auto problem = cfg.ingest.validate(); !problem.empty())
    throw config_error(problem);
  if (auto problem = cfg.dedup.validate(); !problem.empty())
    throw config_error(problem);
  if (cfg.dedup.claim_timeout >= cfg.ingest.claim_timeout)
    throw config_error("dedup.claim_timeout_ms: must be shorter than ingest.claim_timeout_ms");
  if (auto problem = cfg.retry_timer.validate(); !problem.empty())
    throw config_error(problem);
  if (auto problem = cfg.supervision.validate(); !problem.empty())
    throw config_error(problem);
  if (auto problem = cfg.store.validate(); !problem.empty())
    throw config_error(problem);
  if (auto problem = cfg.stored_templates.validate(); !problem.empty())
    throw config_error(problem);
}

} // namespace herald::app
