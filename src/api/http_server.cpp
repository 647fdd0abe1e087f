#include "api/http_server.hpp"

#include "api/json_codec.hpp"
#include "api/trace_context.hpp"
#include "observability/log.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <sys/resource.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace herald::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

/// Requests in flight, shared with every token so it outlives the server if it must.
struct in_flight_counter {
  std::atomic<std::size_t> count{0};
  std::mutex mutex;
  std::condition_variable idle;
};

/// Held while one request is in flight: from dispatch until its response is written (or the
/// connection is gone). Releasing the last one wakes wait_idle().
class in_flight_token {
public:
  explicit in_flight_token(std::shared_ptr<in_flight_counter> counter)
      : counter_(std::move(counter)) {}
  ~in_flight_token() {
    if (counter_->count.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(counter_->mutex);
      counter_->idle.notify_all();
    }
  }
  in_flight_token(const in_flight_token&) = delete;
  in_flight_token& operator=(const in_flight_token&) = delete;

private:
  std::shared_ptr<in_flight_counter> counter_;
};

/// Open connections, in all and by peer address, shared with every session so that a session
/// may end after the server.
struct connection_counter {
  std::atomic<std::size_t> open{0};
  std::mutex peers_mutex;
  std::map<asio::ip::address, std::size_t> by_peer;

  /// Counts one more connection from `peer`; false (nothing counted) when it has `cap` open.
  bool enter_peer(const asio::ip::address& peer, std::size_t cap) {
    std::lock_guard<std::mutex> lock(peers_mutex);
    auto& count = by_peer[peer];
    if (count >= cap)
      return false;
    ++count;
    return true;
  }

  void leave_peer(const asio::ip::address& peer) {
    std::lock_guard<std::mutex> lock(peers_mutex);
    if (auto found = by_peer.find(peer); found != by_peer.end() && --found->second == 0)
      by_peer.erase(found);
  }
};

/// Held by a session for its whole life: one of http_options::max_connections, and one of its
/// peer's max_connections_per_peer (counted by enter_peer before the session was made).
class connection_slot {
public:
  connection_slot(std::shared_ptr<connection_counter> counter, asio::ip::address peer)
      : counter_(std::move(counter)), peer_(std::move(peer)) {
    counter_->open.fetch_add(1);
  }
  ~connection_slot() {
    counter_->open.fetch_sub(1);
    counter_->leave_peer(peer_);
  }
  connection_slot(const connection_slot&) = delete;
  connection_slot& operator=(const connection_slot&) = delete;

private:
  std::shared_ptr<connection_counter> counter_;
  asio::ip::address peer_;
};

/// Bytes of request bodies held at once across all connections (max_body_bytes_in_flight),
/// shared with every session so that a session may end after the server.
struct body_budget {
  std::atomic<std::size_t> held{0};

  /// Takes `bytes` more if the total stays within `ceiling`.
  bool take(std::size_t bytes, std::size_t ceiling) {
    std::size_t now = held.load();
    do {
      if (now > ceiling || bytes > ceiling - now)
        return false;
    } while (!held.compare_exchange_weak(now, now + bytes));
    return true;
  }
};

/// One request's share of the body budget, given back by release() or on destruction.
class body_reservation {
public:
  explicit body_reservation(std::shared_ptr<body_budget> budget) : budget_(std::move(budget)) {}
  ~body_reservation() { release(); }
  body_reservation(const body_reservation&) = delete;
  body_reservation& operator=(const body_reservation&) = delete;

  std::size_t size() const { return bytes_; }

  /// Grows the share to `bytes` if the budget's total stays within `ceiling`.
  bool grow_to(std::size_t bytes, std::size_t ceiling) {
    if (bytes <= bytes_)
      return true;
    if (!budget_->take(bytes - bytes_, ceiling))
      return false;
    bytes_ = bytes;
    return true;
  }

  /// Grows the share to `bytes` whatever the budget holds: memory that is taken already.
  void cover(std::size_t bytes) {
    if (bytes > bytes_)
      budget_->held.fetch_add(bytes - std::exchange(bytes_, bytes));
  }

  void release() { budget_->held.fetch_sub(std::exchange(bytes_, 0)); }

private:
  std::shared_ptr<body_budget> budget_;
  std::size_t bytes_ = 0;
};

/// Lets one log line through per interval and counts those held back, so that a flood of
/// refused connections or failing accepts does not flood the log as well.
class log_throttle {
public:
  /// Whether to log now; if so, `held_back` is the number of lines skipped since the last one.
  bool due(std::size_t& held_back) {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) {
      ++skipped_;
      return false;
    }
    next_ = now + std::chrono::seconds(10);
    held_back = skipped_;
    skipped_ = 0;
    return true;
  }

private:
  std::chrono::steady_clock::time_point next_{};
  std::size_t skipped_ = 0;
};

/// A log_throttle for lines written from any connection's strand.
class shared_log_throttle {
public:
  bool due(std::size_t& held_back) {
    std::lock_guard<std::mutex> lock(mutex_);
    return throttle_.due(held_back);
  }

private:
  std::mutex mutex_;
  log_throttle throttle_;
};

/// Descriptors kept free for everything else herald opens (database, log, provider calls), so
/// a full set of connections cannot starve them.
constexpr std::size_t reserved_descriptors = 128;
constexpr auto first_accept_delay = std::chrono::milliseconds(10);
constexpr auto last_accept_delay = std::chrono::milliseconds(1000);

std::string descriptor_count(rlim_t value) {
  return value == RLIM_INFINITY ? "unlimited" : std::to_string(value);
}

