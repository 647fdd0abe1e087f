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

/// Adds the comma-separated HOST:PORT list `text` (one address or several) to `targets`; an
/// address given twice is refused.
void add_targets(std::string_view option, std::string_view text, std::vector<host_port>& targets) {
  std::size_t start = 0;
  while (true) {
    auto end = text.find(',', start);
    auto item =
        loopback_only(option, text.substr(start, end == std::string_view::npos ? text.size() - start
                                                                               : end - start));
    for (const auto& known : targets)
      if (known.to_string() == item.to_string())
        throw usage_error(std::string(option) + " names " + item.to_string() + " twice");
    targets.push_back(std::move(item));
    if (end == std::string_view::npos)
      return;
    start = end + 1;
  }
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

/// "sms:app,wechat:sms" -> {sms: app, wechat: sms}.
std::map<std::string, std::string> parse_fallbacks(std::string_view option, std::string_view text) {
  std::map<std::string, std::string> fallbacks;
  std::size_t start = 0;
  while (true) {
    auto end = text.find(',', start);
    auto pair =
        text.substr(start, end == std::string_view::npos ? text.size() - start : end - start);
    auto colon = pair.find(':');
    // Each side must be one name: no list separator, no second colon.
    auto is_name = [&](std::string_view side) {
      return !side.empty() && side.find(':') == std::string_view::npos &&
             parse_name_list(option, side).size() == 1;
    };
    bool valid = false;
    try {
      valid = colon != std::string_view::npos && is_name(pair.substr(0, colon)) &&
              is_name(pair.substr(colon + 1));
    } catch (const usage_error&) {
    }
    if (!valid)
      throw usage_error(std::string(option) + " wants CHANNEL:FALLBACK[,...], got '" +
                        std::string(pair) + "'");
    std::string channel(pair.substr(0, colon));
    std::string fallback(pair.substr(colon + 1));
    if (channel == fallback || !fallbacks.emplace(channel, fallback).second)
      throw usage_error(std::string(option) + ": '" + channel + "' falls back to itself or twice");
    if (end == std::string_view::npos)
      return fallbacks;
    start = end + 1;
  }
}

} // namespace

