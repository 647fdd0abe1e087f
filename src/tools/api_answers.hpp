#pragma once

#include "tools/invariant_checker.hpp"

#include <optional>
#include <string_view>

namespace herald::tools {

/// Reads a 2xx answer of POST /v1/messages ({"message_id","tasks":[{"task_id","channel",
/// "duplicate"}]}); nullopt when it is not that shape. `event`, `late` and `status` are left
/// for the caller.
std::optional<accepted_answer> parse_submit_answer(std::string_view body);

/// Reads GET /v1/messages/{id} (found = true); nullopt when it is not that shape.
std::optional<observed_message> parse_message_view(std::string_view body);

/// Reads the sim-provider's GET /calls/summary and GET /calls/ids answers.
std::optional<provider_observation> parse_provider_records(std::string_view summary,
                                                           std::string_view ids);

} // namespace herald::tools
