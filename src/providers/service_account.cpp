#include "providers/service_account.hpp"

#include <utility>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace herald::providers {
namespace {

constexpr std::int64_t assertion_lifetime_seconds = 3600;

/// Reads the required string fields of a key file, keeping the reason the first one that is
/// missing, not a string or empty was refused for; later reads then return "".
class required_fields {
public:
  explicit required_fields(const boost::json::object& file) : file_(file) {}

  std::string text(std::string_view name) {
    if (!problem_.empty())
      return {};
    const auto* value = file_.if_contains(name);
    if (!value)
      problem_ = std::string(name) + " is missing";
    else if (!value->is_string())
      problem_ = std::string(name) + " must be a string";
    else if (value->get_string().empty())
      problem_ = std::string(name) + " is empty";
    else
      return std::string(value->get_string());
    return {};
  }

  /// Why a field was refused; "" while none was.
  const std::string& problem() const { return problem_; }

private:
  const boost::json::object& file_;
  std::string problem_;
};

/// "http://" or "https://", a host, and no white space or control characters: enough to tell a
/// URL from a mistake; the HTTP client says the rest when it connects.
bool is_http_url(std::string_view url) {
  for (const std::string_view scheme : {"https://", "http://"}) {
    if (url.substr(0, scheme.size()) != scheme)
      continue;
    const std::string_view rest = url.substr(scheme.size());
    if (rest.empty() || rest.front() == '/' || rest.front() == ':')
      return false;
    for (const char c : rest)
      if (static_cast<unsigned char>(c) <= ' ' || c == '\x7f')
        return false;
    return true;
  }
  return false;
}

std::optional<service_account> refuse(std::string* problem, std::string reason) {
  if (problem)
    *problem = std::move(reason);
  return std::nullopt;
}

} // namespace

std::optional<service_account> parse_service_account(std::string_view json, std::string* problem) {
  boost::system::error_code error;
  const boost::json::value document = boost::json::parse(json, error);
  if (error)
    return refuse(problem, "not valid JSON (" + error.message() + ")");
  if (!document.is_object())
    return refuse(problem, "not a JSON object");
  const auto& file = document.get_object();

  required_fields fields(file);
  const std::string type = fields.text("type");
  if (fields.problem().empty() && type != "service_account")
    return refuse(problem, "type must be \"service_account\"");
  std::string project_id = fields.text("project_id");
  std::string private_key_id = fields.text("private_key_id");
  std::string client_email = fields.text("client_email");
  std::string token_uri = fields.text("token_uri");
  const std::string pem = fields.text("private_key");
  if (!fields.problem().empty())
    return refuse(problem, fields.problem());
  if (!is_http_url(token_uri))
    return refuse(problem, "token_uri must be an http:// or https:// URL");
  std::string reason;
  auto key = load_private_key(pem, key_kind::rsa, &reason);
  if (!key)
    return refuse(problem, "private_key: " + reason);
  return service_account{std::move(project_id), std::move(private_key_id), std::move(client_email),
                         std::move(token_uri), std::move(*key)};
}

std::string oauth_assertion(const service_account& account, std::int64_t now_unix,
                            std::string_view scope) {
  return sign_jwt(account.private_key, {{"typ", "JWT"}, {"kid", account.private_key_id}},
                  {{"iss", account.client_email},
                   {"scope", scope},
                   {"aud", account.token_uri},
                   {"iat", now_unix},
                   {"exp", now_unix + assertion_lifetime_seconds}});
}

} // namespace herald::providers
