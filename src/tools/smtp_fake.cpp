#include "tools/smtp_fake.hpp"

#include "providers/jwt.hpp"

#include <algorithm>
#include <thread>
#include <utility>

#include <boost/asio.hpp>

namespace herald::tools {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr std::size_t max_line_bytes = 64 * 1024;

std::string reply(int code, std::string_view text) {
  return std::to_string(code) + " " + std::string(text) + "\r\n";
}

std::string upper(std::string_view text) {
  std::string out{text};
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  });
  return out;
}

/// The verb of a command line, upper-cased, and what follows it after one space.
std::pair<std::string, std::string_view> split_command(std::string_view line) {
  const auto space = line.find(' ');
  if (space == std::string_view::npos)
    return {upper(line), {}};
  return {upper(line.substr(0, space)), line.substr(space + 1)};
}

/// The address between the first '<' and the next '>' ("<a@b> SIZE=10" -> "a@b").
std::optional<std::string> path_of(std::string_view argument) {
  const auto open = argument.find('<');
  const auto close = argument.find('>', open == std::string_view::npos ? 0 : open);
  if (open == std::string_view::npos || close == std::string_view::npos)
    return std::nullopt;
  return std::string{argument.substr(open + 1, close - open - 1)};
}

/// Standard base64 (with padding) as AUTH sends it, decoded; nullopt when it is not base64.
std::optional<std::string> base64_decode(std::string_view text) {
  std::string url{text};
  while (!url.empty() && url.back() == '=')
    url.pop_back();
  std::replace(url.begin(), url.end(), '+', '-');
  std::replace(url.begin(), url.end(), '/', '_');
  return providers::base64url_decode(url);
}

std::string fault_reply(const smtp_fault& fault, std::string_view standard) {
  return reply(fault.code, fault.text.empty() ? standard : std::string_view{fault.text});
}

} // namespace

smtp_fake::smtp_fake(options o) : options_(std::move(o)) {}

void smtp_fake::script(std::vector<smtp_fault> faults) {
  std::lock_guard<std::mutex> guard{mutex_};
  faults_.insert(faults_.end(), faults.begin(), faults.end());
}

std::vector<smtp_received> smtp_fake::received() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return received_;
}

std::size_t smtp_fake::connections() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return connections_;
}

std::size_t smtp_fake::auth_failures() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return auth_failures_;
}

std::optional<smtp_fault> smtp_fake::next_fault() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (faults_.empty())
    return std::nullopt;
  auto fault = std::move(faults_.front());
  faults_.pop_front();
  return fault;
}

void smtp_fake::record(smtp_received message) {
  std::lock_guard<std::mutex> guard{mutex_};
  received_.push_back(std::move(message));
}

void smtp_fake::count_connection() {
  std::lock_guard<std::mutex> guard{mutex_};
  ++connections_;
}

void smtp_fake::count_auth_failure() {
  std::lock_guard<std::mutex> guard{mutex_};
  ++auth_failures_;
}

// --- One connection's protocol ------------------------------------------------------------

smtp_fake::session::session(smtp_fake& fake) : fake_(fake) {
  fake_.count_connection();
}

std::string smtp_fake::session::greeting() const {
  return reply(220, fake_.options_.hostname + " ESMTP herald smtp_fake");
}

void smtp_fake::session::reset() {
  in_transaction_ = false;
  fault_.reset();
  message_ = {};
  too_large_ = false;
}

smtp_fake::session::action smtp_fake::session::on_line(std::string_view line) {
  switch (phase_) {
  case phase::data:
    if (line == ".")
      return end_of_data();
    if (!line.empty() && line.front() == '.')
      line.remove_prefix(1); // dot-unstuffing (RFC 5321 §4.5.2)
    if (message_.data.size() + line.size() + 2 > fake_.options_.max_message_bytes)
      too_large_ = true;
    else
      message_.data.append(line).append("\r\n");
    return {};
  case phase::auth_plain:
  case phase::auth_login_user:
  case phase::auth_login_password: {
    const auto current = phase_;
    phase_ = phase::command;
    if (line == "*")
      return {reply(501, "5.7.0 authentication cancelled")};
    auto decoded = base64_decode(line);
    if (!decoded)
      return {reply(501, "5.5.2 cannot decode the response")};
    if (current == phase::auth_login_user) {
      user_ = *decoded;
      phase_ = phase::auth_login_password;
      return {reply(334, "UGFzc3dvcmQ6")}; // "Password:"
    }
    if (current == phase::auth_login_password)
      return authenticate(user_, *decoded);
    // PLAIN: authzid NUL authcid NUL password (RFC 4616)
    const auto first = decoded->find('\0');
    const auto second =
        first == std::string::npos ? std::string::npos : decoded->find('\0', first + 1);
    if (second == std::string::npos)
      return {reply(501, "5.5.2 malformed PLAIN response")};
    return authenticate(std::string_view{*decoded}.substr(first + 1, second - first - 1),
                        std::string_view{*decoded}.substr(second + 1));
  }
  case phase::command:
    break;
  }
  return command(line);
}

