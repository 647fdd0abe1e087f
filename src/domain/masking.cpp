#include "domain/masking.hpp"

#include "domain/utf8.hpp"

#include <algorithm>
#include <array>

namespace herald::domain {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool is_alnum(char c) {
  return is_digit(c) || is_alpha(c);
}

bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool starts_with_ci(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), text.begin(),
                                                    [](char p, char t) { return p == lower(t); });
}

bool looks_like_phone(std::string_view text) {
  // ^\+?[0-9 ()-]{6,}$
  if (!text.empty() && text.front() == '+')
    text.remove_prefix(1);
  return text.size() >= 6 && std::all_of(text.begin(), text.end(), [](char c) {
           return is_digit(c) || c == ' ' || c == '(' || c == ')' || c == '-';
         });
}

constexpr std::size_t min_secret_length = 24;

/// A random-looking run of base64 / base64url / hex: long, with digits and letters, and
/// either mixed case or a long hex stretch. Words and identifiers ("Service-Unavailable",
/// "connection_refused") have no digits or no such stretch.
bool looks_like_secret(std::string_view run) {
  if (run.size() < min_secret_length)
    return false;
  bool digit = false, upper = false, lower_case = false;
  std::size_t hex_stretch = 0, longest_hex = 0;
  for (char c : run) {
    digit = digit || is_digit(c);
    upper = upper || (c >= 'A' && c <= 'Z');
    lower_case = lower_case || (c >= 'a' && c <= 'z');
    hex_stretch = is_hex(c) ? hex_stretch + 1 : 0;
    longest_hex = std::max(longest_hex, hex_stretch);
  }
  return digit && (upper || lower_case) &&
         ((upper && lower_case) || longest_hex >= min_secret_length);
}

bool is_secret_char(char c) {
  return is_alnum(c) || c == '+' || c == '/' || c == '=' || c == '_' || c == '-';
}

bool is_email_local_char(char c) {
  return is_alnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
}

bool is_email_domain_char(char c) {
  return is_alnum(c) || c == '.' || c == '-';
}

bool is_value_end(char c) {
  return c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '&' || c == ',' || c == ';' ||
         c == '}' || c == ')';
}

/// Names whose value is a credential, wherever they appear in a key ("api_key", "X-Token").
bool names_a_credential(std::string_view key) {
  static constexpr std::array<std::string_view, 7> words = {
      "token", "secret", "password", "passwd", "key", "signature", "auth"};
  std::string lowered(key);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), lower);
  return std::any_of(words.begin(), words.end(), [&](std::string_view word) {
    return lowered.find(word) != std::string::npos;
  });
}

/// Valid UTF-8 without control characters: anything else becomes '?' (a database refuses
/// NUL and invalid UTF-8, and a stored newline would split log lines).
std::string printable_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    const auto byte = static_cast<unsigned char>(text[i]);
    if (length == 0 || byte < 0x20 || byte == 0x7F) {
      out += '?';
      i += length == 0 ? 1 : length;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

/// Cuts `text` to at most `max_bytes` without splitting a UTF-8 sequence; "..." marks a cut.
void truncate_utf8(std::string& text, std::size_t max_bytes) {
  if (text.size() <= max_bytes)
    return;
  constexpr std::string_view ellipsis = "...";
  const bool marked = max_bytes > ellipsis.size();
  std::size_t cut = marked ? max_bytes - ellipsis.size() : max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;
  text.resize(cut);
  if (marked)
    text += ellipsis;
}

/// Rewrites free text one recognised piece at a time.
class free_text_masker {
public:
  explicit free_text_masker(std::string_view text) : text_(text) {}

  std::string run() {
    while (i_ < text_.size()) {
      if (at_word_start() &&
          (url() || credential_scheme() || key_value() || email() || phone() || secret()))
        continue;
      plain();
    }
    return std::move(out_);
  }

private:
  std::string_view rest() const { return text_.substr(i_); }

  bool at_word_start() const { return i_ == 0 || !is_alnum(text_[i_ - 1]); }

  std::size_t scan(std::size_t from, bool (*accept)(char)) const {
    while (from < text_.size() && accept(text_[from]))
      ++from;
    return from;
  }

  bool url() {
    if (!starts_with_ci(rest(), "http://") && !starts_with_ci(rest(), "https://"))
      return false;
    const std::size_t end = scan(i_, [](char c) {
      return c != ' ' && c != '\t' && c != '"' && c != '\'' && c != '<' && c != '>';
    });
    out_ += mask_url(text_.substr(i_, end - i_));
    i_ = end;
    return true;
  }

  /// "Bearer <token>" and "Basic <credentials>".
  bool credential_scheme() {
    for (std::string_view scheme : {"bearer ", "basic "}) {
      if (!starts_with_ci(rest(), scheme))
        continue;
      std::size_t value = scan(i_ + scheme.size(), [](char c) { return c == ' '; });
      const std::size_t end = scan(value, [](char c) { return !is_value_end(c); });
      if (end == value)
        return false;
      out_.append(text_.substr(i_, value - i_));
      out_ += "***";
      i_ = end;
      return true;
    }
    return false;
  }

  /// token=abc, "api_key": "abc", secret: abc.
  bool key_value() {
    const std::size_t key_end =
        scan(i_, [](char c) { return is_alnum(c) || c == '_' || c == '-' || c == '.'; });
    if (key_end == i_ || !names_a_credential(text_.substr(i_, key_end - i_)))
      return false;
    std::size_t at = key_end;
    if (at < text_.size() && text_[at] == '"')
      ++at;
    at = scan(at, [](char c) { return c == ' '; });
    if (at >= text_.size() || (text_[at] != '=' && text_[at] != ':'))
      return false;
    at = scan(at + 1, [](char c) { return c == ' '; });
    if (at < text_.size() && (text_[at] == '"' || text_[at] == '\''))
      ++at;
    out_.append(text_.substr(i_, at - i_));
    i_ = at;
    // "Authorization: Bearer x": the scheme stays readable, credential_scheme() masks x.
    if (credential_scheme())
      return true;
    const std::size_t end = scan(at, [](char c) { return !is_value_end(c); });
    if (end > at)
      out_ += "***";
    i_ = end;
    return true;
  }

  bool email() {
    const std::size_t at = scan(i_, is_email_local_char);
    if (at == i_ || at >= text_.size() || text_[at] != '@')
      return false;
    std::size_t end = scan(at + 1, is_email_domain_char);
    while (end > at + 1 && text_[end - 1] == '.')
      --end; // a sentence's full stop is not part of the domain
    const auto domain = text_.substr(at + 1, end - at - 1);
    if (domain.find('.') == std::string_view::npos)
      return false;
    out_ += mask_email(text_.substr(i_, end - i_));
    i_ = end;
    return true;
  }

  /// 7 to 15 digits (E.164 has at most 15), optionally after '+', grouped by spaces, dashes
  /// or parentheses.
  bool phone() {
    std::size_t at = i_;
    if (!is_digit(text_[at]) && text_[at] != '+' && text_[at] != '(')
      return false;
    if (text_[at] == '+')
      ++at;
    std::string digits;
    std::size_t end = at;
    for (; at < text_.size(); ++at) {
      const char c = text_[at];
      if (is_digit(c)) {
        digits += c;
        end = at + 1;
      } else if (c != ' ' && c != '-' && c != '(' && c != ')') {
        break;
      }
    }
    if (digits.size() < 7 || digits.size() > 15 || (end < text_.size() && is_alnum(text_[end])))
      return false;
    out_ += "***";
    out_ += digits.substr(digits.size() - 4);
    i_ = end;
    return true;
  }

  bool secret() {
    const std::size_t end = scan(i_, is_secret_char);
    if (!looks_like_secret(text_.substr(i_, end - i_)))
      return false;
    out_ += "***";
    i_ = end;
    return true;
  }

  /// A word is copied whole, so a rule never starts in the middle of one.
  void plain() {
    const std::size_t end = is_alnum(text_[i_]) ? scan(i_, is_alnum) : i_ + 1;
    out_.append(text_.substr(i_, end - i_));
    i_ = end;
  }

  std::string_view text_;
  std::size_t i_ = 0;
  std::string out_;
};

} // namespace

