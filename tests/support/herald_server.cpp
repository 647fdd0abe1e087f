#include "support/herald_server.hpp"

#include <sstream>
#include <sys/resource.h>
#include <thread>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

namespace herald::test {

std::vector<std::string> running_herald::arguments(std::uint16_t port, const temp_dir& dir,
                                                   const std::string& database,
                                                   const std::string& config,
                                                   const std::vector<std::string>& extra) {
  std::vector<std::string> args{"serve", "--listen", host + ":" + std::to_string(port), "--db",
                                database.empty() ? "sqlite:" + dir.file("herald.db") : database};
  if (!config.empty()) {
    write_file(dir.file("herald.json"), config);
    args.push_back("--config");
    args.push_back(dir.file("herald.json"));
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

running_herald::running_herald(const std::string& database, const std::string& config,
                               const std::vector<std::string>& extra)
    : port_(free_port()),
      process_(arguments(port_, dir_, database, config, extra), dir_.file("herald.log")) {
  if (!process_.wait_ready(host, port_, std::chrono::seconds(30)))
    BOOST_FAIL("herald did not answer /healthz within 30 s; its output:\n" << process_.log());
}

void raise_own_open_file_limit(std::size_t needed) {
  rlimit limit{};
  BOOST_REQUIRE(::getrlimit(RLIMIT_NOFILE, &limit) == 0);
  limit.rlim_cur = limit.rlim_max;
  BOOST_REQUIRE(::setrlimit(RLIMIT_NOFILE, &limit) == 0);
  BOOST_REQUIRE_MESSAGE(limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= needed,
                        "the test needs at least " << needed << " descriptors, the hard limit is "
                                                   << limit.rlim_cur);
}

std::string create_api_key(const std::string& database, const std::string& tenant,
                           const std::string& scopes) {
  auto run =
      run_herald({"keys", "create", "--tenant", tenant, "--scopes", scopes, "--db", database});
  BOOST_REQUIRE_MESSAGE(run.exit_code == 0, "keys create failed: " << run.err);
  auto key = run.out.substr(0, run.out.find('\n'));
  BOOST_REQUIRE_MESSAGE(key.rfind("hk_", 0) == 0, "unexpected key output: " << run.out);
  return key;
}

std::string submit_to(running_herald& herald, const std::string& channel, const std::string& biz_id,
                      const std::string& recipient) {
  const boost::json::object body{{"biz_type", "E2E"},
                                 {"biz_id", biz_id},
                                 {"user_id", "u-" + biz_id},
                                 {"channels", boost::json::array{channel}},
                                 {"to", {{channel, recipient}}},
                                 {"content", {{"title", "Order shipped"}, {"body", "On its way"}}}};
  auto response = herald.post(boost::json::serialize(body));
  BOOST_REQUIRE_EQUAL(response.status, 202);
  return std::string(boost::json::parse(response.body).at("message_id").as_string());
}

boost::json::object three_channel_event(const std::string& biz_id) {
  return {{"biz_type", "ORDER_SHIPPED"},
          {"biz_id", biz_id},
          {"user_id", "u-" + biz_id},
          {"channels", boost::json::array{"sms", "wechat", "app"}},
          {"to", boost::json::object{{"sms", "+8613800000000"},
                                     {"wechat", "oAbC123"},
                                     {"app", "device-token-1"}}},
          {"content", boost::json::object{{"title", "t"}, {"body", "b"}}}};
}

boost::json::object first_task(running_herald& herald, const std::string& message_id) {
  auto response = herald.get("/v1/messages/" + message_id);
  BOOST_REQUIRE_EQUAL(response.status, 200);
  return boost::json::parse(response.body).at("tasks").as_array().at(0).as_object();
}

bool first_task_reaches(running_herald& herald, const std::string& message_id,
                        const std::string& status, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (first_task(herald, message_id).at("status").as_string() != status) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50)); // polling a condition, bounded
  }
  return true;
}

http_response running_herald::get(const std::string& target) {
  return request(host, port_, "GET", target);
}

http_response running_herald::post(const std::string& body, const header_list& headers) {
  return request(host, port_, "POST", "/v1/messages", body, headers);
}

http_response running_herald::post_to(const std::string& target, const std::string& body) {
  return request(host, port_, "POST", target, body, json_headers());
}

std::string running_herald::metrics() {
  auto response = get("/metrics");
  BOOST_REQUIRE_EQUAL(response.status, 200);
  return response.body;
}

std::string running_herald::wait_for_metrics(const std::function<bool(const std::string&)>& done,
                                             std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto text = metrics();
  while (!done(text) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20)); // polling a condition, bounded
    text = metrics();
  }
  return text;
}

double metric_sum(const std::string& text, const std::string& name,
                  const std::vector<std::string>& labels) {
  double sum = 0;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    auto space = line.rfind(' ');
    if (space == std::string::npos)
      continue;
    std::string series = line.substr(0, space);
    if (series.substr(0, series.find('{')) != name)
      continue;
    bool matches = true;
    for (const auto& label : labels)
      matches = matches && series.find(label) != std::string::npos;
    if (matches)
      sum += std::stod(line.substr(space + 1));
  }
  return sum;
}

boost::json::object wait_for_status(running_herald& herald, const std::string& message_id,
                                    const std::string& status) {
  const bool reached = first_task_reaches(herald, message_id, status);
  auto task = first_task(herald, message_id);
  BOOST_REQUIRE_MESSAGE(reached, boost::json::serialize(task) + herald.process().log());
  return task;
}

} // namespace herald::test
