#include "app/service_manager.hpp"

#include "observability/log.hpp"

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace herald::app {

void notify_service_manager(std::string_view state) {
  const char* socket_path = std::getenv("NOTIFY_SOCKET");
  if (!socket_path || !*socket_path)
    return;
  std::string path = socket_path;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  // "@name" is a socket in the abstract namespace: its address starts with a NUL byte.
  if (path.size() >= sizeof(address.sun_path) || (path[0] != '/' && path[0] != '@')) {
    log::warn("herald.notify_failed", {{"error", "NOTIFY_SOCKET is not a socket path"}});
    return;
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  if (path[0] == '@')
    address.sun_path[0] = '\0';
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    log::warn("herald.notify_failed", {{"error", std::strerror(errno)}});
    return;
  }
  if (::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr*>(&address), length) < 0)
    log::warn("herald.notify_failed", {{"error", std::strerror(errno)}});
  ::close(fd);
}

} // namespace herald::app
