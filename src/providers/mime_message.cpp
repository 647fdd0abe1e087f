#include "providers/mime_message.hpp"

#include "domain/utf8.hpp"
#include "providers/webhook_signature.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <utility>

namespace herald::providers {
namespace {

constexpr std::size_t max_line_length = 78;         // RFC 5322 §2.1.1
constexpr std::size_t max_encoded_word_length = 75; // RFC 2047 §2
constexpr std::string_view encoded_word_start = "=?UTF-8?B?";
constexpr std::string_view encoded_word_end = "?=";
constexpr std::size_t encoded_word_overhead = encoded_word_start.size() + encoded_word_end.size();
// The shortest encoded word that can hold any character: four bytes, eight base64 characters.
constexpr std::size_t shortest_encoded_word = encoded_word_overhead + 8;
constexpr std::size_t base64_line_bytes = 57; // 76 characters a line, RFC 2045 §6.8's limit
// Base64 never writes '-', so no line of an encoded body can be this boundary's delimiter.
constexpr std::string_view boundary = "herald-alternative-part";
constexpr std::size_t max_address_length = 254;   // RFC 5321 §4.5.3.1.3, less the brackets
constexpr std::size_t max_local_part_length = 64; // RFC 5321 §4.5.3.1.1

bool is_atext(char c) {
  constexpr std::string_view symbols = "!#$%&'*+-/=?^_`{|}~";
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         symbols.find(c) != std::string_view::npos;
}

/// Whether `text` is runs of atext joined by single `separator`s: a dot-atom with '.', a phrase
/// of atoms with ' '.
bool is_atext_runs(std::string_view text, char separator) {
  char previous = separator; // so a leading separator counts as a doubled one
  for (const char c : text) {
    if (c == separator ? previous == separator : !is_atext(c))
      return false;
    previous = c;
  }
  return previous != separator; // neither empty nor ending in a separator
}

bool is_printable_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= ' ' && c <= '~'; });
}

/// Number of bytes of the UTF-8 character starting with `lead`; the text was checked to be UTF-8.
std::size_t utf8_length(char lead) {
  const auto byte = static_cast<unsigned char>(lead);
  return byte < 0x80 ? 1 : byte < 0xE0 ? 2 : byte < 0xF0 ? 3 : 4;
}

std::string quoted_string(std::string_view text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\')
      quoted += '\\';
    quoted += c;
  }
  return quoted + '"';
}

/// One header field written as tokens separated by single spaces, folded (a CRLF put before the
/// space) where the next token would take a line past 78 characters.
class header_field {
public:
  explicit header_field(std::string_view name) : text_(name), line_length_(name.size() + 1) {
    text_ += ':';
  }

  /// Characters a token can have on the current line, after its separating space.
  std::size_t room() const {
    return line_length_ + 1 < max_line_length ? max_line_length - line_length_ - 1 : 0;
  }

  void add(std::string_view token) {
    // A first token too long for the name's line stays on it: folding first would leave the
    // line with the name and nothing else.
    if (token.size() > room() && has_token_) {
      text_ += "\r\n";
      line_length_ = 0;
    }
    text_ += ' ';
    text_ += token;
    line_length_ += 1 + token.size();
    has_token_ = true;
  }

  /// Whether `text` can be added as it is, folded at its spaces, and be read back exactly:
  /// printable ASCII words joined by single spaces (unfolding restores them), no "=?" a reader
  /// would try to decode, and no word too long for the line it may have to start.
  bool fits_as_words(std::string_view text) const {
    if (text.find("=?") != std::string_view::npos)
      return false;
    std::size_t word_room = room();
    for (std::size_t start = 0;;) {
      const auto end = text.find(' ', start);
      const auto word = text.substr(start, end - start);
      if (word.empty() || word.size() > word_room || !is_printable_ascii(word))
        return false;
      if (end == std::string_view::npos)
        return true;
      word_room = max_line_length - 1; // a continuation line, after its leading space
      start = end + 1;
    }
  }

  void add_words(std::string_view text) {
    for (std::size_t start = 0;;) {
      const auto end = text.find(' ', start);
      add(text.substr(start, end - start));
      if (end == std::string_view::npos)
        return;
      start = end + 1;
    }
  }

  /// Adds UTF-8 `text` as RFC 2047 "B" encoded words, each as long as its line allows (at most
  /// 75 characters) and holding whole characters, as RFC 2047 §5 requires.
  void add_encoded(std::string_view text) {
    for (std::size_t start = 0; start < text.size();) {
      if (room() < shortest_encoded_word) {
        text_ += "\r\n";
        line_length_ = 0;
      }
      const std::size_t word_room = std::min(room(), max_encoded_word_length);
      const std::size_t max_bytes = (word_room - encoded_word_overhead) / 4 * 3;
      std::size_t end = start;
      while (end < text.size() && end + utf8_length(text[end]) - start <= max_bytes)
        end += utf8_length(text[end]);
      std::string word(encoded_word_start);
      word += base64_encode(text.substr(start, end - start));
      word += encoded_word_end;
      add(word);
      start = end;
    }
  }

  std::string finish() && { return std::move(text_) + "\r\n"; }

private:
  std::string text_;
  std::size_t line_length_;
  bool has_token_ = false;
};