/// Raises the soft limit on open descriptors to the hard one, because the soft default (often
/// 1024) is far below what a server holding many connections needs; logs both. Returns the
/// soft limit now in force, or nullopt when it is unlimited or unknown.
std::optional<std::size_t> raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    log::warn("open_file_limit_unknown", {{"error", std::strerror(errno)}});
    return std::nullopt;
  }
  const rlim_t before = limit.rlim_cur;
  if (limit.rlim_cur != limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0)
      limit = raised;
    else
      log::warn("open_file_limit_not_raised", {{"error", std::strerror(errno)}});
  }
  log::info("open_file_limit", {{"soft_before", descriptor_count(before)},
                                {"soft", descriptor_count(limit.rlim_cur)},
                                {"hard", descriptor_count(limit.rlim_max)}});
  if (limit.rlim_cur == RLIM_INFINITY)
    return std::nullopt;
  return static_cast<std::size_t>(limit.rlim_cur);
}

/// max_connections, lowered when the descriptor limit could not hold that many connections
/// and still leave reserved_descriptors for the rest of herald.
std::size_t connection_cap(std::size_t configured, std::optional<std::size_t> open_file_limit) {
  if (!open_file_limit)
    return configured;
  const std::size_t usable = *open_file_limit > 2 * reserved_descriptors
                                 ? *open_file_limit - reserved_descriptors
                                 : *open_file_limit / 2;
  if (configured <= usable)
    return configured;
  log::warn("http_max_connections_lowered", {{"configured", std::to_string(configured)},
                                             {"open_file_limit", std::to_string(*open_file_limit)},
                                             {"max_connections", std::to_string(usable)}});
  return std::max<std::size_t>(usable, 1);
}

/// The whole answer to a connection over the cap with nothing idle to make room: written as is
/// at once, without a session.
std::string connection_refusal() {
  http_response response{http::status::service_unavailable, 11};
  response.set(http::field::content_type, "application/json");
  response.set(http::field::retry_after, "1");
  response.keep_alive(false);
  response.body() = encode_error("overloaded", "too many open connections; retry later");
  response.prepare_payload();
  std::ostringstream out;
  out << response;
  return out.str();
}

constexpr std::size_t max_discard_bytes = 1 << 20;
/// Read-buffer room beyond the header limit: the next request's first bytes, a chunk header.
constexpr std::size_t read_slack_bytes = 4096;
constexpr auto linger_timeout = std::chrono::seconds(2);

bool is_http_parse_error(const beast::error_code& ec) {
  return ec.category() == beast::error_code(http::error::bad_method).category();
}

/// Why the request's framing is ambiguous, or empty when it is not. A request with two ways to
/// find its end, or a transfer coding herald does not decode, is how a proxy in front and herald
/// come to disagree about where the next request starts (request smuggling, RFC 9112 §6.1 and
/// §6.3), so such a request is refused and its connection closed.
std::string_view ambiguous_framing(const http::request_header<>& header) {
  const auto encodings = header.equal_range(http::field::transfer_encoding);
  const auto lengths = header.equal_range(http::field::content_length);
  const auto length_count = std::distance(lengths.first, lengths.second);
  if (encodings.first != encodings.second) {
    // HTTP/1.0 has no transfer codings: a proxy may frame the body by the connection's end.
    if (header.version() < 11)
      return "Transfer-Encoding in an HTTP/1.0 request";
    if (std::next(encodings.first) != encodings.second)
      return "more than one Transfer-Encoding header";
    if (!beast::iequals(encodings.first->value(), "chunked"))
      return "Transfer-Encoding other than chunked";
    if (length_count != 0)
      return "both Transfer-Encoding and Content-Length";
  }
  if (length_count > 1)
    return "more than one Content-Length header";
  if (length_count == 1 && lengths.first->value().find(',') != beast::string_view::npos)
    return "a list in Content-Length";
  return {};
}

/// Whether the header block (request line to the empty line) folds a header over lines
/// (obs-fold: a line starting with a space or tab). The parser would join the lines, so a
/// folded `Transfer-Encoding` would frame the body for herald but not for a proxy that does not
/// unfold — RFC 9112 §5.2 lets a server refuse it, and herald does.
bool has_folded_header(std::string_view header_block) {
  for (auto at = header_block.find('\n');
       at != std::string_view::npos && at + 1 < header_block.size();
       at = header_block.find('\n', at + 1)) {
    const char next = header_block[at + 1];
    if (next == ' ' || next == '\t')
      return true;
  }
  return false;
}

/// The path the request line of a header block names (its target up to '?' or '#'); empty
/// when the line is not "METHOD SP target SP ...".
std::string_view request_path(std::string_view header_block) {
  const auto line = header_block.substr(0, header_block.find("\r\n"));
  const auto start = line.find(' ');
  if (start == std::string_view::npos)
    return {};
  const auto end = line.find(' ', start + 1);
  if (end == std::string_view::npos)
    return {};
  const auto target = line.substr(start + 1, end - start - 1);
  return target.substr(0, target.find_first_of("?#"));
}

/// Why a request's header is refused although its framing is clear, or empty when it is not.
/// Two Authorization headers leave open which one a proxy checked; RFC 9112 §3.2 asks for a
/// 400 to an HTTP/1.1 request without Host or with two.
std::string_view header_fault(const http::request_header<>& header) {
  const auto hosts = header.count(http::field::host);
  if (hosts > 1)
    return "more than one Host header";
  if (hosts == 0 && header.version() >= 11)
    return "no Host header";
  if (header.count(http::field::authorization) > 1)
    return "more than one Authorization header";
  return {};
}

