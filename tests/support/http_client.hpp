#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace herald::test {

/// A response as the tests see it; header names are lower-cased.
struct http_response {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;

  /// The header's value, or "" when absent; `name` in any case.
  std::string header(const std::string& name) const;
  /// Whether the server said it will close the connection.
  bool closes() const;
};

using header_list = std::vector<std::pair<std::string, std::string>>;

/// `Content-Type: application/json`, the usual header of a POST.
header_list json_headers();

/// One HTTP/1.1 keep-alive connection with bounded waits (each exchange gives up after
/// `timeout`). Throws std::runtime_error on connection errors and timeouts.
class http_connection {
public:
  http_connection(const std::string& host, std::uint16_t port,
                  std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~http_connection();
  http_connection(const http_connection&) = delete;
  http_connection& operator=(const http_connection&) = delete;

  /// Sends one request (Host, Content-Length added) and reads its response.
  http_response request(const std::string& method, const std::string& target,
                        const std::string& body = {}, const header_list& headers = {});

  /// Sends raw bytes (e.g. a malformed request) and reads one response.
  http_response raw(const std::string& bytes);

  /// Sends raw bytes and returns without reading anything.
  void send(const std::string& bytes);

  /// Whether the server closed the connection: waits up to `timeout` for end of stream.
  bool closed_by_peer(std::chrono::milliseconds timeout = std::chrono::seconds(5));

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// One request on a fresh connection.
http_response request(const std::string& host, std::uint16_t port, const std::string& method,
                      const std::string& target, const std::string& body = {},
                      const header_list& headers = {});

} // namespace herald::test
