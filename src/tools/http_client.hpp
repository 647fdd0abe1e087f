#pragma once

#include "tools/cli_args.hpp"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace herald::tools {

/// A connection-level failure: refused, reset, timed out, closed early. The request may or may
/// not have reached the server.
struct connection_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Extra request headers, sent as given (name, value).
using header_fields = std::vector<std::pair<std::string, std::string>>;

struct http_reply {
  int status = 0;
  std::string body;
  std::string retry_after; ///< the Retry-After header, "" when absent
};

/// A small synchronous HTTP/1.1 keep-alive client (Boost.Beast) for the tools. Every exchange
/// is bounded by `timeout`; it connects lazily and reconnects after an error. One thread at a
/// time.
class http_client {
public:
  http_client(host_port server, std::chrono::milliseconds timeout);
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  /// Sends one request and reads its answer; throws connection_error. `body` is sent as
  /// application/json when not empty (or when `method` is POST).
  http_reply request(const std::string& method, const std::string& target,
                     const std::string& body = {}, const header_fields& headers = {});

  /// Drops the connection (the next request reconnects).
  void close();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace herald::tools
