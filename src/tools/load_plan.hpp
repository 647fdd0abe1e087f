#pragma once

#include "tools/load_config.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace herald::tools {

/// One business event: its request body never changes, so every resubmission is identical.
struct load_event {
  std::string biz_id;
  std::string user_id;
  std::string body; ///< the POST /v1/messages JSON
};

/// One POST of the live phase.
struct planned_submission {
  std::size_t event = 0;
  bool resubmission = false;
};

/// Everything the run sends, decided up front from the seed.
struct load_plan {
  std::vector<load_event> events;
  /// Originals in event order, each resubmission at a random later position.
  std::vector<planned_submission> live;
  /// Events resubmitted once more after the drain (ascending).
  std::vector<std::size_t> late;
};

/// A plausible recipient: a phone number for sms, an openid for wechat, a device token for
/// app, an address for email; "<channel>:<user>" for anything else or when `generic`.
std::string recipient_for(const std::string& channel, std::size_t user_index, bool generic);

/// The request body of event `index`.
std::string event_body(const load_options& options, std::size_t index);

/// round(ratio * events) distinct event indexes, chosen by `seed`, ascending.
std::vector<std::size_t> choose_events(std::size_t events, double ratio, std::uint64_t seed);

load_plan make_load_plan(const load_options& options);

/// The POST /v1/messages/batch body for `events` (indexes into plan.events, 1..1000 of them):
/// {"messages":[<each event's POST /v1/messages body, byte for byte>, …]} in that order.
std::string batch_body(const load_plan& plan, const std::vector<std::size_t>& events);

} // namespace herald::tools
