#include "tools/load_config.hpp"

#include <algorithm>
#include <cctype>

namespace herald::tools {

namespace {

host_port loopback_only(std::string_view option, std::string_view text) {
  auto parsed = parse_host_port(option, text);
  if (!is_loopback_host(parsed.host))
    throw usage_error(std::string(option) + " must be a loopback address (127.0.0.1, ::1, " +
                      "localhost): herald load is for local load tests only");
  return parsed;
}

std::string validated_prefix(std::string_view text) {
  bool valid =
      !text.empty() && text.size() <= 64 && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
               c == ':';
      });
  if (!valid)
    throw usage_error("--biz-prefix wants 1 to 64 of [A-Za-z0-9._:-]");
  return std::string(text);
}

} // namespace

load_options parse_load_args(const std::vector<std::string>& args) {
  load_options options;
  bool has_target = false;
  bool has_provider_channels = false;
  arg_cursor cursor(args);
  while (cursor.next()) {
    const auto& name = cursor.name();
    if (name == "--help") {
      cursor.flag();
      options.help = true;
    } else if (name == "--target") {
      options.target = loopback_only(name, cursor.value());
      has_target = true;
    } else if (name == "--events") {
      options.events = parse_count(name, cursor.value(), 1, 10'000'000);
    } else if (name == "--users") {
      options.users = parse_count(name, cursor.value(), 1, 10'000'000);
    } else if (name == "--channels") {
      options.channels = parse_name_list(name, cursor.value());
    } else if (name == "--duplicate-ratio") {
      options.duplicate_ratio = parse_rate(name, cursor.value());
    } else if (name == "--late-duplicates") {
      options.late_duplicates = parse_rate(name, cursor.value());
    } else if (name == "--concurrency") {
      options.concurrency = static_cast<unsigned>(parse_count(name, cursor.value(), 1, 256));
    } else if (name == "--provider") {
      options.provider = loopback_only(name, cursor.value());
    } else if (name == "--provider-channels") {
      options.provider_channels = parse_name_list(name, cursor.value());
      has_provider_channels = true;
    } else if (name == "--reset-provider") {
      cursor.flag();
      options.reset_provider = true;
    } else if (name == "--drain-timeout-s") {
      options.drain_timeout = std::chrono::seconds(parse_count(name, cursor.value(), 1, 86400));
    } else if (name == "--request-timeout-ms") {
      options.request_timeout =
          std::chrono::milliseconds(parse_count(name, cursor.value(), 10, 600'000));
    } else if (name == "--json") {
      cursor.flag();
      options.json = true;
    } else if (name == "--biz-prefix") {
      options.biz_prefix = validated_prefix(cursor.value());
    } else if (name == "--to-from-channel") {
      cursor.flag();
      options.to_from_channel = true;
    } else if (name == "--seed") {
      options.seed = parse_count(name, cursor.value(), 0, UINT64_MAX);
    } else {
      throw usage_error("unknown option " + name + " (see herald load --help)");
    }
  }
  if (options.help)
    return options;
  if (!has_target)
    throw usage_error("load needs --target HOST:PORT");
  if (has_provider_channels && !options.provider)
    throw usage_error("--provider-channels needs --provider");
  if (options.reset_provider && !options.provider)
    throw usage_error("--reset-provider needs --provider");
  if (!has_provider_channels)
    options.provider_channels = options.channels;
  return options;
}

std::string load_usage() {
  return R"(herald load --target HOST:PORT [options]
  Submits events to a running herald, waits for the drain and checks the invariants.
  --target HOST:PORT        herald's HTTP address (loopback only)
  --events N                distinct events (default 1000)
  --users U                 events go to users u-(i % U) (default 100)
  --channels LIST           channels of every event (default sms,wechat,app)
  --duplicate-ratio R       share of events resubmitted at a random later moment (default 0.1)
  --late-duplicates R2      share of events resubmitted after the drain (default 0.05)
  --concurrency C           keep-alive connections (default 8)
  --provider HOST:PORT      the sim-provider to check deliveries against (loopback only)
  --provider-channels LIST  channels routed to that provider (default: --channels)
  --reset-provider          POST /calls/reset to the provider before the run
  --drain-timeout-s S       bound of the drain and of retrying one request (default 120)
  --request-timeout-ms N    bound of one HTTP exchange (default 10000)
  --biz-prefix P            biz_id prefix (default load-<unix seconds>-)
  --to-from-channel         recipients "<channel>:<user>" instead of channel-shaped ones
  --seed N                  seed of the plan (default 1)
  --json                    one JSON object on stdout instead of the report
  Exit: 0 every invariant holds, 1 a violation, 2 bad usage.
)";
}

} // namespace herald::tools
