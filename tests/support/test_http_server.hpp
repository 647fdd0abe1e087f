#pragma once

// A real HTTP/1.1 server for tests that call out over HTTP (webhook channel, status events):
// 127.0.0.1, ephemeral port, one Asio thread, keep-alive; answers by a script and records
// every request. Header-only: the shared test-support library does not carry Beast.

#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace herald::test {

/// What the test server saw.
struct recorded_request {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers; ///< lower-case names
  std::string body;
  std::size_t connection = 0; ///< 1-based number of the TCP connection it came on

  std::string header(const std::string& name) const {
    auto found = headers.find(name);
    return found == headers.end() ? std::string{} : found->second;
  }
};

/// How the test server answers one request.
struct reply {
  unsigned status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body = "ok";
  bool hang = false; ///< never answer (the connection stays open)
  /// How the answer ends: `cut` sends the head and half the body, `dropped` nothing, `garbage`
  /// bytes that are no HTTP; each then closes the connection.
  enum class ending { complete, cut, dropped, garbage } end = ending::complete;
};

/// A real HTTP/1.1 server on 127.0.0.1 (ephemeral port), one Asio thread, keep-alive; answers
/// every request by a script and records it.
class test_server {
  using tcp = boost::asio::ip::tcp;

public:
  using script = std::function<reply(const recorded_request&)>;

  explicit test_server(script answer) : answer_(std::move(answer)) {
    acceptor_.open(tcp::v4());
    acceptor_.set_option(boost::asio::socket_base::reuse_address(true));
    acceptor_.bind({boost::asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }

  ~test_server() {
    io_.stop();
    thread_.join();
  }

  test_server(const test_server&) = delete;
  test_server& operator=(const test_server&) = delete;

  std::string url(const std::string& path = "/hook") const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + path;
  }

  std::vector<recorded_request> requests() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return requests_;
  }

  std::size_t connections() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return connections_;
  }

  /// Waits (bounded) until `count` requests have arrived.
  bool wait_for_requests(std::size_t count,
                         std::chrono::milliseconds bound = std::chrono::seconds{10}) const {
    std::unique_lock<std::mutex> lock{mutex_};
    return arrived_.wait_for(lock, bound, [&] { return requests_.size() >= count; });
  }

private:
  struct session : std::enable_shared_from_this<session> {
    session(tcp::socket s, test_server& owner, std::size_t number)
        : socket(std::move(s)), server(owner), connection(number) {}

    void read() {
      request = {};
      boost::beast::http::async_read(
          socket, buffer, request,
          [self = shared_from_this()](boost::beast::error_code ec, std::size_t) {
            if (!ec)
              self->server.handle(self);
          });
    }

    tcp::socket socket;
    test_server& server;
    std::size_t connection;
    boost::beast::flat_buffer buffer;
    boost::beast::http::request<boost::beast::http::string_body> request;
    boost::beast::http::response<boost::beast::http::string_body> response;
  };

  void accept() {
    acceptor_.async_accept([this](boost::beast::error_code ec, tcp::socket socket) {
      if (ec)
        return;
      std::size_t number = 0;
      {
        std::lock_guard<std::mutex> guard{mutex_};
        number = ++connections_;
      }
      std::make_shared<session>(std::move(socket), *this, number)->read();
      accept();
    });
  }

  void handle(const std::shared_ptr<session>& s) {
    recorded_request seen;
    seen.method = std::string{s->request.method_string()};
    seen.target = std::string{s->request.target()};
    seen.body = s->request.body();
    seen.connection = s->connection;
    for (const auto& field : s->request) {
      std::string name{field.name_string()};
      for (auto& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      seen.headers[name] = std::string{field.value()};
    }
    const auto keep_alive = s->request.keep_alive();
    const auto answer = answer_(seen);
    {
      std::lock_guard<std::mutex> guard{mutex_};
      requests_.push_back(std::move(seen));
    }
    arrived_.notify_all();
    if (answer.hang) {
      held_.push_back(s); // keeps the connection open, silent, until the server goes
      return;
    }
    if (answer.end != reply::ending::complete) {
      break_off(s, answer);
      return;
    }
    s->response = {static_cast<boost::beast::http::status>(answer.status), s->request.version()};
    for (const auto& [name, value] : answer.headers)
      s->response.set(name, value);
    s->response.body() = answer.body;
    s->response.keep_alive(keep_alive);
    s->response.prepare_payload();
    boost::beast::http::async_write(s->socket, s->response,
                                    [s, keep_alive](boost::beast::error_code ec, std::size_t) {
                                      if (ec)
                                        return;
                                      if (keep_alive)
                                        s->read();
                                      else
                                        s->socket.shutdown(tcp::socket::shutdown_send, ec);
                                    });
  }

  /// Answers `answer` as it says it ends, then closes the connection.
  void break_off(const std::shared_ptr<session>& s, const reply& answer) {
    auto bytes = std::make_shared<std::string>();
    if (answer.end == reply::ending::garbage) {
      *bytes = "\x17\x03\x03 not an HTTP answer \x01\x02\r\n\r\n";
    } else if (answer.end == reply::ending::cut) {
      s->response = {static_cast<boost::beast::http::status>(answer.status), s->request.version()};
      for (const auto& [name, value] : answer.headers)
        s->response.set(name, value);
      s->response.body() = answer.body;
      s->response.prepare_payload(); // Content-Length of the whole body
      std::ostringstream whole;
      whole << s->response;
      *bytes = whole.str();
      bytes->resize(bytes->size() - (answer.body.size() + 1) / 2);
    }
    boost::asio::async_write(s->socket, boost::asio::buffer(*bytes),
                             [s, bytes](boost::beast::error_code ec, std::size_t) {
                               s->socket.shutdown(tcp::socket::shutdown_both, ec);
                               s->socket.close(ec);
                             });
  }

  script answer_;
  boost::asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  std::vector<std::shared_ptr<session>> held_; ///< touched on the server thread only
  mutable std::mutex mutex_;
  mutable std::condition_variable arrived_;
  std::vector<recorded_request> requests_;
  std::size_t connections_ = 0;
  std::thread thread_;
};

} // namespace herald::test