bool all_digits(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

/// Whether a Host header (RFC 9110 §7.2: host [":" port], an IPv6 host bracketed) names this
/// machine's loopback.
bool is_loopback_authority(std::string_view authority) {
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos)
      return false;
    host = authority.substr(1, close - 1);
    const auto rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':')
      return false;
    port = rest.empty() ? rest : rest.substr(1);
  } else if (const auto colon = authority.find(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  return all_digits(port) && !host.empty() && is_loopback_host(host);
}

http_response json_error_response(http::status status, std::string_view code,
                                  std::string_view message, const std::string& trace_id) {
  http_response response{status, 11};
  response.set(http::field::content_type, "application/json");
  response.set("X-Trace-Id", trace_id);
  response.body() = encode_error(code, message);
  return response;
}

class session;

} // namespace

bool is_loopback_host(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (beast::iequals(host, "localhost"))
    return true;
  beast::error_code ec;
  const auto address = asio::ip::make_address(std::string(host), ec);
  return !ec && address.is_loopback();
}

struct http_server::core {
  core(http_options opts, request_handler h)
      : options(std::move(opts)), handler(std::move(h)),
        ioc(std::make_shared<asio::io_context>(
            static_cast<int>(options.io_threads == 0 ? 1 : options.io_threads))),
        acceptor(asio::make_strand(*ioc)), accept_retry(acceptor.get_executor()) {}

  /// A token when under max_in_flight, else nullptr.
  std::shared_ptr<in_flight_token> enter() {
    if (counter->count.fetch_add(1) >= options.max_in_flight) {
      counter->count.fetch_sub(1);
      return nullptr;
    }
    return std::make_shared<in_flight_token>(counter);
  }

  void do_accept();
  void retry_accept_later(const beast::error_code& ec);
  /// Closes the connection that has been quiet longest (waiting for a request, or stalling
  /// in a header, a body or a response); false when every connection has a request in flight.
  bool make_room();
  /// Answers 503 and closes at once; `reason` goes to the (throttled) log line.
  void refuse(tcp::socket socket, std::string_view reason);
  /// Reports an answer the server gave by itself (http_options::on_refusal).
  void refused(http::status status) const;
  void track(const std::shared_ptr<session>& s);
  void close_sessions();

  /// Lists a session make_room() may close (one without a request in flight); tickets order
  /// sessions by when they last made progress.
  std::uint64_t enter_evictable(std::weak_ptr<session> s);
  /// Moves a listed session behind all others, as it just made progress; 0 when make_room()
  /// took it meanwhile, so the session must close.
  std::uint64_t renew_evictable(std::uint64_t ticket, std::weak_ptr<session> s);
  /// Unlists it; false when make_room() took it meanwhile, so the session must close.
  bool leave_evictable(std::uint64_t ticket);
  /// Logs (throttled) that a connection was closed for being too slow in `phase`.
  void slow_connection_closed(std::string_view phase);

  http_options options;
  request_handler handler;
  std::shared_ptr<asio::io_context> ioc; // shared with responders, which may outlive us
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  tcp::acceptor acceptor;
  asio::steady_timer accept_retry;
  std::vector<std::thread> threads;
  std::shared_ptr<in_flight_counter> counter = std::make_shared<in_flight_counter>();
  std::atomic<bool> draining{false};
  std::atomic<std::uint16_t> bound_port{0};

  std::shared_ptr<connection_counter> connections = std::make_shared<connection_counter>();
  std::shared_ptr<body_budget> bodies = std::make_shared<body_budget>();
  std::size_t max_connections = 0; // set by start(): options.max_connections, maybe lowered
  const std::string refusal = connection_refusal();
  // Touched only on the acceptor's strand:
  std::chrono::milliseconds accept_delay{0};
  log_throttle accept_failure_log;
  log_throttle refusal_log;
  log_throttle eviction_log;
  // Touched on any connection's strand:
  shared_log_throttle slow_log;
  shared_log_throttle budget_log;

  std::mutex evictable_mutex;
  std::map<std::uint64_t, std::weak_ptr<session>> evictable; // by ticket: quiet longest first
  std::uint64_t last_ticket = 0;

  std::mutex lifecycle;
  bool started = false;
  bool stopped = false;

  std::mutex sessions_mutex;
  std::vector<std::weak_ptr<session>> sessions;
  std::size_t prune_at = 64;
};

namespace {

/// What a responder hands over on its first call: the session and the in-flight token.
struct responder_state {
  std::mutex mutex;
  std::shared_ptr<session> target;
  std::shared_ptr<in_flight_token> token;
};

/// The respond_fn given to the handler. Posts the response to the connection's strand; the
/// io_context is kept alive so posting stays valid even after the server stopped.
struct responder {
  std::shared_ptr<asio::io_context> ioc; // declared first: destroyed after the session
  std::shared_ptr<responder_state> state;

  void operator()(http_response response) const;
};

/// One connection: reads a request, hands it to the handler, writes the answer, repeats while
/// keep-alive holds. Every member is touched only on the connection's strand.
class session : public std::enable_shared_from_this<session> {
public:
  session(tcp::socket socket, asio::ip::address peer, http_server::core& core)
      : stream_(std::move(socket)),
        // Bounded, so bytes no limit of the parser counts (a chunk-size line or chunk extension
        // without end, endless trailers) cannot grow it: a full buffer is `buffer_overflow`.
        buffer_(core.options.max_header_bytes + read_slack_bytes), core_(core),
        reservation_(core.bodies), slot_(core.connections, std::move(peer)) {}

  /// Starts reading; called on the acceptor's strand, so the connection can give way from its
  /// accept on.
  void run() {
    ticket_ = core_.enter_evictable(weak_from_this());
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }

