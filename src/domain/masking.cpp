#include "domain/masking.hpp"

#include "domain/utf8.hpp"

#include <algorithm>
#include <array>
#include <utility>

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

int hex_value(char c) {
  if (is_digit(c))
    return c - '0';
  c = lower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/// The number `text` spells in base `base` (10 or 16); -1 when it is empty, longer than five
/// characters or no such number.
long number_in(std::string_view text, int base) {
  if (text.empty() || text.size() > 5)
    return -1;
  long value = 0;
  for (char c : text) {
    const int digit = base == 16 ? hex_value(c) : (is_digit(c) ? c - '0' : -1);
    if (digit < 0)
      return -1;
    value = value * base + digit;
  }
  return value;
}

/// One escaped character at text[i]: its byte and the length of the escape, or length 0.
/// Percent escapes (%40) stand for any byte; JSON (\u0040) and HTML (&#64; &#x40;) escapes
/// only for ASCII, which is all that address and number syntax is made of.
std::pair<char, std::size_t> escape_at(std::string_view text, std::size_t i) {
  const auto rest = text.substr(i);
  if (rest.size() >= 3 && rest[0] == '%' && hex_value(rest[1]) >= 0 && hex_value(rest[2]) >= 0)
    return {static_cast<char>(hex_value(rest[1]) * 16 + hex_value(rest[2])), 3};
  long code = -1;
  std::size_t length = 0;
  if (rest.size() >= 6 && rest[0] == '\\' && rest[1] == 'u') {
    code = number_in(rest.substr(2, 4), 16);
    length = 6;
  } else if (rest.size() >= 4 && rest[0] == '&' && rest[1] == '#') {
    const bool hex = lower(rest[2]) == 'x';
    const std::size_t digits = hex ? 3 : 2;
    const std::size_t semicolon = rest.find(';', digits);
    if (semicolon != std::string_view::npos && semicolon <= digits + 5) {
      code = number_in(rest.substr(digits, semicolon - digits), hex ? 16 : 10);
      length = semicolon + 1;
    }
  }
  if (code < 0 || code >= 0x80)
    return {'\0', 0};
  return {static_cast<char>(code), length};
}

/// Layers of escaping undone before masking ("%2540" is "%40" is "@"): more than any client
/// or provider applies by accident. Bounded, so a "%252525…" text costs linear time.
constexpr int max_escape_layers = 4;

/// The text as a reader would see it: percent, JSON and HTML escapes decoded, layer by layer.
/// '+' stays '+' (a form's space): decoding it would split "alice+tag@example.com".
std::string unescaped(std::string_view text) {
  std::string current(text);
  for (int layer = 0; layer < max_escape_layers; ++layer) {
    std::string decoded;
    decoded.reserve(current.size());
    bool changed = false;
    for (std::size_t i = 0; i < current.size();) {
      const auto next =
          std::find_if(current.begin() + static_cast<std::ptrdiff_t>(i), current.end(),
                       [](char c) { return c == '%' || c == '\\' || c == '&'; });
      const auto escape = static_cast<std::size_t>(next - current.begin());
      decoded.append(current, i, escape - i);
      if (escape == current.size())
        break;
      const auto [byte, length] = escape_at(current, escape);
      decoded += length == 0 ? current[escape] : byte;
      i = escape + std::max<std::size_t>(length, 1);
      changed = changed || length != 0;
    }
    if (!changed)
      break;
    current = std::move(decoded);
  }
  return current;
}

/// What may stand between the digit groups of a phone number: "+1 (415) 555-0123",
/// "138.1234.5678", "138/1234/5678", "138+1234+5678" (a form-encoded space).
bool is_phone_separator(char c) {
  return c == ' ' || c == '-' || c == '(' || c == ')' || c == '.' || c == '/' || c == '+';
}

/// At most this many separators in a row inside one number: "(415) 555" has two.
constexpr std::size_t max_phone_separators = 3;

/// Fewest digits of a number masked as a phone number: shorter runs are status codes, counts,
/// durations and ports.
constexpr std::size_t min_phone_digits = 7;

/// Prefixes of credentials whose kind is known by their start: a cut one ("sk_live_51Hx") is
/// still a credential, though too short for looks_like_secret(). Case matters.
constexpr std::array<std::string_view, 18> credential_prefixes = {
    "sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_", "xoxb-",  "xoxp-",
    "xoxa-",    "xoxr-",    "ghp_",     "gho_",     "ghs_",   "glpat-", "github_pat_",
    "AKIA",     "AIza",     "SG.",      "eyJ" /* base64 of '{"': a JWT or other encoded JSON */};

/// A credential's characters: base64, base64url, hex, and the dots between a JWT's parts.
bool is_credential_char(char c) {
  return is_secret_char(c) || c == '.';
}

/// Valid UTF-8 without control characters: anything else becomes '?' (a database refuses
/// NUL and invalid UTF-8, and a stored newline would split log lines).
void make_printable_utf8(std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    const auto byte = static_cast<unsigned char>(text[i]);
    if (length == 0 || byte < 0x20 || byte == 0x7F)
      text[i++] = '?'; // one byte for one byte: a stray byte or a control character
    else
      i += length;
  }
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

  /// The masked text, or its start once that is longer than `enough`: what follows would be
  /// cut anyway (an 8 KiB answer is cut to 200 bytes), and each piece is masked whole.
  std::string run(std::size_t enough) {
    while (i_ < text_.size() && out_.size() <= enough) {
      if (at_word_start() && (url() || credential_scheme() || key_value() ||
                              prefixed_credential() || email() || secret() || phone()))
        continue;
      // Digits glued to letters ("x8613812345678") are a phone number all the same.
      if (at_digit_run_start() && phone())
        continue;
      plain();
    }
    return std::move(out_);
  }

private:
  std::string_view rest() const { return text_.substr(i_); }

  bool at_word_start() const { return i_ == 0 || !is_alnum(text_[i_ - 1]); }

  /// A digit after a non-digit inside a word; at the text's start (a word start) phone() was
  /// tried already.
  bool at_digit_run_start() const {
    return i_ > 0 && is_digit(text_[i_]) && !is_digit(text_[i_ - 1]);
  }

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

  /// Seven or more digits, optionally after '+' or '(', in groups split by up to three
  /// separators (is_phone_separator): "***" and the last four digits. Longer runs than E.164's
  /// fifteen digits are masked too (card numbers, two numbers run together). Addresses, dates,
  /// times and hex identifiers (not_a_phone_end) are copied as they are: they are not personal
  /// data and operators read them.
  bool phone() {
    if (const std::size_t end = not_a_phone_end(); end != 0) {
      out_.append(text_.substr(i_, end - i_));
      i_ = end;
      return true;
    }
    std::size_t at = i_;
    if (text_[at] == '+' || text_[at] == '(')
      ++at;
    if (at >= text_.size() || !is_digit(text_[at]))
      return false;
    std::string digits;
    std::size_t end = at;
    for (std::size_t separators = 0; at < text_.size() && separators <= max_phone_separators;
         ++at) {
      const char c = text_[at];
      if (is_digit(c)) {
        digits += c;
        end = at + 1;
        separators = 0;
      } else if (is_phone_separator(c)) {
        ++separators;
      } else {
        break;
      }
    }
    if (digits.size() < min_phone_digits)
      return false;
    out_ += "***";
    out_ += digits.substr(digits.size() - 4);
    i_ = end;
    return true;
  }

  /// The end of what at i_ has digits enough for a phone number but is none, or 0: an IPv4
  /// address ("10.0.0.1"), an ISO date ("2026-09-07"), a time ("20:49:03.000000") or a hex
  /// identifier of dashed groups ("61076919-303049b3-32283a08", a UUID).
  std::size_t not_a_phone_end() const {
    const auto followed_by_number = [&](std::size_t end) {
      return end < text_.size() &&
             (is_digit(text_[end]) || (end + 1 < text_.size() && is_phone_separator(text_[end]) &&
                                       is_digit(text_[end + 1]) && text_[end] != ' '));
    };
    std::size_t ipv4 = run_end(i_, is_digit, 1, 3);
    for (int dot = 0; dot < 3; ++dot)
      ipv4 = then(ipv4, '.', is_digit, 1, 3);
    if (ipv4 != 0 && !followed_by_number(ipv4))
      return ipv4;
    const std::size_t date =
        then(then(run_end(i_, is_digit, 4, 4), '-', is_digit, 2, 2), '-', is_digit, 2, 2);
    if (date != 0 && !followed_by_number(date))
      return date;
    const std::size_t time =
        then(then(run_end(i_, is_digit, 2, 2), ':', is_digit, 2, 2), ':', is_digit, 2, 2);
    if (time != 0)
      return std::max(time, then(time, '.', is_digit, 1, 9));
    return hex_identifier_end();
  }

  /// Three or more groups of 4 to 12 hex digits joined by '-', two of them with a letter, the
  /// last ending the word; 0 when there is none at i_. A phone number has no letters, and one
  /// glued to letters ("8613812345678abc") is one group.
  std::size_t hex_identifier_end() const {
    std::size_t groups = 0, lettered = 0;
    for (std::size_t at = i_;; ++at) {
      const std::size_t end = run_end(at, is_hex, 4, 12);
      if (end == 0)
        return 0;
      ++groups;
      lettered += std::any_of(text_.begin() + at, text_.begin() + end, is_alpha) ? 1 : 0;
      if (end < text_.size() && text_[end] == '-') {
        at = end;
        continue;
      }
      return groups >= 3 && lettered >= 2 && (end == text_.size() || !is_alnum(text_[end])) ? end
                                                                                            : 0;
    }
  }

  /// The end of `min` to `max` characters `accept` takes from `from`, or 0.
  std::size_t run_end(std::size_t from, bool (*accept)(char), std::size_t min,
                      std::size_t max) const {
    const std::size_t end = scan(from, accept);
    return end - from >= min && end - from <= max ? end : 0;
  }

  /// After a run ending at `end` (0: none), `separator` and another run: its end, or 0.
  std::size_t then(std::size_t end, char separator, bool (*accept)(char), std::size_t min,
                   std::size_t max) const {
    return end != 0 && end < text_.size() && text_[end] == separator
               ? run_end(end + 1, accept, min, max)
               : 0;
  }

  /// sk_live_…, whsec_…, eyJ… (credential_prefixes): the whole run, whatever its length.
  bool prefixed_credential() {
    const auto rest = this->rest();
    const bool known = std::any_of(
        credential_prefixes.begin(), credential_prefixes.end(),
        [&](std::string_view prefix) { return rest.substr(0, prefix.size()) == prefix; });
    if (!known)
      return false;
    out_ += "***";
    i_ = scan(i_, is_credential_char);
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

  /// Letters and digits are copied run by run, so a rule never starts in the middle of a word
  /// and phone() is tried where digits follow letters.
  void plain() {
    const char c = text_[i_];
    const std::size_t end = is_alpha(c)   ? scan(i_, is_alpha)
                            : is_digit(c) ? scan(i_, is_digit)
                                          : i_ + 1;
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
  auto readable = unescaped(text);
  make_printable_utf8(readable);
  auto out = free_text_masker(readable).run(max_bytes);
  truncate_utf8(out, max_bytes);
  return out;
}

} // namespace herald::domain
