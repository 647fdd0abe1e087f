#pragma once

#include "providers/jwt.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace herald::providers {

/// What herald uses of a Google service-account key file, the JSON FCM HTTP v1 authenticates
/// with: the account signs a JWT assertion and trades it at `token_uri` for an access token.
struct service_account {
  std::string project_id;     ///< the FCM project messages are sent through
  std::string private_key_id; ///< "kid" of every assertion: which of the account's keys signed
  std::string client_email;   ///< the account itself; the assertions' issuer
  std::string token_uri;      ///< where assertions are traded for tokens; http:// for fakes
  signing_key private_key;    ///< RSA (RS256)
};

/// The service account in the text of its key file. nullopt, with a one-line reason in
/// `*problem` (when not null) naming the field at fault, when the text is not a JSON object,
/// "type" is not "service_account", project_id, private_key_id, client_email, token_uri or
/// private_key is missing, empty or not a string, token_uri is not an http:// or https:// URL
/// (lower-case scheme, then a host), or private_key holds no usable RSA key (load_private_key's
/// reason). No reason quotes a value, so none can leak the key. Fields herald does not use are
/// ignored.
std::optional<service_account> parse_service_account(std::string_view json, std::string* problem);

/// The signed JWT (RFC 7523) traded at the token URI for an access token: RS256, header
/// {alg, typ: "JWT", kid: private_key_id}, claims {iss: client_email, scope, aud: token_uri,
/// iat: now_unix, exp: now_unix + 3600}, an hour being the longest Google accepts. `scope` is
/// space-separated, as OAuth writes it. Throws std::runtime_error when signing fails.
std::string oauth_assertion(const service_account& account, std::int64_t now_unix,
                            std::string_view scope);

} // namespace herald::providers