  /// Closes the connection from outside (server stop); runs on the strand.
  void shutdown() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->close(); });
  }

  tcp::socket::executor_type executor() { return stream_.get_executor(); }

  /// Closes the connection to make room for a new one; make_room() took it off the list.
  void evict() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      self->ticket_ = 0;
      self->close();
    });
  }

  /// Writes the handler's answer; on the strand.
  void deliver(http_response response, std::shared_ptr<in_flight_token> token) {
    if (closed_)
      return; // the connection went away meanwhile; the token is released on return
    token_ = std::move(token);
    response_ = std::move(response);
    // A client that does not read its answer is as evictable as one that sends nothing.
    ticket_ = core_.enter_evictable(weak_from_this());
    write(!keep_alive_);
  }

private:
  /// Notes that the connection moved (bytes came or went): it goes behind every connection
  /// that has been quiet longer. False when make_room() closed it meanwhile.
  bool made_progress() {
    ticket_ = core_.renew_evictable(ticket_, weak_from_this());
    return ticket_ != 0;
  }

  void read_header() {
    if (closed_)
      return;
    if (!made_progress())
      return close();
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(core_.options.max_header_bytes));
    set_body_limit(core_.options.max_body_bytes);
    reservation_.release();
    keep_alive_ = false;
    head_request_ = false;
    version_ = 11;
    trace_id_.clear();
    header_started_ = false;
    anonymous_body_ = false;
    stream_.expires_after(core_.options.idle_timeout); // also while no byte has come yet
    header_scanned_ = 0;
    read_header_block();
  }

  void set_body_limit(std::size_t bytes) {
    body_limit_ = bytes;
    parser_->body_limit(static_cast<std::uint64_t>(bytes));
  }

  // The header block is read whole first, so its raw bytes can be checked for what the parser
  // would hide (folded lines); parsing it then needs no further read.
  void read_header_block() {
    const auto bytes = buffer_.data();
    const std::string_view buffered{static_cast<const char*>(bytes.data()), bytes.size()};
    if (!header_started_ && !buffered.empty()) {
      // From its first byte on, a header has header_timeout to arrive whole.
      header_started_ = true;
      stream_.expires_after(core_.options.header_timeout);
    }
    // Only what arrived since the last look is searched (3 bytes back, for a split "\r\n\r\n"),
    // so a client sending a byte at a time costs linear, not quadratic, time.
    const auto from = header_scanned_ > 3 ? header_scanned_ - 3 : 0;
    const auto end = buffered.find("\r\n\r\n", from);
    const auto scanned_to = end == std::string_view::npos ? buffered.size() : end + 4;
    for (auto at = buffered.find('\n', header_scanned_); at < scanned_to;
         at = buffered.find('\n', at + 1))
      if (at == 0 || buffered[at - 1] != '\r') // a bare LF: such a block would never end
        return refuse_header("bare LF in the header", "a line ended by LF without CR");
    header_scanned_ = scanned_to;
    if (end != std::string_view::npos)
      return on_header_block(buffered.substr(0, end + 4));
    if (buffer_.size() >= buffer_.max_size()) // full, and no end of headers in it
      return on_header(http::error::header_limit);
    const auto room = std::min<std::size_t>(4096, buffer_.max_size() - buffer_.size());
    stream_.async_read_some(buffer_.prepare(room),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              if (ec)
                                return self->on_header(ec);
                              if (!self->made_progress())
                                return self->close();
                              self->buffer_.commit(n);
                              self->read_header_block();
                            });
  }

  /// Refuses a header block the parser would have read differently from a proxy in front.
  void refuse_header(const char* log_reason, const std::string& what) {
    trace_id_ = log::new_trace_id();
    log::info("http_request_rejected",
              {{"trace_id", trace_id_}, {"status", "400"}, {"reason", log_reason}});
    send_error(http::status::bad_request, "invalid_request", "malformed HTTP request: " + what);
  }

  void on_header_block(std::string_view header_block) {
    if (has_folded_header(header_block))
      return refuse_header("folded header line", "a header folded over lines (obs-fold)");
    // The parser checks Content-Length against the limit as it reads the header, so a path's
    // own limit is chosen from the request line before.
    const auto& limits = core_.options.body_limits_by_path;
    if (auto limit = limits.find(request_path(header_block)); limit != limits.end())
      set_body_limit(limit->second);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code read_ec, std::size_t) {
                              self->on_header(read_ec);
                            });
  }

  void on_header(beast::error_code ec) {
    if (ec)
      return on_read_error(ec);
    auto& request = parser_->get();
    version_ = request.version();
    keep_alive_ = request.keep_alive();
    trace_id_ = choose_trace_id(request["traceparent"], request["X-Request-Id"]);
    if (auto reason = ambiguous_framing(request); !reason.empty()) {
      log::info("http_request_rejected",
                {{"trace_id", trace_id_}, {"status", "400"}, {"reason", std::string(reason)}});
      return send_error(http::status::bad_request, "invalid_request",
                        "ambiguous request framing: " + std::string(reason));
    }
    if (auto fault = header_fault(request); !fault.empty()) {
      log::info("http_request_rejected",
                {{"trace_id", trace_id_}, {"status", "400"}, {"reason", std::string(fault)}});
      return send_error(http::status::bad_request, "invalid_request",
                        "malformed HTTP request: " + std::string(fault));
    }
    if (core_.options.loopback_hosts_only && request.count(http::field::host) != 0 &&
        !is_loopback_authority(request[http::field::host])) {
      log::info("http_request_rejected",
                {{"trace_id", trace_id_}, {"status", "421"}, {"reason", "Host not loopback"}});
      return send_error(http::status::misdirected_request, "misdirected_request",
                        "without API keys (auth.mode none) herald answers only requests "
                        "addressed to localhost, 127.0.0.1 or [::1]");
    }
    header_fields_ = static_cast<std::size_t>(std::distance(request.begin(), request.end()));
    // HEAD is GET without the body: the handler sees a GET, write() leaves the body out.
    head_request_ = request.method() == http::verb::head;
    if (head_request_)
      request.method(http::verb::get);
    if (parser_->is_done())
      return dispatch_request();
    // A body is read only for a request that may have it, and only into room the budget has.
    if (core_.options.check_header && refused_before_body())
      return;
    if (!reserve_body_room())
      return refuse_over_budget();
    auto expect = request[http::field::expect];
    if (beast::iequals(expect, "100-continue")) {
      continue_ = http::response<http::empty_body>{http::status::continue_, version_};
      stream_.expires_after(core_.options.idle_timeout);
      http::async_write(stream_, continue_,
                        [self = shared_from_this()](beast::error_code write_ec, std::size_t) {
                          if (write_ec)
                            return self->close();
                          self->read_body();
                        });
      return;
    }
    read_body();
  }

  /// Asks http_options::check_header about the request; true when it answered the request
  /// (the body left unread, so the connection closes after the answer).
  bool refused_before_body() {
    header_verdict verdict;
    try {
      verdict = core_.options.check_header(parser_->get());
    } catch (const std::exception& e) {
      log::error("http_handler_failed", {{"trace_id", trace_id_}, {"error", e.what()}});
      verdict.refusal = json_error_response(http::status::internal_server_error, "internal_error",
                                            "internal error", trace_id_);
    }
    anonymous_body_ = !verdict.authenticated;
    if (!verdict.refusal)
      return false;
    response_ = std::move(*verdict.refusal);
    write(true);
    return true;
  }

  /// Up to where the total of max_body_bytes_in_flight may grow for this body: anonymous ones
  /// a quarter and those above the ordinary limit (a path's own, e.g. batches) a half, so an
  /// ordinary authenticated request always finds room.
  std::size_t budget_ceiling() const {
    const auto budget = core_.options.max_body_bytes_in_flight;
    if (anonymous_body_)
      return budget / 4;
    return body_limit_ > core_.options.max_body_bytes ? budget / 2 : budget;
  }

  /// Takes room in the budget for what the body may hold next: its declared length at once, or
  /// for a chunked body, steps that double (and at least one read buffer ahead of its size).
  /// The string is given that capacity, so it never grows beyond the room taken. False when
  /// the budget has no room.
  bool reserve_body_room() {
    if (auto declared = parser_->content_length())
      return reservation_.grow_to(static_cast<std::size_t>(*declared), budget_ceiling());
    auto& body = parser_->get().body();
    const auto needed = std::min(body.size() + buffer_.max_size(), body_limit_);
    if (needed <= reservation_.size())
      return true;
    const auto room = std::min(std::max(needed, 2 * reservation_.size()), body_limit_);
    if (!reservation_.grow_to(room, budget_ceiling()))
      return false;
    body.reserve(room);
    reservation_.cover(body.capacity());
    return true;
  }

  void refuse_over_budget() {
    std::size_t held_back = 0;
    if (core_.budget_log.due(held_back))
      log::warn("http_overloaded", {{"trace_id", trace_id_},
                                    {"reason", "max_body_bytes_in_flight reached"},
                                    {"max_body_bytes_in_flight",
                                     std::to_string(core_.options.max_body_bytes_in_flight)},
                                    {"also_refused_since_last_line", std::to_string(held_back)}});
    core_.refused(http::status::service_unavailable);
    response_ = json_error_response(http::status::service_unavailable, "overloaded",
                                    "too many request bodies in flight; retry later", trace_id_);
    response_.set(http::field::retry_after, "1");
    write(true);
  }

  void read_body() {
    body_started_ = std::chrono::steady_clock::now();
    body_received_ = 0;
    read_body_part();
  }

  /// When the next body bytes must have come: at the minimum rate, counted from the body's
  /// start plus the grace, the bytes received so far last until then; and never more than the
  /// idle timeout of silence.
  std::chrono::steady_clock::time_point body_deadline() const {
    const auto& options = core_.options;
    const auto earned = std::chrono::microseconds(
        body_received_ * 1000000 / std::max<std::size_t>(options.min_body_bytes_per_second, 1));
    return std::min(body_started_ + options.body_grace + earned,
                    std::chrono::steady_clock::now() + options.idle_timeout);
  }

  void read_body_part() {
    if (!reserve_body_room())
      return refuse_over_budget();
    stream_.expires_at(body_deadline());
    http::async_read_some(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                            if (ec)
                              return self->on_read_error(ec);
                            if (!self->made_progress())
                              return self->close();
                            self->body_received_ += n;
                            if (!self->parser_->is_done())
                              return self->read_body_part();
                            self->drop_trailer_fields();
                            self->dispatch_request();
                          });
  }

  /// Removes the fields a chunked body's trailer added to the header's: a field sent after the
  /// body (an Authorization, a Content-Type) must not count as sent before it (RFC 9110 §6.5).
  void drop_trailer_fields() {
    auto& fields = parser_->get();
    auto field = std::next(fields.begin(), static_cast<std::ptrdiff_t>(header_fields_));
    while (field != fields.end())
      field = fields.erase(field);
  }

  void on_read_error(beast::error_code ec) {
    if (ec == beast::error::timeout && header_started_)
      core_.slow_connection_closed(parser_ && parser_->is_header_done() ? "body" : "header");
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == http::error::partial_message || closed_)
      return close();
    if (trace_id_.empty())
      trace_id_ =
          parser_ && parser_->is_header_done()
              ? choose_trace_id(parser_->get()["traceparent"], parser_->get()["X-Request-Id"])
              : log::new_trace_id();
    if (ec == http::error::body_limit) {
      log::info("http_request_rejected",
                {{"trace_id", trace_id_}, {"status", "413"}, {"reason", "body too large"}});
      return send_error(http::status::payload_too_large, "payload_too_large",
                        "request body larger than " + std::to_string(body_limit_) + " bytes");
    }
    if (ec == http::error::buffer_overflow) {
      log::info("http_request_rejected",
                {{"trace_id", trace_id_}, {"status", "400"}, {"reason", "framing line too long"}});
      return send_error(http::status::bad_request, "invalid_request",
                        "malformed HTTP request: a chunk header or trailer longer than " +
                            std::to_string(core_.options.max_header_bytes) + " bytes");
    }
    if (ec == http::error::header_limit) {
      log::info("http_request_rejected",
                {{"trace_id", trace_id_}, {"status", "431"}, {"reason", "headers too large"}});
      return send_error(http::status::request_header_fields_too_large, "headers_too_large",
                        "request headers larger than " +
                            std::to_string(core_.options.max_header_bytes) + " bytes");
    }
    if (is_http_parse_error(ec)) {
      log::info("http_request_rejected",
                {{"trace_id", trace_id_}, {"status", "400"}, {"reason", ec.message()}});
      return send_error(http::status::bad_request, "invalid_request",
                        "malformed HTTP request: " + ec.message());
    }
    close(); // a socket error: nobody to answer
  }

  /// Answers a request the server refuses by itself and closes the connection afterwards.
  void send_error(http::status status, std::string_view code, const std::string& message) {
    core_.refused(status);
    response_ = json_error_response(status, code, message, trace_id_);
    write(true);
  }

  void dispatch_request() {
    auto token = core_.enter();
    if (!token) {
      log::warn("http_overloaded",
                {{"trace_id", trace_id_},
                 {"max_in_flight", std::to_string(core_.options.max_in_flight)}});
      core_.refused(http::status::service_unavailable);
      response_ = json_error_response(http::status::service_unavailable, "overloaded",
                                      "too many requests in flight; retry later", trace_id_);
      response_.set(http::field::retry_after, "1");
      return write(!keep_alive_);
    }
    // With its request in flight, the connection waits for herald, not for its client.
    if (!core_.leave_evictable(std::exchange(ticket_, 0)))
      return close(); // make_room() took it meanwhile
    auto state = std::make_shared<responder_state>();
    state->target = shared_from_this();
    state->token = std::move(token);
    respond_fn respond = responder{core_.ioc, state};
    try {
      core_.handler(parser_->release(), respond);
    } catch (const std::exception& e) {
      log::error("http_handler_failed", {{"trace_id", trace_id_}, {"error", e.what()}});
      respond(json_error_response(http::status::internal_server_error, "internal_error",
                                  "internal error", trace_id_));
    } catch (...) {
      log::error("http_handler_failed", {{"trace_id", trace_id_}, {"error", "unknown exception"}});
      respond(json_error_response(http::status::internal_server_error, "internal_error",
                                  "internal error", trace_id_));
    }
  }

  void write(bool close_after) {
    if (core_.draining.load())
      close_after = true;
    response_.version(version_);
    response_.keep_alive(!close_after);
    response_.prepare_payload(); // for HEAD too: Content-Length says what GET would send
    stream_.expires_after(core_.options.idle_timeout);
    auto on_written = [self = shared_from_this(), close_after](beast::error_code ec, std::size_t) {
      self->token_.reset();
      self->reservation_.release();
      if (ec == beast::error::timeout)
        self->core_.slow_connection_closed("response");
      if (ec)
        return self->close();
      if (close_after)
        return self->linger_close();
      self->read_header();
    };
    if (!head_request_)
      return http::async_write(stream_, response_, std::move(on_written));
    head_serializer_.emplace(response_);
    http::async_write_header(stream_, *head_serializer_, std::move(on_written));
  }

  /// Half-closes and drains what the client still sends, so our last response is not lost to
  /// a TCP reset caused by unread data (e.g. the rest of an oversized body).
  void linger_close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec)
      return close();
    stream_.expires_after(linger_timeout);
    drain();
  }

  void drain() {
    stream_.async_read_some(asio::buffer(discard_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->discarded_ += n;
                              if (ec || self->discarded_ > max_discard_bytes)
                                return self->close();
                              self->drain();
                            });
  }

  void close() {
    if (closed_)
      return;
    closed_ = true;
    if (ticket_ != 0)
      core_.leave_evictable(std::exchange(ticket_, 0));
    token_.reset();
    reservation_.release();
    stream_.close();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http_server::core& core_; // valid while IO threads run, the only time it is used
  std::optional<http::request_parser<http::string_body>> parser_;
  http_response response_;
  http::response<http::empty_body> continue_;
  std::optional<http::response_serializer<http::string_body>> head_serializer_;
  std::shared_ptr<in_flight_token> token_;
  std::string trace_id_;
  std::size_t body_limit_ = 0;    // of the request being read
  body_reservation reservation_;  // its room in max_body_bytes_in_flight
  std::size_t header_fields_ = 0; // fields of its header; more came in a chunked trailer
  bool header_started_ = false;   // its first byte came
  bool anonymous_body_ = false;   // check_header saw no credentials
  std::chrono::steady_clock::time_point body_started_{};
  std::size_t body_received_ = 0;
  unsigned version_ = 11;
  bool keep_alive_ = false;
  bool head_request_ = false;
  bool closed_ = false;
  std::array<char, 4096> discard_{};
  std::size_t discarded_ = 0;
  std::size_t header_scanned_ = 0; // bytes of the buffer searched for the end of the headers
  std::uint64_t ticket_ = 0;       // non-zero while make_room() may close the connection
  connection_slot slot_;
};