smtp_fake::session::action smtp_fake::session::authenticate(std::string_view user,
                                                            std::string_view password) {
  const auto& options = fake_.options_;
  if (!options.username.empty() && user == options.username && password == options.password) {
    authenticated_ = true;
    user_ = std::string{user};
    return {reply(235, "2.7.0 Authentication successful")};
  }
  fake_.count_auth_failure();
  user_.clear();
  return {reply(535, "5.7.8 Authentication credentials invalid")};
}

smtp_fake::session::action smtp_fake::session::command(std::string_view line) {
  const auto& options = fake_.options_;
  const auto [verb, argument] = split_command(line);
  if (verb == "EHLO") {
    reset();
    greeted_ = true;
    std::string answer = "250-" + options.hostname + " greets " + std::string{argument} + "\r\n";
    answer += "250-SIZE " + std::to_string(options.max_message_bytes) + "\r\n";
    answer += "250-8BITMIME\r\n";
    if (!options.username.empty())
      answer += "250-AUTH PLAIN LOGIN\r\n";
    answer += "250 ENHANCEDSTATUSCODES\r\n";
    return {answer};
  }
  if (verb == "HELO") {
    reset();
    greeted_ = true;
    return {reply(250, options.hostname)};
  }
  if (verb == "QUIT")
    return {reply(221, "2.0.0 Bye"), true};
  if (verb == "NOOP")
    return {reply(250, "2.0.0 OK")};
  if (verb == "RSET") {
    reset();
    return {reply(250, "2.0.0 OK")};
  }
  if (verb == "STARTTLS")
    return {reply(454, "4.7.0 TLS not available")};
  if (!greeted_)
    return {reply(503, "5.5.1 EHLO or HELO first")};
  if (verb == "AUTH") {
    if (options.username.empty())
      return {reply(502, "5.5.1 AUTH not offered")};
    if (authenticated_)
      return {reply(503, "5.5.1 already authenticated")};
    const auto [mechanism, initial] = split_command(argument);
    if (mechanism == "PLAIN") {
      phase_ = phase::auth_plain;
      if (initial.empty())
        return {"334 \r\n"};
      return on_line(initial);
    }
    if (mechanism == "LOGIN") {
      phase_ = phase::auth_login_user;
      if (initial.empty())
        return {reply(334, "VXNlcm5hbWU6")}; // "Username:"
      return on_line(initial);
    }
    return {reply(504, "5.5.4 unrecognized authentication type")};
  }
  if (verb == "MAIL") {
    if (!options.username.empty() && !authenticated_)
      return {reply(530, "5.7.0 Authentication required")};
    if (in_transaction_)
      return {reply(503, "5.5.1 nested MAIL command")};
    auto from = upper(argument.substr(0, 5)) == "FROM:" ? path_of(argument) : std::nullopt;
    if (!from)
      return {reply(501, "5.5.4 syntax: MAIL FROM:<address>")};
    fault_ = fake_.next_fault();
    if (fault_ && fault_->what == smtp_fault::kind::reply_at_mail) {
      auto answer = fault_reply(*fault_, "sender refused");
      fault_.reset();
      return {answer, answer.rfind("421", 0) == 0};
    }
    in_transaction_ = true;
    message_.mail_from = *from;
    message_.authenticated_as = authenticated_ ? user_ : std::string{};
    return {reply(250, "2.1.0 OK")};
  }
  if (verb == "RCPT") {
    if (!in_transaction_)
      return {reply(503, "5.5.1 MAIL first")};
    auto to = upper(argument.substr(0, 3)) == "TO:" ? path_of(argument) : std::nullopt;
    if (!to)
      return {reply(501, "5.5.4 syntax: RCPT TO:<address>")};
    if (fault_ && fault_->what == smtp_fault::kind::drop_at_rcpt)
      return {{}, true};
    if (fault_ && fault_->what == smtp_fault::kind::reply_at_rcpt) {
      auto answer = fault_reply(*fault_, "recipient refused <" + *to + ">");
      return {answer, fault_->code == 421};
    }
    message_.recipients.push_back(*to);
    return {reply(250, "2.1.5 OK")};
  }
  if (verb == "DATA") {
    if (!in_transaction_)
      return {reply(503, "5.5.1 MAIL first")};
    if (message_.recipients.empty())
      return {reply(554, "5.5.1 no valid recipients")};
    if (fault_ && fault_->what == smtp_fault::kind::reply_at_data)
      return {fault_reply(*fault_, "not now"), fault_->code == 421};
    phase_ = phase::data;
    return {reply(354, "End data with <CR><LF>.<CR><LF>")};
  }
  return {reply(502, "5.5.2 command not recognized")};
}