load_options parse_load_args(const std::vector<std::string>& args) {
  load_options options;
  option_parser parser("load");
  parser
      .value("--target",
             [&](const auto& name, const auto& v) { add_targets(name, v, options.targets); })
      .value("--events",
             [&](const auto& name, const auto& v) {
               options.events = parse_count(name, v, 1, 10'000'000);
             })
      .value("--users", [&](const auto& name,
                            const auto& v) { options.users = parse_count(name, v, 1, 10'000'000); })
      .value("--channels",
             [&](const auto& name, const auto& v) { options.channels = parse_name_list(name, v); })
      .value(
          "--duplicate-ratio",
          [&](const auto& name, const auto& v) { options.duplicate_ratio = parse_rate(name, v); })
      .value(
          "--late-duplicates",
          [&](const auto& name, const auto& v) { options.late_duplicates = parse_rate(name, v); })
      .value("--concurrency",
             [&](const auto& name, const auto& v) {
               options.concurrency = static_cast<unsigned>(parse_count(name, v, 1, 256));
             })
      .value("--rate", [&](const auto& name,
                           const auto& v) { options.rate = parse_count(name, v, 1, 1'000'000); })
      .value("--batch",
             [&](const auto& name, const auto& v) {
               options.batch = static_cast<std::size_t>(parse_count(name, v, 1, 1000));
             })
      .value("--provider",
             [&](const auto& name, const auto& v) { options.provider = loopback_only(name, v); })
      .value("--provider-channels",
             [&](const auto& name, const auto& v) {
               options.provider_channels = parse_name_list(name, v);
             })
      .flag("--reset-provider", options.reset_provider)
      .value("--receipt-channels",
             [&](const auto& name, const auto& v) {
               options.receipt_channels = parse_name_list(name, v);
             })
      .value("--fallbacks",
             [&](const auto& name, const auto& v) { options.fallbacks = parse_fallbacks(name, v); })
      .value("--settle-s",
             [&](const auto& name, const auto& v) {
               options.settle_timeout = std::chrono::seconds(parse_count(name, v, 1, 86400));
             })
      .value("--drain-timeout-s",
             [&](const auto& name, const auto& v) {
               options.drain_timeout = std::chrono::seconds(parse_count(name, v, 1, 86400));
             })
      .value("--request-timeout-ms",
             [&](const auto& name, const auto& v) {
               options.request_timeout =
                   std::chrono::milliseconds(parse_count(name, v, 10, 600'000));
             })
      .flag("--json", options.json)
      .value("--biz-prefix",
             [&](const auto&, const auto& v) { options.biz_prefix = validated_prefix(v); })
      .flag("--to-from-channel", options.to_from_channel)
      .value("--seed", [&](const auto& name, const auto& v) {
        options.seed = parse_count(name, v, 0, UINT64_MAX);
      });
  parser.parse(args);
  options.help = parser.help();
  if (options.help)
    return options;
  if (!parser.seen("--target"))
    throw usage_error("load needs --target HOST:PORT");
  const bool has_provider_channels = parser.seen("--provider-channels");
  if (has_provider_channels && !options.provider)
    throw usage_error("--provider-channels needs --provider");
  if (options.reset_provider && !options.provider)
    throw usage_error("--reset-provider needs --provider");
  if (options.rate && !parser.seen("--concurrency"))
    options.concurrency = open_loop_concurrency;
  if (!has_provider_channels)
    options.provider_channels = options.channels;
  return options;
}

std::string targets_text(const std::vector<host_port>& targets) {
  std::string text;
  for (const auto& target : targets)
    text += (text.empty() ? "" : ",") + target.to_string();
  return text;
}

std::string load_usage() {
  return R"(herald load --target HOST:PORT[,HOST:PORT...] [options]
  Submits events to a running herald, waits for the drain and checks the invariants.
  --target HOST:PORT        herald's HTTP address (loopback only). Repeated, or a comma-
                            separated list: the nodes of one cluster (one database). Request
                            i goes to target i mod N; a request a target does not answer
                            (connection refused or lost) goes to the next one at once, and
                            waits for the backoff only when every target failed in a row.
                            Messages and /v1/stats are read from any target that answers;
                            per-node figures (/metrics) are summed over the targets that
                            answer, a node down at a reading counting with its last one
  --events N                distinct events (default 1000)
  --users U                 events go to users u-(i % U) (default 100)
  --channels LIST           channels of every event (default sms,wechat,app)
  --duplicate-ratio R       share of events resubmitted at a random later moment (default 0.1)
  --late-duplicates R2      share of events resubmitted after the drain (default 0.05)
  --concurrency C           keep-alive connections, one thread each, 1-256 (default 8;
                            64 with --rate)
  --rate N                  open loop: N requests/s on a fixed schedule (request i due at
                            start + i/N) whatever the answers; latency counts from the due
                            time. A request no connection was free for starts late and is
                            counted ("late starts"): then the figures are no longer open-loop
                            and --concurrency must be raised. Default: closed loop
  --batch K                 send the events through POST /v1/messages/batch, K (1-1000) per
                            request; --rate then counts batch requests
  --provider HOST:PORT      the sim-provider to check deliveries against (loopback only)
  --provider-channels LIST  channels routed to that provider (default: --channels)
  --reset-provider          POST /calls/reset to the provider before the run
  --receipt-channels LIST   channels that give receipts (a receipt_window in herald's
                            config): SENT is not an end state there; after the drain the run
                            waits for receipts and the reconciler, then checks end_state
  --settle-s S              bound of that wait (default 300; longer than the receipt window)
  --fallbacks LIST          CHANNEL:FALLBACK pairs as herald is configured (e.g. sms:app):
                            an UNDELIVERED task must leave a task on its fallback
  --drain-timeout-s S       bound of the drain and of retrying one request (default 120)
  --request-timeout-ms N    bound of one HTTP exchange (default 10000)
  --biz-prefix P            biz_id prefix (default load-<unix seconds>-)
  --to-from-channel         recipients "<channel>:<user>" instead of channel-shaped ones
  --seed N                  seed of the plan (default 1)
  --json                    one JSON object on stdout instead of the report
  Rates: accepted POSTs/s and tasks/s from the first submission to the last accepted answer;
  delivered tasks/s from herald's GET /metrics herald_provider_calls_total{outcome="success"},
  read every 250 ms from before the run until it reaches the accepted tasks or stops growing:
  successes / (first submission -> the reading that showed the last one). The drain reads
  every message afterwards (the correctness half); it enters no rate. Latency p50/p99/p999/max
  of the POST answers (per batch request with --batch).
  At the end it reads GET /v1/stats over the run's window and checks its counts against the
  messages (stats_match; a herald without /v1/stats is reported "stats: not available"; the
  window must hold no other tasks), and reports herald_receipts_total and
  herald_reconciled_total next to the provider's GET /stats (receipts dropped, requests left
  without any receipt: what herald had to reconcile).
  Exit: 0 every invariant holds, 1 a violation, 2 bad usage.
)";
}

} // namespace herald::tools
