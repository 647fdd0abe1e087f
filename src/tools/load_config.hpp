#pragma once

#include "tools/cli_args.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace herald::tools {

struct load_options {
  /// herald's HTTP addresses: one node, or several nodes of one cluster (one database). Each
  /// request goes to the next target in turn, and to the one after it when a target does not
  /// answer; what is read afterwards is read from any target that answers, and per-node metrics
  /// are summed over the targets.
  std::vector<host_port> targets;
  std::uint64_t events = 1000;
  std::uint64_t users = 100;
  std::vector<std::string> channels{"sms", "wechat", "app"};
  double duplicate_ratio = 0.1;  ///< events resubmitted once during the run
  double late_duplicates = 0.05; ///< events resubmitted once after the drain
  unsigned concurrency = 8;      ///< connections; open_loop_concurrency with --rate unless given
  /// Open loop: requests per second on a fixed schedule (request i due at start + i / rate),
  /// sent whether or not earlier answers came back. Unset: closed loop, each connection sends
  /// its next request when the last one was answered.
  std::optional<std::uint64_t> rate;
  /// Events per POST /v1/messages/batch request; 0: one POST /v1/messages per event.
  std::size_t batch = 0;
  std::optional<host_port> provider;
  /// Channels whose tasks go to the sim-provider (checked against it); all channels unless
  /// --provider-channels says otherwise.
  std::vector<std::string> provider_channels;
  bool reset_provider = false;
  /// Channels configured with a receipt window: their tasks are not done at SENT, so the run
  /// waits (--settle-s) for receipts or the reconciler and checks the end state.
  std::vector<std::string> receipt_channels;
  /// Channel -> fallback channel, as herald is configured: an UNDELIVERED task must fail over.
  std::map<std::string, std::string> fallbacks;
  std::chrono::seconds settle_timeout{300};
  std::chrono::seconds drain_timeout{120};
  std::chrono::milliseconds request_timeout{10000};
  bool json = false;
  std::string biz_prefix; ///< "load-<unix seconds>-" unless given
  bool to_from_channel = false;
  std::uint64_t seed = 1;
  bool help = false;
};

/// Parses the arguments after `herald load`; throws usage_error (also for non-loopback
/// addresses: the tool is for local load tests only).
/// --concurrency's default with --rate: enough connections for the schedule while answers
/// take up to 64 / rate seconds.
constexpr unsigned open_loop_concurrency = 64;

load_options parse_load_args(const std::vector<std::string>& args);

/// The targets as given on the command line: "127.0.0.1:8081,127.0.0.1:8082".
std::string targets_text(const std::vector<host_port>& targets);

std::string load_usage();

} // namespace herald::tools
