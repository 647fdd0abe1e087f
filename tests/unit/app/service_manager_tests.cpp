// notify_service_manager speaks systemd's notify protocol: one datagram to $NOTIFY_SOCKET, a
// path or (leading '@') an abstract name.

#include "app/service_manager.hpp"

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

namespace {

/// A datagram socket bound to `name` (a path, or '@' and an abstract name) standing in for
/// the service manager, with a bounded wait for what it receives.
class fake_manager {
public:
  explicit fake_manager(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    BOOST_REQUIRE(fd_ >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, name.data(), name.size());
    if (name[0] == '@')
      address.sun_path[0] = '\0';
    BOOST_REQUIRE(::bind(fd_, reinterpret_cast<const sockaddr*>(&address),
                         static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size())) ==
                  0);
    timeval timeout{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~fake_manager() { ::close(fd_); }

  /// The next datagram, or "" when none came within 5 s.
  std::string receive() {
    char buffer[256];
    auto size = ::recv(fd_, buffer, sizeof buffer, 0);
    return size > 0 ? std::string(buffer, static_cast<std::size_t>(size)) : std::string{};
  }

private:
  int fd_ = -1;
};

std::string unique_name(const std::string& prefix) {
  return prefix + "herald-notify-" + std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

} // namespace

BOOST_AUTO_TEST_SUITE(service_manager_tests)

BOOST_AUTO_TEST_CASE(states_reach_a_socket_named_by_path) {
  const auto path = unique_name("/tmp/");
  fake_manager manager(path);
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  herald::app::notify_service_manager("READY=1");
  herald::app::notify_service_manager("STOPPING=1");
  BOOST_TEST(manager.receive() == "READY=1");
  BOOST_TEST(manager.receive() == "STOPPING=1");
  ::unsetenv("NOTIFY_SOCKET");
  ::unlink(path.c_str());
}

BOOST_AUTO_TEST_CASE(states_reach_an_abstract_socket) {
  const auto name = unique_name("@");
  fake_manager manager(name);
  ::setenv("NOTIFY_SOCKET", name.c_str(), 1);
  herald::app::notify_service_manager("READY=1");
  BOOST_TEST(manager.receive() == "READY=1");
  ::unsetenv("NOTIFY_SOCKET");
}

BOOST_AUTO_TEST_SUITE_END()
