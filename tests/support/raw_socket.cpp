#include "support/raw_socket.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace herald::test {

raw_socket::raw_socket(std::uint16_t port, int receive_buffer) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0)
    return;
  if (receive_buffer > 0)
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  timeval bound{2, 0}; // connect honours the send timeout
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd_);
    fd_ = -1;
    return;
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

raw_socket::~raw_socket() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::size_t raw_socket::send_some(std::string_view bytes) {
  std::size_t sent = 0;
  while (open() && sent < bytes.size()) {
    const auto n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    ended_ = true; // EPIPE, ECONNRESET: the server closed it
  }
  return sent;
}

void raw_socket::poll() {
  char chunk[4096];
  while (open()) {
    const auto n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      received_.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    ended_ = true; // 0: orderly end; ECONNRESET: reset
  }
}

std::size_t raw_socket::unread() const {
  int bytes = 0;
  if (fd_ < 0 || ::ioctl(fd_, FIONREAD, &bytes) != 0 || bytes < 0)
    return 0;
  return static_cast<std::size_t>(bytes);
}

bool raw_socket::wait_ended(std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (poll(); open(); poll()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return false;
    pollfd readable{fd_, POLLIN, 0};
    ::poll(&readable, 1, static_cast<int>(left.count()));
  }
  return fd_ >= 0;
}

} // namespace herald::test
