#pragma once

#include "tools/invariant_checker.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herald::tools {

/// Reads a 2xx answer of POST /v1/messages ({"message_id","tasks":[{"task_id","channel",
/// "duplicate"}]}); nullopt when it is not that shape. `event`, `late` and `status` are left
/// for the caller.
std::optional<accepted_answer> parse_submit_answer(std::string_view body);

/// One item's result in a 200 answer of POST /v1/messages/batch.
struct batch_item_result {
  int status = 0; ///< the HTTP status the item would have had on its own
  /// For a 2xx: the item read as parse_submit_answer reads a single answer (nullopt when it is
  /// not that shape). `event`, `late` and `status` are left for the caller.
  std::optional<accepted_answer> answer;
  std::string error_code; ///< error.code of a rejected item ("" when absent)
};

/// Reads a 200 answer of POST /v1/messages/batch ({"results":[{"status",…}…]}) sent with
/// `items` messages; nullopt unless it holds exactly `items` results, each with a status.
std::optional<std::vector<batch_item_result>> parse_batch_answer(std::string_view body,
                                                                 std::size_t items);

/// Reads GET /v1/messages/{id} (found = true); nullopt when it is not that shape.
std::optional<observed_message> parse_message_view(std::string_view body);

/// Reads GET /v1/stats ({"channels":[{"channel","accepted",<state>…}],"total":{…}}); state
/// fields are lower-case there and upper-case in the result (every state present, 0 when
/// absent). nullopt when it is not that shape.
std::optional<herald_stats> parse_stats_answer(std::string_view body);

/// What the sim-provider's GET /stats says about receipts.
struct provider_receipt_stats {
  bool posting = false;              ///< it was started with --receipt-to
  std::uint64_t requests = 0;        ///< provider request ids it accepted
  std::uint64_t without_receipt = 0; ///< of them, none of whose receipts herald acknowledged
  std::uint64_t receipts_pending = 0;
  std::uint64_t planned = 0;
  std::uint64_t dropped = 0;
  std::uint64_t duplicated = 0;
  std::uint64_t acknowledged = 0;
  std::uint64_t failed = 0;
  std::uint64_t max_lag_ms = 0; ///< how late its senders took up a receipt at worst
  std::map<std::string, std::uint64_t> statuses; ///< the truth per request id, by status
};

/// Reads the sim-provider's GET /stats; nullopt when it is not that shape (an older one).
std::optional<provider_receipt_stats> parse_provider_stats(std::string_view body);

/// Reads the sim-provider's GET /calls/summary and GET /calls/ids answers.
std::optional<provider_observation> parse_provider_records(std::string_view summary,
                                                           std::string_view ids);

} // namespace herald::tools