void responder::operator()(http_response response) const {
  std::shared_ptr<session> target;
  std::shared_ptr<in_flight_token> token;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    target = std::move(state->target);
    token = std::move(state->token);
  }
  if (!target)
    return; // answered already
  auto executor = target->executor();
  asio::post(executor, [target = std::move(target), token = std::move(token),
                        response = std::move(response)]() mutable {
    target->deliver(std::move(response), std::move(token));
  });
}

} // namespace

void http_server::core::track(const std::shared_ptr<session>& s) {
  std::lock_guard<std::mutex> lock(sessions_mutex);
  if (sessions.size() >= prune_at) {
    sessions.erase(std::remove_if(sessions.begin(), sessions.end(),
                                  [](const std::weak_ptr<session>& w) { return w.expired(); }),
                   sessions.end());
    prune_at = std::max<std::size_t>(64, sessions.size() * 2);
  }
  sessions.push_back(s);
}

void http_server::core::close_sessions() {
  std::vector<std::weak_ptr<session>> all;
  {
    std::lock_guard<std::mutex> lock(sessions_mutex);
    all.swap(sessions);
  }
  for (auto& weak : all)
    if (auto s = weak.lock())
      s->shutdown();
}

std::uint64_t http_server::core::enter_evictable(std::weak_ptr<session> s) {
  std::lock_guard<std::mutex> lock(evictable_mutex);
  const std::uint64_t ticket = ++last_ticket;
  evictable.emplace(ticket, std::move(s));
  return ticket;
}

