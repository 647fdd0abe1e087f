#include "tools/unverified_jwt.hpp"

#include "providers/jwt.hpp"

#include <boost/json/parse.hpp>

namespace herald::tools {
namespace {

std::optional<boost::json::object> json_object(std::string_view base64url) {
  const auto text = providers::base64url_decode(base64url);
  if (!text)
    return std::nullopt;
  boost::system::error_code error;
  auto value = boost::json::parse(*text, error);
  if (error || !value.is_object())
    return std::nullopt;
  return std::move(value.as_object());
}

} // namespace

std::optional<unverified_jwt> read_unverified_jwt(std::string_view token) {
  const auto first = token.find('.');
  const auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos)
    return std::nullopt;
  const auto signature = providers::base64url_decode(token.substr(second + 1));
  auto header = json_object(token.substr(0, first));
  auto claims = json_object(token.substr(first + 1, second - first - 1));
  if (!signature || signature->empty() || !header || !claims)
    return std::nullopt;
  return unverified_jwt{std::move(*header), std::move(*claims)};
}

} // namespace herald::tools
