#pragma once

#include "tools/call_record.hpp"
#include "tools/cli_args.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace herald::tools {

/// How often the simulated provider misbehaves. The rates are disjoint slices of one draw and
/// add up to at most 1; the rest succeeds.
struct fault_profile {
  double fail_rate = 0;      ///< 503, not processed (retryable)
  double timeout_rate = 0;   ///< processed, answer never sent
  double permanent_rate = 0; ///< 400, not processed (permanent)

  /// The outcome for one uniform draw `u` in [0, 1).
  call_outcome choose(double u) const;
};

/// Where herald takes receipts: `http://HOST:PORT[/prefix]`, loopback only. Receipts go to
/// `{prefix}/v1/receipts/{channel}`.
struct receipt_target {
  host_port server;
  std::string path_prefix; ///< "" or "/prefix" (no trailing slash)

  std::string to_string() const;
};

/// Parses --receipt-to; throws usage_error for anything but a loopback http:// URL.
receipt_target parse_receipt_target(std::string_view option, std::string_view text);

/// How the simulated provider reports on what it accepted: what it decides happened to each
/// message (delivered, undelivered, read) and how faithfully it tells herald. The outcome
/// rates apply with or without receipts (status queries tell the same truth); the rest only
/// matters with `to`.
struct receipt_profile {
  std::optional<receipt_target> to;        ///< nullopt: no receipts are posted
  std::string secret;                      ///< "whsec_…", the channel's receipt_secret
  std::chrono::milliseconds delay{100};    ///< from an accepted send to its delivered receipt
  std::chrono::milliseconds reorder{0};    ///< each copy waits up to this much longer, at random
  double drop_rate = 0;                    ///< share of receipts never sent
  double duplicate_rate = 0;               ///< share of receipts sent 2 or 3 times
  double undelivered_rate = 0;             ///< share of messages that did not arrive
  double read_rate = 0;                    ///< share of delivered messages also read
  unsigned attempts = 8;                   ///< POSTs of one copy at most (retries with backoff)
  unsigned concurrency = 16;               ///< sender threads, one keep-alive connection each
  std::size_t queue_limit = 1'000'000;     ///< copies waiting at most; more are counted, not sent
  std::chrono::milliseconds timeout{5000}; ///< of one receipt POST
};

/// What the simulated provider speaks: herald's own webhook contract (with faults and
/// receipts), or a provider's documented API through its fake (src/tools/*_fake).
enum class sim_mode { webhook, wechat, twilio, fcm, apns, smtp };

struct sim_provider_options {
  host_port listen;
  sim_mode mode = sim_mode::webhook;
  /// The fake's credentials: WeChat's appid and AppSecret, Twilio's Account SID and auth
  /// token, FCM's service-account client_email and private_key_id, APNs' team id and key id,
  /// SMTP's AUTH user and password. Empty: the fake's defaults (SMTP: no AUTH).
  std::string account;
  std::string secret;
  std::string topic; ///< apns: the bundle id the fake accepts in apns-topic
  fault_profile faults;
  std::chrono::milliseconds latency{0}; ///< before every answer
  /// Before every status query's answer: longer than a channel's timeout_ms, every question
  /// goes without an answer (a busy provider).
  std::chrono::milliseconds status_latency{0};
  std::chrono::milliseconds hold{30000}; ///< a timed-out call's connection is dropped after this
  bool dedupe_by_id = false;
  receipt_profile receipts;
  std::uint64_t seed = 1;
  bool help = false;
};

/// Parses the arguments after `herald sim-provider`; throws usage_error.
sim_provider_options parse_sim_provider_args(const std::vector<std::string>& args);

std::string sim_provider_usage();

} // namespace herald::tools