std::uint64_t http_server::core::renew_evictable(std::uint64_t ticket, std::weak_ptr<session> s) {
  std::lock_guard<std::mutex> lock(evictable_mutex);
  if (evictable.erase(ticket) == 0)
    return 0;
  const std::uint64_t renewed = ++last_ticket;
  evictable.emplace(renewed, std::move(s));
  return renewed;
}

bool http_server::core::leave_evictable(std::uint64_t ticket) {
  std::lock_guard<std::mutex> lock(evictable_mutex);
  return evictable.erase(ticket) == 1;
}

bool http_server::core::make_room() {
  std::shared_ptr<session> quietest;
  {
    std::lock_guard<std::mutex> lock(evictable_mutex);
    while (!quietest && !evictable.empty()) {
      quietest = evictable.begin()->second.lock();
      evictable.erase(evictable.begin());
    }
  }
  if (!quietest)
    return false;
  quietest->evict();
  std::size_t held_back = 0;
  if (eviction_log.due(held_back))
    log::info("http_idle_connection_closed",
              {{"reason", "max_connections reached"},
               {"max_connections", std::to_string(max_connections)},
               {"also_closed_since_last_line", std::to_string(held_back)}});
  return true;
}

void http_server::core::slow_connection_closed(std::string_view phase) {
  std::size_t held_back = 0;
  if (slow_log.due(held_back))
    log::info("http_slow_connection_closed",
              {{"phase", std::string(phase)},
               {"also_closed_since_last_line", std::to_string(held_back)}});
}

