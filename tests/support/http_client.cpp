#include "support/http_client.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>

#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

namespace herald::test {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

/// With HERALD_E2E_RESPONSE_LOG naming a directory, each exchange of http_connection::request
/// is appended there as one JSON line to <pid>.jsonl: tests/web/openapi_responses.mjs checks
/// every response against docs/openapi.yaml. Bodies over 256 KiB are cut (and said so).
void record_exchange(const http::request<http::string_body>& sent, const http_response& got) {
  static const char* const directory = std::getenv("HERALD_E2E_RESPONSE_LOG");
  if (directory == nullptr || *directory == '\0')
    return;
  constexpr std::size_t max_body = 256 * 1024;
  boost::json::object line{{"host", std::string(sent[http::field::host])},
                           {"method", std::string(sent.method_string())},
                           {"target", std::string(sent.target())},
                           {"status", got.status}};
  for (const char* name : {"content-type", "allow", "www-authenticate", "retry-after"})
    if (auto it = got.headers.find(name); it != got.headers.end())
      line[name] = it->second;
  line["body"] = got.body.substr(0, max_body);
  if (got.body.size() > max_body)
    line["body_truncated"] = true;
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  std::error_code ignored;
  std::filesystem::create_directories(directory, ignored);
  std::ofstream out(std::filesystem::path(directory) / (std::to_string(::getpid()) + ".jsonl"),
                    std::ios::app | std::ios::binary);
  out << boost::json::serialize(line) << '\n';
}

} // namespace

std::string http_response::header(const std::string& name) const {
  auto it = headers.find(lower(name));
  return it == headers.end() ? std::string() : it->second;
}

bool http_response::closes() const {
  return lower(header("connection")) == "close";
}

header_list json_headers() {
  return {{"Content-Type", "application/json"}};
}

// Asynchronous operations on a private io_context, run to completion or to the timeout, so a
// misbehaving server fails a test instead of hanging it.
struct http_connection::impl {
  impl(const std::string& h, std::uint16_t p, std::chrono::milliseconds t)
      : host(h), port(p), timeout(t), stream(ioc) {}

  void run(const char* what) {
    ioc.restart();
    ioc.run();
    if (error)
      throw std::runtime_error(std::string(what) + " " + host + ":" + std::to_string(port) + ": " +
                               error.message());
  }

  void connect() {
    tcp::resolver resolver(ioc);
    auto endpoints = resolver.resolve(host, std::to_string(port));
    error = {};
    stream.expires_after(timeout);
    stream.async_connect(endpoints,
                         [this](beast::error_code ec, const tcp::endpoint&) { error = ec; });
    run("connect to");
  }

  http_response read_response() {
    http::response_parser<http::string_body> parser;
    parser.body_limit(boost::none);
    error = {};
    stream.expires_after(timeout);
    http::async_read(stream, buffer, parser,
                     [this](beast::error_code ec, std::size_t) { error = ec; });
    run("read response from");
    http_response out;
    auto message = parser.release();
    out.status = message.result_int();
    for (const auto& field : message)
      out.headers[lower(std::string(field.name_string()))] = std::string(field.value());
    out.body = std::move(message.body());
    return out;
  }

  std::string host;
  std::uint16_t port;
  std::chrono::milliseconds timeout;
  asio::io_context ioc;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  beast::error_code error;
};

http_connection::http_connection(const std::string& host, std::uint16_t port,
                                 std::chrono::milliseconds timeout)
    : impl_(std::make_unique<impl>(host, port, timeout)) {
  impl_->connect();
}

http_connection::~http_connection() {
  beast::error_code ignored;
  impl_->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  impl_->stream.socket().close(ignored);
}

http_response http_connection::request(const std::string& method, const std::string& target,
                                       const std::string& body, const header_list& headers) {
  http::request<http::string_body> message{http::string_to_verb(method), target, 11};
  if (message.method() == http::verb::unknown)
    message.method_string(method);
  message.set(http::field::host, impl_->host + ":" + std::to_string(impl_->port));
  for (const auto& [name, value] : headers)
    message.set(name, value);
  message.body() = body;
  message.prepare_payload();
  impl_->error = {};
  impl_->stream.expires_after(impl_->timeout);
  http::async_write(impl_->stream, message,
                    [this](beast::error_code ec, std::size_t) { impl_->error = ec; });
  impl_->run("write request to");
  auto response = impl_->read_response();
  record_exchange(message, response);
  return response;
}

void http_connection::send(const std::string& bytes) {
  impl_->error = {};
  impl_->stream.expires_after(impl_->timeout);
  asio::async_write(impl_->stream, asio::buffer(bytes),
                    [this](beast::error_code ec, std::size_t) { impl_->error = ec; });
  impl_->run("write to");
}

http_response http_connection::raw(const std::string& bytes) {
  send(bytes);
  return impl_->read_response();
}

bool http_connection::closed_by_peer(std::chrono::milliseconds timeout) {
  char byte;
  bool closed = false;
  impl_->stream.expires_after(timeout);
  impl_->stream.async_read_some(asio::buffer(&byte, 1),
                                [&closed](beast::error_code ec, std::size_t n) {
                                  closed = n == 0 && ec && ec != beast::error::timeout;
                                });
  impl_->ioc.restart();
  impl_->ioc.run();
  return closed;
}

http_response request(const std::string& host, std::uint16_t port, const std::string& method,
                      const std::string& target, const std::string& body,
                      const header_list& headers) {
  http_connection connection(host, port);
  return connection.request(method, target, body, headers);
}

} // namespace herald::test
