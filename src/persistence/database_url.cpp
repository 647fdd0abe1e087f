#include "persistence/task_store.hpp"

#include <cctype>
#include <stdexcept>
#include <string_view>

namespace herald::persistence {

namespace {

constexpr std::string_view expected = "expected sqlite:PATH or postgresql://user@host:port/db";

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

/// Hides what sits between "://user:" and "@", so a URL can be echoed in logs and errors.
std::string mask_password(std::string_view text) {
  auto scheme = text.find("://");
  if (scheme == std::string_view::npos)
    return std::string(text);
  auto at = text.find('@', scheme + 3);
  if (at == std::string_view::npos)
    return std::string(text);
  auto colon = text.find(':', scheme + 3);
  if (colon == std::string_view::npos || colon > at)
    return std::string(text);
  return std::string(text.substr(0, colon + 1)) + "***" + std::string(text.substr(at));
}

[[noreturn]] void reject(std::string_view text, std::string_view why) {
  throw std::invalid_argument("invalid database URL '" + mask_password(text) +
                              "': " + std::string(why));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

std::string percent_decode(std::string_view url, std::string_view part) {
  std::string out;
  for (std::size_t i = 0; i < part.size(); ++i) {
    if (part[i] != '%') {
      out.push_back(part[i]);
      continue;
    }
    if (i + 2 >= part.size() || hex_value(part[i + 1]) < 0 || hex_value(part[i + 2]) < 0)
      reject(url, "bad percent escape");
    out.push_back(static_cast<char>(hex_value(part[i + 1]) * 16 + hex_value(part[i + 2])));
    i += 2;
  }
  return out;
}

/// libpq keyword/value syntax: single-quoted, with \ and ' escaped.
void append_keyword(std::string& out, std::string_view keyword, std::string_view value) {
  if (!out.empty())
    out.push_back(' ');
  out.append(keyword).append("='");
  for (char c : value) {
    if (c == '\\' || c == '\'')
      out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('\'');
}

database_url parse_postgresql(const std::string& text, std::string_view rest) {
  database_url url;
  url.backend = database_url::kind::postgresql;

  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash + 1 == rest.size())
    reject(text, "no database name (postgresql://user@host:port/db)");
  std::string_view authority = rest.substr(0, slash);
  std::string dbname = percent_decode(text, rest.substr(slash + 1));

  std::string user, password;
  if (auto at = authority.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    if (auto colon = userinfo.find(':'); colon != std::string_view::npos) {
      password = percent_decode(text, userinfo.substr(colon + 1));
      userinfo = userinfo.substr(0, colon);
    }
    user = percent_decode(text, userinfo);
  }

  std::string_view host = authority;
  std::string_view port;
  if (starts_with(authority, "[")) { // IPv6 literal
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      reject(text, "unclosed '[' in host");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':')
        reject(text, "unexpected text after ']'");
      port = after.substr(1);
    }
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty())
    reject(text, "no host (postgresql://user@host:port/db)");
  if (!port.empty()) {
    unsigned long value = 0;
    for (char c : port) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || value > 65535)
        reject(text, "port is not a number from 1 to 65535");
      value = value * 10 + static_cast<unsigned long>(c - '0');
    }
    if (value == 0 || value > 65535)
      reject(text, "port is not a number from 1 to 65535");
  }

  append_keyword(url.connection_string, "host", percent_decode(text, host));
  if (!port.empty())
    append_keyword(url.connection_string, "port", port);
  append_keyword(url.connection_string, "dbname", dbname);
  if (!user.empty())
    append_keyword(url.connection_string, "user", user);
  if (!password.empty())
    append_keyword(url.connection_string, "password", password);
  bool masked_param = false;
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty())
      continue;
    auto eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0)
      reject(text, "query parameters must be key=value");
    std::string key = percent_decode(text, pair.substr(0, eq));
    for (char c : key)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
        reject(text, "bad query parameter name '" + key + "'");
    masked_param = masked_param || key == "password";
    append_keyword(url.connection_string, key, percent_decode(text, pair.substr(eq + 1)));
  }

  url.text = mask_password(text);
  if (masked_param) {
    auto q = url.text.find('?');
    url.text = url.text.substr(0, q) + "?***";
  }
  return url;
}

} // namespace

database_url parse_database_url(const std::string& text) {
  std::string_view view(text);
  if (starts_with(view, "sqlite:")) {
    std::string_view path = view.substr(7);
    if (path.empty())
      reject(text, "empty path (sqlite:PATH, e.g. sqlite:var/herald.db)");
    if (starts_with(path, "//"))
      reject(text,
             "use sqlite:PATH, e.g. sqlite:/var/lib/herald/herald.db or sqlite:var/herald.db");
    database_url url;
    url.backend = database_url::kind::sqlite;
    url.sqlite_path = std::string(path);
    url.text = text;
    return url;
  }
  if (starts_with(view, "postgresql://"))
    return parse_postgresql(text, view.substr(13));
  if (starts_with(view, "postgres://"))
    return parse_postgresql(text, view.substr(11));
  throw std::invalid_argument("unsupported database URL '" + mask_password(text) +
                              "': " + std::string(expected));
}

} // namespace herald::persistence