void http_server::core::refused(http::status status) const {
  if (options.on_refusal)
    options.on_refusal(static_cast<unsigned>(status));
}

void http_server::core::refuse(tcp::socket socket, std::string_view reason) {
  refused(http::status::service_unavailable);
  // Best effort and never blocking: the point is to free the descriptor at once.
  beast::error_code ignored;
  socket.non_blocking(true, ignored);
  socket.write_some(asio::buffer(refusal), ignored);
  // Unread input would turn the close into a reset that may destroy the answer at the client.
  std::array<char, 4096> discard;
  beast::error_code read_ec;
  for (int reads = 0; reads < 16 && !read_ec; ++reads)
    socket.read_some(asio::buffer(discard), read_ec);
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
  std::size_t held_back = 0;
  if (refusal_log.due(held_back))
    log::warn("http_connection_refused",
              {{"reason", std::string(reason)},
               {"max_connections", std::to_string(max_connections)},
               {"max_connections_per_peer", std::to_string(options.max_connections_per_peer)},
               {"also_refused_since_last_line", std::to_string(held_back)}});
}

void http_server::core::retry_accept_later(const beast::error_code& ec) {
  // E.g. out of descriptors (EMFILE, ENFILE): wait for some to free instead of spinning, longer
  // each time it fails again.
  accept_delay = accept_delay.count() == 0 ? first_accept_delay
                                           : std::min(accept_delay * 2, last_accept_delay);
  std::size_t held_back = 0;
  if (accept_failure_log.due(held_back))
    log::warn("http_accept_failed", {{"error", ec.message()},
                                     {"retry_in_ms", std::to_string(accept_delay.count())},
                                     {"also_failed_since_last_line", std::to_string(held_back)}});
  accept_retry.expires_after(accept_delay);
  accept_retry.async_wait([this](beast::error_code wait_ec) {
    if (!wait_ec && acceptor.is_open())
      do_accept();
  });
}

