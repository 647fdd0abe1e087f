#pragma once

#include <string>
#include <string_view>

namespace herald::api {

/// The trace-id part of a W3C `traceparent` header ("00-<32 hex>-<16 hex>-<2 hex>"); empty
/// when the header is malformed or the id is all zeros.
std::string trace_id_from_traceparent(std::string_view header);

/// Whether an `X-Request-Id` value may be used as a trace id: 1..64 characters from
/// [A-Za-z0-9._:-], so it can go into logs and headers unescaped.
bool is_safe_request_id(std::string_view value);

/// The trace id of a request: from `traceparent` if valid, else `X-Request-Id` if safe, else a
/// fresh one (log::new_trace_id()).
std::string choose_trace_id(std::string_view traceparent, std::string_view request_id);

} // namespace herald::api