std::string mask_phone(std::string_view phone) {
  std::string digits;
  for (char c : phone)
    if (is_digit(c))
      digits += c;
  if (phone.size() < 8 || digits.size() < 4)
    return "***";
  return "***" + digits.substr(digits.size() - 4);
}

std::string mask_email(std::string_view email) {
  const std::size_t at = email.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == email.size())
    return "***";
  std::string out(1, email.front());
  out += "***@";
  out += email.substr(at + 1);
  return out;
}

std::string mask_token(std::string_view token) {
  if (token.size() <= 4)
    return "***";
  std::string out(token.substr(0, 3));
  out += "***(";
  out += std::to_string(token.size());
  out += ')';
  return out;
}

std::string mask_recipient(std::string_view recipient) {
  if (recipient.find('@') != std::string_view::npos)
    return mask_email(recipient);
  if (looks_like_phone(recipient))
    return mask_phone(recipient);
  return mask_token(recipient);
}

std::string mask_url(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  const std::size_t authority = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  const std::size_t path = std::min(url.find_first_of("/?#", authority), url.size());
  const std::size_t query = std::min(url.find_first_of("?#", path), url.size());
  const std::size_t fragment = std::min(url.find('#', query), url.size());

  std::string out(url.substr(0, authority));
  const auto host = url.substr(authority, path - authority);
  const std::size_t at = host.rfind('@');
  if (at != std::string_view::npos)
    out += "***@";
  out += host.substr(at == std::string_view::npos ? 0 : at + 1);

  // Path segments can be secrets too (chat webhooks put their token there).
  for (std::size_t segment = path; segment < query;) {
    const std::size_t next = std::min(url.find('/', segment + 1), query);
    const auto text = url.substr(segment, next - segment); // starts with '/'
    out += looks_like_secret(text.substr(1)) ? "/***" : std::string(text);
    segment = next;
  }
  for (std::size_t pair = query; pair < fragment;) {
    const std::size_t next = std::min(url.find('&', pair + 1), fragment);
    const auto text = url.substr(pair, next - pair); // starts with '?' or '&'
    const std::size_t equals = text.find('=');
    if (equals != std::string_view::npos)
      out.append(text.substr(0, equals + 1)) += "***";
    else
      out += looks_like_secret(text.substr(1)) ? std::string(1, text.front()) + "***"
                                               : std::string(text);
    pair = next;
  }
  if (fragment + 1 < url.size())
    out += "#***";
  else
    out.append(url.substr(fragment));
  return out;
}

std::string mask_free_text(std::string_view text, std::size_t max_bytes) {
  const auto printable = printable_utf8(text);
  auto out = free_text_masker(printable).run();
  truncate_utf8(out, max_bytes);
  return out;
}

} // namespace herald::domain