void http_server::core::do_accept() {
  acceptor.async_accept(asio::make_strand(*ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open())
      return;
    if (ec)
      return retry_accept_later(ec);
    accept_delay = std::chrono::milliseconds(0);
    beast::error_code peer_ec;
    auto peer = socket.remote_endpoint(peer_ec).address();
    if (peer_ec) { // gone before we looked
      socket.close(peer_ec);
      return do_accept();
    }
    // One address cannot take every connection (a gateway in front counts as one).
    if (!connections->enter_peer(peer, options.max_connections_per_peer)) {
      refuse(std::move(socket), "max_connections_per_peer reached");
      return do_accept();
    }
    // Over the cap, a quiet connection gives way to the new one; a connection waiting with
    // nothing to say, or dribbling a request, must not lock out one that has a request.
    if (connections->open.load() >= max_connections && !make_room()) {
      connections->leave_peer(peer);
      refuse(std::move(socket), "max_connections reached, every connection busy");
      return do_accept();
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto s = std::make_shared<session>(std::move(socket), std::move(peer), *this);
    track(s);
    s->run();
    do_accept();
  });
}

http_server::http_server(http_options options, request_handler handler)
    : core_(std::make_shared<core>(std::move(options), std::move(handler))) {}

http_server::~http_server() {
  stop();
}

namespace {

/// A listener that cannot be opened: the address and the step that failed, in one line.
[[noreturn]] void cannot_listen(const beast::error_code& ec, const std::string& where,
                                const char* step) {
  throw std::system_error(ec, "cannot listen on " + where + " (" + step + ")");
}

} // namespace

bound_listener::bound_listener(const std::string& host, std::uint16_t port) {
  const std::string where = host + ":" + std::to_string(port);
  asio::io_context ioc;
  beast::error_code ec;
  tcp::endpoint endpoint;
  auto address = asio::ip::make_address(host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, port);
  } else {
    tcp::resolver resolver(ioc);
    auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
    if (ec || results.empty())
      throw std::system_error(ec ? std::error_code(ec)
                                 : std::make_error_code(std::errc::invalid_argument),
                              "cannot resolve listen host " + host);
    endpoint = results.begin()->endpoint();
  }

  tcp::acceptor acceptor(ioc);
  auto fail = [&](const char* step) { cannot_listen(ec, where, step); };
  acceptor.open(endpoint.protocol(), ec);
  if (ec)
    fail("open");
  acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (ec)
    fail("reuse_address");
  acceptor.bind(endpoint, ec);
  if (ec)
    fail("bind");
  // No listen() yet: until start(), a client is refused at once rather than left waiting in
  // the backlog while the database is migrated and opened.
  port_ = acceptor.local_endpoint().port();
  ipv6_ = endpoint.protocol() == tcp::v6();
  fd_ = acceptor.release();
}

bound_listener::~bound_listener() {
  if (fd_ >= 0)
    ::close(fd_);
}

bound_listener::bound_listener(bound_listener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), ipv6_(other.ipv6_), port_(other.port_) {}

void http_server::start() {
  start(bound_listener{core_->options.host, core_->options.port});
}

void http_server::start(bound_listener listener) {
  std::lock_guard<std::mutex> lock(core_->lifecycle);
  if (core_->started)
    throw std::logic_error("http_server::start called twice");
  const auto& options = core_->options;
  core_->acceptor.assign(listener.ipv6_ ? tcp::v6() : tcp::v4(), std::exchange(listener.fd_, -1));
  beast::error_code ec;
  core_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    cannot_listen(ec, options.host + ":" + std::to_string(listener.port()), "listen");
  core_->bound_port = listener.port();
  core_->max_connections = connection_cap(options.max_connections, raise_open_file_limit());

  core_->work.emplace(core_->ioc->get_executor());
  core_->do_accept();
  unsigned count = options.io_threads == 0 ? 1 : options.io_threads;
  for (unsigned i = 0; i < count; ++i) {
    core_->threads.emplace_back([ioc = core_->ioc] {
      for (;;) {
        try {
          ioc->run();
          return;
        } catch (const std::exception& e) {
          log::error("http_io_thread_exception", {{"error", e.what()}});
        } catch (...) {
          log::error("http_io_thread_exception", {{"error", "unknown exception"}});
        }
      }
    });
  }
  core_->started = true;
  log::info("http_listening", {{"host", options.host},
                               {"port", std::to_string(core_->bound_port.load())},
                               {"max_connections", std::to_string(core_->max_connections)}});
}

std::uint16_t http_server::port() const {
  return core_->bound_port.load();
}

void http_server::stop_accepting() {
  core_->draining = true;
  {
    std::lock_guard<std::mutex> lock(core_->lifecycle);
    if (!core_->started || core_->stopped)
      return;
  }
  auto done = std::make_shared<std::promise<void>>();
  auto future = done->get_future();
  asio::post(core_->acceptor.get_executor(), [c = core_.get(), done] {
    beast::error_code ignored;
    c->acceptor.close(ignored);
    c->accept_retry.cancel();
    done->set_value();
  });
  future.wait_for(std::chrono::seconds(5));
}

bool http_server::wait_idle(std::chrono::milliseconds timeout) {
  auto& counter = *core_->counter;
  std::unique_lock<std::mutex> lock(counter.mutex);
  return counter.idle.wait_for(lock, timeout, [&] { return counter.count.load() == 0; });
}

std::size_t http_server::in_flight() const {
  return core_->counter->count.load();
}

void http_server::stop() {
  if (!core_)
    return;
  stop_accepting();
  std::lock_guard<std::mutex> lock(core_->lifecycle);
  if (!core_->started || core_->stopped)
    return;
  core_->stopped = true;
  core_->close_sessions();
  core_->work.reset();
  // The closes above let run() return on its own once every connection is gone; stop() makes
  // sure a straggler cannot hold shutdown up.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!core_->ioc->stopped() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  core_->ioc->stop();
  for (auto& thread : core_->threads)
    if (thread.joinable())
      thread.join();
  core_->threads.clear();
  log::info("http_stopped");
}

} // namespace herald::api
