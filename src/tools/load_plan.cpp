#include "tools/load_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <utility>

#include <boost/json.hpp>

namespace herald::tools {

namespace json = boost::json;

namespace {

constexpr std::uint64_t late_seed_salt = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t order_seed_salt = 0xc2b2ae3d27d4eb4fULL;

std::string user_id(const load_options& options, std::size_t index) {
  return "u-" + std::to_string(index % options.users);
}

} // namespace

std::string recipient_for(const std::string& channel, std::size_t user_index, bool generic) {
  if (!generic) {
    char buffer[64];
    if (channel == "sms") {
      std::snprintf(buffer, sizeof buffer, "+86138%08zu", user_index % 100000000);
      return buffer;
    }
    if (channel == "wechat")
      return "oLoad" + std::to_string(user_index);
    if (channel == "app")
      return "device-token-" + std::to_string(user_index);
    if (channel == "email")
      return "user" + std::to_string(user_index) + "@example.com";
  }
  return channel + ":u-" + std::to_string(user_index);
}

std::string event_body(const load_options& options, std::size_t index) {
  auto user_index = index % options.users;
  json::array channels;
  json::object to;
  for (const auto& channel : options.channels) {
    channels.emplace_back(channel);
    to[channel] = recipient_for(channel, user_index, options.to_from_channel);
  }
  json::object body{
      {"biz_type", "LOAD_TEST"},
      {"biz_id", options.biz_prefix + std::to_string(index)},
      {"user_id", user_id(options, index)},
      {"channels", std::move(channels)},
      {"to", std::move(to)},
      {"content",
       json::object{{"title", "Load test"}, {"body", "Load test event " + std::to_string(index)}}}};
  return json::serialize(body);
}

std::vector<std::size_t> choose_events(std::size_t events, double ratio, std::uint64_t seed) {
  auto wanted = static_cast<std::size_t>(std::llround(ratio * static_cast<double>(events)));
  wanted = std::min(wanted, events);
  std::vector<std::size_t> all(events);
  std::iota(all.begin(), all.end(), std::size_t{0});
  std::mt19937_64 random(seed);
  for (std::size_t i = 0; i < wanted; ++i) { // partial Fisher-Yates
    std::uniform_int_distribution<std::size_t> pick(i, events - 1);
    std::swap(all[i], all[pick(random)]);
  }
  all.resize(wanted);
  std::sort(all.begin(), all.end());
  return all;
}

load_plan make_load_plan(const load_options& options) {
  load_plan plan;
  auto count = static_cast<std::size_t>(options.events);
  plan.events.reserve(count);
  for (std::size_t i = 0; i < count; ++i)
    plan.events.push_back(load_event{options.biz_prefix + std::to_string(i), user_id(options, i),
                                     event_body(options, i)});

  // Sort keys: original i at i, its resubmission somewhere after it (up to the end).
  std::vector<std::pair<double, planned_submission>> ordered;
  ordered.reserve(count * 2);
  for (std::size_t i = 0; i < count; ++i)
    ordered.push_back({static_cast<double>(i), planned_submission{i, false}});
  std::mt19937_64 random(options.seed ^ order_seed_salt);
  for (auto i : choose_events(count, options.duplicate_ratio, options.seed)) {
    std::uniform_real_distribution<double> later(static_cast<double>(i) + 0.5,
                                                 static_cast<double>(count) + 0.5);
    ordered.push_back({later(random), planned_submission{i, true}});
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  plan.live.reserve(ordered.size());
  for (const auto& entry : ordered)
    plan.live.push_back(entry.second);

  plan.late = choose_events(count, options.late_duplicates, options.seed ^ late_seed_salt);
  return plan;
}

std::string batch_body(const load_plan& plan, const std::vector<std::size_t>& events) {
  std::size_t size = 16;
  for (auto event : events)
    size += plan.events[event].body.size() + 1;
  std::string body;
  body.reserve(size);
  body += R"({"messages":[)";
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i > 0)
      body += ',';
    body += plan.events[events[i]].body;
  }
  body += "]}";
  return body;
}

} // namespace herald::tools
