#pragma once

#include "tools/fake_exchange.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace herald::tools {

/// A small HTTP/2 server over cleartext with prior knowledge (h2c, RFC 9113 §3.3): the stand-in
/// for providers that speak nothing but HTTP/2 (APNs), for tests and `herald sim-provider`.
/// One thread, one listening socket, an nghttp2 server session per connection; every request
/// (any number of concurrent streams) is answered by `handler` on that thread, which must
/// therefore answer quickly. A reply that hangs keeps its stream open and silent until the
/// client gives up on it. Not meant for traffic from outside the machine.
class h2c_server {
public:
  using handler = std::function<fake_reply(const fake_request&)>;

  /// Listens on `host`:`port` (0: a free port) and starts serving. Throws std::runtime_error
  /// when it cannot listen.
  explicit h2c_server(handler answer, const std::string& host = "127.0.0.1",
                      std::uint16_t port = 0);
  /// Stops serving and closes every connection.
  ~h2c_server();

  h2c_server(const h2c_server&) = delete;
  h2c_server& operator=(const h2c_server&) = delete;

  std::uint16_t port() const;
  /// "http://<host>:<port>" followed by `path`.
  std::string url(const std::string& path = "") const;
  /// Connections accepted so far.
  std::size_t connections() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace herald::tools
