#include "tools/http_client.hpp"

#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace herald::tools {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t max_reply_bytes = 64 << 20;

} // namespace

/// Beast's timeouts work on asynchronous operations only, so every step is an async call run
/// to completion on a private io_context.
struct http_client::impl {
  impl(host_port s, std::chrono::milliseconds t) : server(std::move(s)), timeout(t) {}

  void fail(const std::string& what, const beast::error_code& ec) {
    close();
    throw connection_error(what + " " + server.to_string() + ": " + ec.message());
  }

  /// Runs the io_context until the pending operation finished.
  void run() {
    ioc.restart();
    ioc.run();
  }

  void connect() {
    if (stream)
      return;
    beast::error_code ec;
    tcp::resolver resolver(ioc);
    auto endpoints = resolver.resolve(server.host, std::to_string(server.port), ec);
    if (ec)
      fail("cannot resolve", ec);
    stream.emplace(ioc);
    stream->expires_after(timeout);
    stream->async_connect(endpoints, [&ec](beast::error_code e, const tcp::endpoint&) { ec = e; });
    run();
    if (ec)
      fail("cannot connect to", ec);
    stream->socket().set_option(tcp::no_delay(true), ec);
  }

  http_reply exchange(const std::string& method, const std::string& target, const std::string& body,
                      const header_fields& headers) {
    connect();
    http::request<http::string_body> request{http::string_to_verb(method), target, 11};
    request.set(http::field::host, server.to_string());
    request.set(http::field::user_agent, "herald-tools");
    request.keep_alive(true);
    for (const auto& [name, value] : headers)
      request.set(name, value);
    if (!body.empty() || request.method() == http::verb::post) {
      request.set(http::field::content_type, "application/json");
      request.body() = body;
    }
    request.prepare_payload();

    beast::error_code ec;
    stream->expires_after(timeout);
    http::async_write(*stream, request, [&ec](beast::error_code e, std::size_t) { ec = e; });
    run();
    if (ec)
      fail("cannot send to", ec);

    http::response_parser<http::string_body> parser;
    parser.body_limit(max_reply_bytes);
    stream->expires_after(timeout);
    http::async_read(*stream, buffer, parser, [&ec](beast::error_code e, std::size_t) { ec = e; });
    run();
    if (ec)
      fail("no answer from", ec);

    auto response = parser.release();
    http_reply reply;
    reply.status = static_cast<int>(response.result_int());
    reply.body = std::move(response.body());
    reply.retry_after = std::string(response[http::field::retry_after]);
    if (!response.keep_alive())
      close();
    return reply;
  }

  void close() {
    if (stream) {
      beast::error_code ignored;
      stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream->close();
      stream.reset();
    }
    buffer.clear();
  }

  host_port server;
  std::chrono::milliseconds timeout;
  asio::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
};

http_client::http_client(host_port server, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<impl>(std::move(server), timeout)) {}

http_client::~http_client() {
  impl_->close();
}

http_reply http_client::request(const std::string& method, const std::string& target,
                                const std::string& body, const header_fields& headers) {
  return impl_->exchange(method, target, body, headers);
}

void http_client::close() {
  impl_->close();
}

} // namespace herald::tools
