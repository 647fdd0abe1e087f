#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace herald::api {

using http_request = boost::beast::http::request<boost::beast::http::string_body>;
using http_response = boost::beast::http::response<boost::beast::http::string_body>;

/// Sends the response to one request. Callable from any thread; only the first call counts.
/// The server fills in version, keep-alive and Content-Length.
using respond_fn = std::function<void(http_response)>;

/// Handles one complete request. Runs on the connection's strand (an IO thread), so it must
/// not block; it calls `respond` exactly once, at once or later from any thread.
using request_handler = std::function<void(http_request, respond_fn)>;

/// What a header_check decided about a request whose body is still to come.
struct header_verdict {
  /// Sent as it is, the body left unread and the connection closed; nullopt: read the body.
  std::optional<http_response> refusal;
  /// Whether the caller proved who it is before sending the body (an API key). An anonymous
  /// body (a provider's callback, whose signature covers the body) may only fill a quarter of
  /// http_options::max_body_bytes_in_flight.
  bool authenticated = false;
};

/// Looks at a request whose body is still to come, before a byte of it is read. Runs on an IO
/// thread; must not block.
using header_check = std::function<header_verdict(const http_request&)>;

/// Listening address and limits of the HTTP server.
struct http_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080; ///< 0 picks a free port; see http_server::port()
  std::size_t max_body_bytes = 65536;
  /// Body limits of particular paths (a request target up to '?'), in place of max_body_bytes.
  std::map<std::string, std::size_t, std::less<>> body_limits_by_path;
  unsigned max_json_depth = 32; ///< passed on to the routes
  unsigned io_threads = 2;
  std::size_t max_in_flight = 10000; ///< requests waiting for an answer; more get 503
  /// Open connections at most; over it the one quiet longest (waiting for a request, or
  /// stalling in a header, body or response) is closed for the new one, or the new one gets 503
  /// when every one has a request in flight. Lowered at start() to fit the descriptor limit.
  std::size_t max_connections = 10000;
  std::chrono::seconds idle_timeout{30}; ///< also before a connection's first byte, and a write
  std::size_t max_header_bytes = 16384;
  /// A request's whole header must arrive within this time of its first byte.
  std::chrono::milliseconds header_timeout{10000};
  /// A body must arrive at this average rate at least, counted from its start plus body_grace:
  /// a connection that falls behind is closed.
  std::size_t min_body_bytes_per_second = 1024;
  std::chrono::milliseconds body_grace{5000};
  /// Open connections from one address at most; more get 503.
  std::size_t max_connections_per_peer = 512;
  /// Request bodies held at once across all connections (declared Content-Length, or what a
  /// chunked body has grown to): a request that does not fit gets 503 before its body is read.
  /// Bodies larger than max_body_bytes (a path's own higher limit) are taken only while the
  /// total stays within half of it, anonymous ones (header_verdict) within a quarter: an
  /// ordinary authenticated request always finds half of it free.
  std::size_t max_body_bytes_in_flight = std::size_t{256} * 1024 * 1024;
  /// Only requests whose Host names this machine (localhost, 127.0.0.0/8, [::1]) are served;
  /// others get 421. Set under auth mode none, where a browser tricked into a DNS rebinding
  /// must not read what any local process could.
  bool loopback_hosts_only = false;
  /// Consulted for every request with a body still to come (authentication, before a body
  /// can take memory). Empty: every request's body is read, as an authenticated one.
  header_check check_header;
  /// Told the status of every answer the server gives by itself (a malformed or oversized
  /// request, too many requests in flight, connections open or bodies held), on an IO thread:
  /// the request handler and check_header see the others. Empty: nobody is told.
  std::function<void(unsigned status)> on_refusal;
};

/// Whether `host` (a name or address, an IPv6 one bracketed or not) is this machine's loopback:
/// "localhost", 127.0.0.0/8 or ::1.
bool is_loopback_host(std::string_view host);

/// A socket bound and listening before the server that serves it exists: herald takes its
/// ports before it opens the database or starts an actor, so a port in use stops it with one
/// line and nothing to undo. Closed on destruction unless a server took it.
class bound_listener {
public:
  /// Resolves `host` and binds `port` (0: a free one); http_server::start() listens. Throws
  /// std::system_error naming the address when it cannot (port taken, bad host).
  bound_listener(const std::string& host, std::uint16_t port);
  ~bound_listener();
  bound_listener(bound_listener&& other) noexcept;
  bound_listener& operator=(bound_listener&&) = delete;
  bound_listener(const bound_listener&) = delete;
  bound_listener& operator=(const bound_listener&) = delete;

  /// The port bound.
  std::uint16_t port() const { return port_; }

private:
  friend class http_server;
  int fd_ = -1;
  bool ipv6_ = false;
  std::uint16_t port_ = 0;
};

/// Asynchronous HTTP/1.1 server (Boost.Beast) with keep-alive, one strand per connection and
/// a bounded number of requests in flight. Never blocks its IO threads; a malformed or
/// oversized request gets a JSON error, never a crash.
class http_server {
public:
  http_server(http_options options, request_handler handler);
  /// Stops the server if it still runs.
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// Binds, listens and starts the IO threads. Raises the process's soft limit on open files
  /// to the hard limit (logging both). Throws std::system_error naming the address when it
  /// cannot listen (port taken, bad host).
  void start();

  /// start() on a socket bound before (on the options' address): listens on it; throws
  /// std::system_error when it cannot.
  void start(bound_listener listener);

  /// The port actually bound (useful with port 0); 0 before start().
  std::uint16_t port() const;

  /// Stops taking new connections; open ones finish their requests and then close.
  void stop_accepting();

  /// Waits until no request is in flight or `timeout` passed; true when idle.
  bool wait_idle(std::chrono::milliseconds timeout);

  /// Requests accepted and not yet fully answered.
  std::size_t in_flight() const;

  /// Stops accepting, drops open connections and joins the IO threads. Do not call it from
  /// a request handler.
  void stop();

  struct core;

private:
  std::shared_ptr<core> core_;
};

} // namespace herald::api
