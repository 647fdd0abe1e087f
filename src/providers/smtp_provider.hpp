#pragma once

#include "observability/metrics.hpp"
#include "providers/http_client.hpp"
#include "providers/provider.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace herald::providers {

/// One SMTP channel: where mail is handed over and as whom (docs/channels.md).
struct smtp_config {
  std::string url;       ///< smtp://host:port (STARTTLS when offered) or smtps://host:port
  std::string from;      ///< envelope sender and From address
  std::string from_name; ///< the From display name, UTF-8; empty for none
  std::string username;  ///< SMTP AUTH user; empty: no AUTH
  std::string password;  ///< the password itself (config names an environment variable)
  /// Refuse to send unless the connection is TLS (smtps://, or STARTTLS on smtp://). Unset:
  /// required whenever a username is set, so a password never crosses the network in the clear.
  std::optional<bool> require_tls;
  std::chrono::milliseconds timeout{20000}; ///< whole call: connect, greeting, AUTH, message
  std::size_t max_connections = 4;          ///< open connections to the server, at most
  /// Also send the body as an HTML alternative (escaped, line breaks kept) next to the text.
  bool html = false;

  /// Whether sends must go over TLS (require_tls, or its default).
  bool tls_required() const { return require_tls.value_or(!username.empty()); }

  /// Empty when usable; otherwise a one-line reason naming the field (for config errors).
  std::string validate() const;
};

/// What an SMTP call came to, and whether the channel's configuration is at fault.
struct smtp_verdict {
  provider_result result;
  bool config_error = false; ///< credentials refused, TLS unavailable, certificate refused
};

/// Classifies how an SMTP call ended. curl reports the last reply code the server sent
/// (CURLINFO_RESPONSE_CODE; `answer.status`) and its own result code; the reply text is the
/// answer's body. The order of the rows is the order of the checks:
///
/// | how the call ended                                           | outcome                    |
/// |--------------------------------------------------------------|----------------------------|
/// | CURLE_OK (250 after the message)                             | success                    |
/// | the client stopped                                           | timeout (may have gone)    |
/// | CURLE_LOGIN_DENIED (AUTH refused: 535, no common mechanism)  | retryable, config error    |
/// | CURLE_USE_SSL_FAILED (TLS required, STARTTLS not offered or  | retryable, config error    |
/// |   refused)                                                   |                            |
/// | CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,    | retryable, config error    |
/// |   CURLE_SSL_CERTPROBLEM (the server's certificate refused)   |                            |
/// | a 4xx reply at any step (421 closing, 450/451/452 at MAIL,   | retryable                  |
/// |   RCPT or after the message): curl reports CURLE_SEND_ERROR, |                            |
/// |   CURLE_WEIRD_SERVER_REPLY or CURLE_REMOTE_ACCESS_DENIED     |                            |
/// | a 5xx reply at any step (550 no such user at RCPT, 552/554   | permanent                  |
/// |   after the message, 553 at MAIL)                            |                            |
/// | no final reply after DATA's 354 (status 354: the server hung,| timeout (outcome unknown:  |
/// |   dropped or reset while the message was sent or answered;   |   the server may have      |
/// |   CURLE_OPERATION_TIMEDOUT, CURLE_RECV_ERROR, CURLE_SEND_ERROR,|   taken it)              |
/// |   CURLE_GOT_NOTHING, …)                                      |                            |
/// | CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL              | permanent, config error    |
/// | anything else before DATA's 354 (resolve, connect, TLS       | retryable (the message was |
/// |   handshake, a timeout, reset or drop before the message)    |   never handed over)       |
///
/// Failures carry "SMTP <code> <reply text>" or curl's text, masked (addresses, credentials)
/// and on one line. The success detail is left empty: the adapter puts its Message-ID there.
smtp_verdict classify_smtp(const outbound_answer& answer);

/// `text` as an HTML fragment: & < > " ' escaped, each line break a <br>.
std::string html_of_text(const std::string& text);

/// Sends notification email through an SMTP server with libcurl (http_client: one thread for
/// every call of the channel, connections kept and reused, STARTTLS when offered). Each task is
/// one RFC 5322 message (build_mime_message) to its recipient with subject = title and the body
/// as text (and HTML with `html`); its Message-ID is <provider request id@domain of from>, the
/// same on every attempt, so a resent message is recognisably the one sent before, and the
/// success answer's detail is that Message-ID without brackets. SMTP has no receipts and no
/// status query. Errors follow classify_smtp(); config errors raise
/// herald_provider_config_errors_total.
class smtp_provider final : public provider_adapter {
public:
  /// Throws std::invalid_argument when `config.validate()` refuses it, std::runtime_error when
  /// libcurl cannot be set up.
  smtp_provider(std::string channel, smtp_config config, std::shared_ptr<metrics> metrics);

  void send(provider_request request, provider_callback done) override;

  struct context; ///< what a call in flight needs; shared with its callbacks

private:
  std::shared_ptr<const context> context_;
  http_client client_; ///< last: stops first, answering calls in flight as stopped
};

} // namespace herald::providers
