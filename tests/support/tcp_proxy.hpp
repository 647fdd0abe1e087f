#pragma once

// A TCP relay on a loopback port to another address, that a test can cut and restore: cut()
// closes every relayed connection, and until restore() every new one is closed as soon as it is
// accepted (a client's connect fails at once, as against a database that was stopped). The port
// stays bound meanwhile: released, it could be taken as another connection's local port. For
// drills that cut one process off from a server the others still reach.

#include <array>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>

namespace herald::test {

class tcp_proxy {
  using tcp = boost::asio::ip::tcp;

public:
  /// Relays 127.0.0.1:<a free port> to `target_host`:`target_port`, listening at once.
  tcp_proxy(std::string target_host, std::uint16_t target_port)
      : target_(boost::asio::ip::make_address(target_host), target_port),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }

  ~tcp_proxy() {
    work_.reset();
    boost::asio::post(io_, [this] { close_all(); });
    io_.stop();
    thread_.join();
  }

  tcp_proxy(const tcp_proxy&) = delete;
  tcp_proxy& operator=(const tcp_proxy&) = delete;

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

  /// Closes every relayed connection and refuses new ones; returns once done.
  void cut() {
    run_on_io([this] {
      cut_ = true;
      close_links();
    });
  }

  /// Relays new connections again.
  void restore() {
    run_on_io([this] { cut_ = false; });
  }

private:
  struct link {
    explicit link(boost::asio::io_context& io) : client(io), server(io) {}
    tcp::socket client;
    tcp::socket server;
    std::array<char, 16384> upstream{};
    std::array<char, 16384> downstream{};
  };

  // Runs `work` on the relay's thread and waits for it.
  template <class Work> void run_on_io(Work work) {
    std::promise<void> done;
    boost::asio::post(io_, [&] {
      work();
      done.set_value();
    });
    done.get_future().wait();
  }

  void close_all() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    close_links();
  }

  void close_links() {
    boost::system::error_code ignored;
    for (auto& l : links_) {
      l->client.close(ignored);
      l->server.close(ignored);
    }
    links_.clear();
  }

  void accept() {
    auto l = std::make_shared<link>(io_);
    acceptor_.async_accept(l->client, [this, l](boost::system::error_code ec) {
      if (ec)
        return; // closed: the relay is going
      accept();
      if (cut_) {
        boost::system::error_code ignored;
        l->client.close(ignored);
        return;
      }
      links_.push_back(l);
      l->server.async_connect(target_, [this, l](boost::system::error_code connect_error) {
        if (connect_error) {
          boost::system::error_code ignored;
          l->client.close(ignored);
          return;
        }
        pump(l, l->client, l->server, l->upstream);
        pump(l, l->server, l->client, l->downstream);
      });
    });
  }

  // Copies from one socket to the other until either closes; then closes both.
  void pump(const std::shared_ptr<link>& l, tcp::socket& from, tcp::socket& to,
            std::array<char, 16384>& buffer) {
    from.async_read_some(
        boost::asio::buffer(buffer),
        [this, l, &from, &to, &buffer](boost::system::error_code ec, std::size_t n) {
          if (ec) {
            boost::system::error_code ignored;
            to.close(ignored);
            from.close(ignored);
            return;
          }
          boost::asio::async_write(
              to, boost::asio::buffer(buffer.data(), n),
              [this, l, &from, &to, &buffer](boost::system::error_code write_error, std::size_t) {
                if (write_error) {
                  boost::system::error_code ignored;
                  from.close(ignored);
                  return;
                }
                pump(l, from, to, buffer);
              });
        });
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      io_.get_executor()};
  tcp::endpoint target_;
  tcp::acceptor acceptor_;
  bool cut_ = false; ///< only touched on the relay's thread
  std::vector<std::shared_ptr<link>> links_;
  std::thread thread_;
};

} // namespace herald::test
