#pragma once

#include <optional>
#include <string_view>

#include <boost/json/object.hpp>

namespace herald::tools {

/// What a JWT says, read without checking its signature: enough for a fake provider to refuse
/// a token of the wrong shape, issuer, key id or age. Tests verify signatures with the public
/// key (tests/support/jws_test_keys.hpp).
struct unverified_jwt {
  boost::json::object header;
  boost::json::object claims;
};

/// The header and claims of a compact JWS; nullopt unless it has three base64url parts, the
/// first two JSON objects, and a non-empty signature.
std::optional<unverified_jwt> read_unverified_jwt(std::string_view token);

} // namespace herald::tools