smtp_fake::session::action smtp_fake::session::end_of_data() {
  phase_ = phase::command;
  auto fault = std::move(fault_);
  auto message = std::move(message_);
  const bool too_large = too_large_;
  reset();
  if (too_large)
    return {reply(552, "5.3.4 message too big")};
  action answer;
  if (!fault) {
    message.accepted = true;
    answer.reply = reply(250, "2.0.0 OK queued");
  } else if (fault->what == smtp_fault::kind::reply_after_data) {
    answer.reply = fault_reply(*fault, "message refused");
    answer.close = fault->code == 421;
  } else if (fault->what == smtp_fault::kind::hang_after_data) {
    answer.hang = true;
  } else if (fault->what == smtp_fault::kind::drop_after_data) {
    answer.close = true;
  } else {
    message.accepted = true;
    answer.reply = reply(250, "2.0.0 OK queued");
  }
  fake_.record(std::move(message));
  return answer;
}

// --- The TCP server -------------------------------------------------------------------------

namespace {

/// One client connection: reads lines, writes what the session answers.
class connection : public std::enable_shared_from_this<connection> {
public:
  connection(tcp::socket socket, smtp_fake& fake)
      : socket_(std::move(socket)), buffer_(max_line_bytes), session_(fake) {}

  void start() { write(session_.greeting(), false); }

private:
  void read() {
    asio::async_read_until(
        socket_, buffer_, "\r\n",
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t bytes) {
          if (ec)
            return; // closed by the client, a line too long, or the server stopping
          std::string line(bytes - 2, '\0');
          std::istream in(&self->buffer_);
          in.read(line.data(), static_cast<std::streamsize>(line.size()));
          in.ignore(2);
          if (self->hung_)
            return self->read(); // swallow whatever comes; never answer
          auto action = self->session_.on_line(line);
          if (action.hang) {
            self->hung_ = true;
            return self->read();
          }
          if (action.reply.empty() && !action.close)
            return self->read();
          self->write(std::move(action.reply), action.close);
        });
  }

  void write(std::string text, bool close) {
    auto data = std::make_shared<std::string>(std::move(text));
    asio::async_write(
        socket_, asio::buffer(*data),
        [self = shared_from_this(), data, close](const boost::system::error_code& ec, std::size_t) {
          if (ec)
            return;
          if (close) {
            boost::system::error_code ignored;
            self->socket_.shutdown(tcp::socket::shutdown_both, ignored);
            self->socket_.close(ignored);
            return;
          }
          self->read();
        });
  }

  tcp::socket socket_;
  asio::streambuf buffer_;
  smtp_fake::session session_;
  bool hung_ = false;
};

} // namespace

struct smtp_fake_server::impl {
  smtp_fake& fake;
  asio::io_context io;
  tcp::acceptor acceptor;
  std::thread thread;

  impl(smtp_fake& f, std::uint16_t port)
      : fake(f), acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port)) {}

  void accept() {
    acceptor.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
      if (ec)
        return;
      std::make_shared<connection>(std::move(socket), fake)->start();
      accept();
    });
  }
};

smtp_fake_server::smtp_fake_server(smtp_fake& fake, std::uint16_t port)
    : impl_(std::make_unique<impl>(fake, port)) {
  impl_->accept();
  impl_->thread = std::thread([state = impl_.get()] { state->io.run(); });
}

smtp_fake_server::~smtp_fake_server() {
  impl_->io.stop();
  impl_->thread.join();
}

std::uint16_t smtp_fake_server::port() const {
  return impl_->acceptor.local_endpoint().port();
}

std::string smtp_fake_server::url() const {
  return "smtp://127.0.0.1:" + std::to_string(port());
}

} // namespace herald::tools