/// An atom phrase as it is, a quoted string for other ASCII that fits, encoded words otherwise
/// (non-ASCII, a literal "=?", or too long for a line).
void add_display_name(header_field& field, std::string_view name) {
  if (is_atext_runs(name, ' ') && field.fits_as_words(name)) {
    field.add_words(name);
    return;
  }
  const std::string quoted = quoted_string(name);
  if (is_printable_ascii(name) && name.find("=?") == std::string_view::npos &&
      quoted.size() <= field.room())
    field.add(quoted);
  else
    field.add_encoded(name);
}

/// "Thu, 29 Feb 2024 13:05:09 +0000"; nullopt outside the years 1900 to 9999.
std::optional<std::string> rfc5322_date(std::int64_t unix_seconds) {
  static constexpr const char* weekdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const auto time = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  if (!gmtime_r(&time, &utc) || utc.tm_year < 0 || utc.tm_year > 9999 - 1900)
    return std::nullopt;
  char text[64];
  std::snprintf(text, sizeof text, "%s, %02d %s %04d %02d:%02d:%02d +0000", weekdays[utc.tm_wday],
                utc.tm_mday, months[utc.tm_mon], utc.tm_year + 1900, utc.tm_hour, utc.tm_min,
                utc.tm_sec);
  return text;
}

/// `text` with every line break (CRLF, LF or a lone CR) as CRLF.
std::string with_crlf_line_breaks(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\r' && text[i] != '\n') {
      out += text[i];
      continue;
    }
    out += "\r\n";
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')
      ++i;
  }
  return out;
}

void append_text_part(std::string& out, std::string_view subtype, std::string_view text) {
  out += "Content-Type: text/";
  out += subtype;
  out += "; charset=UTF-8\r\nContent-Transfer-Encoding: base64\r\n\r\n";
  const std::string canonical = with_crlf_line_breaks(text);
  for (std::size_t at = 0; at < canonical.size(); at += base64_line_bytes)
    out += base64_encode(std::string_view(canonical).substr(at, base64_line_bytes)) + "\r\n";
}

} // namespace

std::optional<std::string> build_mime_message(const email_message& message, std::string* problem) {
  const auto refuse = [problem](std::string reason) -> std::optional<std::string> {
    if (problem)
      *problem = std::move(reason);
    return std::nullopt;
  };
  const std::pair<const char*, std::string_view> header_inputs[] = {
      {"from address", message.from.address},
      {"from display name", message.from.display_name},
      {"to address", message.to},
      {"subject", message.subject},
      {"message id", message.message_id},
      {"message id domain", message.message_id_domain}};
  for (const auto& [name, value] : header_inputs)
    if (value.find_first_of("\r\n") != std::string_view::npos)
      return refuse(std::string(name) + " contains a line break (refused: header injection)");
  if (!is_plausible_email_address(message.from.address))
    return refuse("from address is not a plausible email address");
  if (!is_plausible_email_address(message.to))
    return refuse("to address is not a plausible email address");
  const std::string_view html = message.html_body ? *message.html_body : std::string_view();
  const std::pair<const char*, std::string_view> texts[] = {
      {"from display name", message.from.display_name},
      {"subject", message.subject},
      {"text body", message.text_body},
      {"html body", html}};
  for (const auto& [name, value] : texts)
    if (!domain::is_valid_utf8(value))
      return refuse(std::string(name) + " is not valid UTF-8");
  if (!is_atext_runs(message.message_id, '.'))
    return refuse("message id must be a dot-atom to be written in a Message-ID");
  const std::string_view from = message.from.address;
  const std::string_view id_domain = message.message_id_domain.empty()
                                         ? from.substr(from.find('@') + 1)
                                         : std::string_view(message.message_id_domain);
  if (!is_atext_runs(id_domain, '.'))
    return refuse("message id domain must be a dot-atom");
  const auto date = rfc5322_date(message.date_unix);
  if (!date)
    return refuse("date is out of range (years 1900 to 9999)");

  std::string out = "Date: " + *date + "\r\n";
  header_field from_field("From");
  if (message.from.display_name.empty()) {
    from_field.add(from);
  } else {
    add_display_name(from_field, message.from.display_name);
    from_field.add("<" + message.from.address + ">");
  }
  out += std::move(from_field).finish();
  header_field to_field("To");
  to_field.add(message.to);
  out += std::move(to_field).finish();
  header_field subject_field("Subject");
  if (subject_field.fits_as_words(message.subject))
    subject_field.add_words(message.subject);
  else
    subject_field.add_encoded(message.subject);
  out += std::move(subject_field).finish();
  header_field id_field("Message-ID");
  id_field.add("<" + message.message_id + "@" + std::string(id_domain) + ">");
  out += std::move(id_field).finish();
  out += "MIME-Version: 1.0\r\n";

  if (!message.html_body) {
    append_text_part(out, "plain", message.text_body);
    return out;
  }
  const std::string delimiter = "--" + std::string(boundary);
  out += "Content-Type: multipart/alternative; boundary=\"" + std::string(boundary) + "\"\r\n\r\n";
  out += delimiter + "\r\n";
  append_text_part(out, "plain", message.text_body);
  out += delimiter + "\r\n";
  append_text_part(out, "html", html);
  out += delimiter + "--\r\n";
  return out;
}

bool is_plausible_email_address(std::string_view address) {
  const auto at = address.find('@');
  if (at == std::string_view::npos || at > max_local_part_length ||
      address.size() > max_address_length)
    return false;
  return is_atext_runs(address.substr(0, at), '.') && is_atext_runs(address.substr(at + 1), '.');
}

} // namespace herald::providers
