#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herald::tools {

/// What the SMTP fake does in one mail transaction instead of its normal answer.
struct smtp_fault {
  enum class kind {
    reply_at_mail,    ///< answer MAIL FROM with `code`
    reply_at_rcpt,    ///< answer RCPT TO with `code` (421 also closes the connection)
    reply_at_data,    ///< answer DATA with `code` instead of 354
    reply_after_data, ///< take the message, answer `code` instead of 250
    hang_after_data,  ///< take the message, never answer (slower than any client's timeout)
    drop_after_data,  ///< take the message, close the connection without an answer
    drop_at_rcpt,     ///< close the connection without an answer when RCPT TO comes
  };
  kind what = kind::reply_at_rcpt;
  int code = 0;     ///< for the reply_* kinds
  std::string text; ///< the reply's text after the code; empty: a standard one
};

/// One message the fake took (after the final "."), answered or not.
struct smtp_received {
  std::string mail_from;               ///< without angle brackets
  std::vector<std::string> recipients; ///< without angle brackets
  std::string data;                    ///< dot-unstuffed, CRLF line ends, final ".\r\n" removed
  bool accepted = false;        ///< answered 250 (false: hung, dropped or refused after taking it)
  std::string authenticated_as; ///< the AUTH user; empty without AUTH
};

/// A local stand-in for an SMTP server (RFC 5321), speaking what libcurl and mail submission
/// use: EHLO/HELO, AUTH PLAIN and LOGIN (RFC 4954, with or without an initial response), MAIL
/// FROM, RCPT TO, DATA with dot-unstuffing, RSET, NOOP, QUIT. No STARTTLS: it is not offered,
/// and asked anyway answers 454. Records every message it takes; faults scripted per mail
/// transaction (the next MAIL FROM takes the next fault). Thread-safe: tests script it while
/// server threads answer. smtp_fake_server puts it on a TCP port.
class smtp_fake {
public:
  struct options {
    std::string hostname = "smtp.fake.test";
    /// AUTH credentials; with a username, AUTH PLAIN LOGIN is offered and MAIL FROM needs it.
    std::string username;
    std::string password;
    std::size_t max_message_bytes = 10 * 1024 * 1024; ///< larger messages: 552
  };

  explicit smtp_fake(options o);

  /// The next mail transactions meet these faults, in order.
  void script(std::vector<smtp_fault> faults);

  std::vector<smtp_received> received() const;
  std::size_t connections() const;
  std::size_t auth_failures() const;

  /// One connection's protocol state: lines in, replies out. No I/O.
  class session {
  public:
    /// What to do after one line.
    struct action {
      std::string reply;  ///< to write, CRLF included; may be empty
      bool close = false; ///< close the connection after writing `reply`
      bool hang = false;  ///< write nothing now or later; ignore what comes
    };

    explicit session(smtp_fake& fake);

    /// The 220 greeting a new connection gets.
    std::string greeting() const;

    /// Takes one line as received, without its CRLF.
    action on_line(std::string_view line);

  private:
    enum class phase { command, auth_plain, auth_login_user, auth_login_password, data };

    action command(std::string_view line);
    action authenticate(std::string_view user, std::string_view password);
    action end_of_data();
    void reset();

    smtp_fake& fake_;
    phase phase_ = phase::command;
    bool greeted_ = false;
    std::string user_; ///< authenticated user, or the LOGIN user being asked for its password
    bool authenticated_ = false;
    bool in_transaction_ = false;
    std::optional<smtp_fault> fault_; ///< this transaction's
    smtp_received message_;
    bool too_large_ = false;
  };

private:
  std::optional<smtp_fault> next_fault();
  void record(smtp_received message);
  void count_connection();
  void count_auth_failure();

  options options_;
  mutable std::mutex mutex_;
  std::deque<smtp_fault> faults_;
  std::vector<smtp_received> received_;
  std::size_t connections_ = 0;
  std::size_t auth_failures_ = 0;
};

/// An smtp_fake on a TCP port of 127.0.0.1 (Boost.Asio, one thread for every connection), for
/// tests and tools. Stops (closing every connection) when destroyed.
class smtp_fake_server {
public:
  /// Listens on `port` (0: a free one). Throws std::system_error when it cannot.
  explicit smtp_fake_server(smtp_fake& fake, std::uint16_t port = 0);
  ~smtp_fake_server();
  smtp_fake_server(const smtp_fake_server&) = delete;
  smtp_fake_server& operator=(const smtp_fake_server&) = delete;

  std::uint16_t port() const;
  /// "smtp://127.0.0.1:<port>"
  std::string url() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace herald::tools
