#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace herald::providers {

/// An address and, optionally, the name a mail reader shows for it.
struct mailbox {
  std::string address;      ///< "alerts@example.com"; see is_plausible_email_address
  std::string display_name; ///< UTF-8; "" for none
};

/// One notification email, as the SMTP adapter hands it over.
struct email_message {
  mailbox from;
  std::string to;                       ///< the one recipient's address
  std::string subject;                  ///< UTF-8
  std::string text_body;                ///< UTF-8
  std::optional<std::string> html_body; ///< UTF-8; when set, an alternative to the text
  /// The provider request id ("hrq_abc"), written "<hrq_abc@domain>": the same on every attempt,
  /// so a resent message is recognisably the one sent before.
  std::string message_id;
  std::string message_id_domain; ///< "" for the domain of the From address
  std::int64_t date_unix = 0;    ///< written in UTC ("+0000")
};

/// The message as SMTP's DATA carries it (before dot-stuffing): the headers Date, From, To,
/// Subject, Message-ID and MIME-Version (RFC 5322), then a text/plain part, or a
/// multipart/alternative of the text then the HTML (RFC 2046), all charset=UTF-8. Lines end in
/// CRLF and none is longer than 78 characters, but for an address or message id too long to
/// fit one.
///
/// Headers stay 7-bit: a subject or display name that is not plain ASCII (or could be misread:
/// a literal "=?", specials, spaces at its ends) is written as RFC 2047 encoded words, each at
/// most 75 characters and holding whole characters. Bodies are base64 in 76-character lines
/// rather than quoted-printable: any UTF-8 comes through without escaping rules, no body line
/// can start with '.' or "--", so neither SMTP's dot-stuffing nor the multipart boundary can
/// meet the content, and the cost (a third larger) is small for notification-sized text. Line
/// breaks in a body are sent as CRLF, the canonical form of text in MIME.
///
/// nullopt, with a one-line reason in `*problem` (when not null), when any header input holds a
/// CR or LF (header injection), an address is not plausible, the subject, display name or a body
/// is not valid UTF-8, the message id or its domain is not a dot-atom, or the date is out of
/// range.
std::optional<std::string> build_mime_message(const email_message& message, std::string* problem);

/// Whether `address` could be an email address and can be written in a header as it is: a
/// local part and a domain, each a dot-atom (RFC 5322 §3.4.1: ASCII letters, digits and
/// !#$%&'*+-/=?^_`{|}~, in runs joined by single dots), one '@' between them, at most 64
/// characters before it and 254 in all. Quoted local parts, domain literals and non-ASCII
/// (SMTPUTF8) addresses are refused: notification senders and recipients do not need them.
bool is_plausible_email_address(std::string_view address);

} // namespace herald::providers
