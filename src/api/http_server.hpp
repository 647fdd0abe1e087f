#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

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
  /// Open connections at most; over it the longest idle one is closed for the new one, or the
  /// new one gets 503 when none is idle. Lowered at start() to fit the descriptor limit.
  std::size_t max_connections = 10000;
  std::chrono::seconds idle_timeout{30}; ///< also before a connection's first byte
  std::size_t max_header_bytes = 16384;
  /// Told the status of every answer the server gives by itself (a malformed or oversized
  /// request, too many requests in flight or connections open), on an IO thread: the request
  /// handler sees the others. Empty: nobody is told.
  std::function<void(unsigned status)> on_refusal;
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
