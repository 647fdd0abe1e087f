#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace herald::test {

/// A loopback TCP connection for what a well-behaved client never sends: a header alone, a
/// body a byte at a time, a body never finished, an answer never read. Connects blocking (at
/// most 2 s), then never blocks; a send never raises SIGPIPE.
class raw_socket {
public:
  /// `receive_buffer` non-zero: SO_RCVBUF before connecting, so the server's writes stall
  /// after a few KiB the test does not read.
  explicit raw_socket(std::uint16_t port, int receive_buffer = 0);
  ~raw_socket();
  raw_socket(const raw_socket&) = delete;
  raw_socket& operator=(const raw_socket&) = delete;

  /// Whether the connection was made and the peer has not ended it as far as seen.
  bool open() const { return fd_ >= 0 && !ended_; }

  /// Sends what the socket takes of `bytes` now; the number of bytes taken (0 when it is full
  /// or the connection has ended).
  std::size_t send_some(std::string_view bytes);

  /// Reads what has arrived, without waiting, and keeps it (see received()); notes an end.
  void poll();

  /// Waits up to `bound` for the peer to end the connection, reading what comes; whether it did.
  bool wait_ended(std::chrono::milliseconds bound);

  /// Bytes arrived and not read yet (FIONREAD).
  std::size_t unread() const;

  /// Everything read so far.
  const std::string& received() const { return received_; }

private:
  int fd_ = -1;
  bool ended_ = false;
  std::string received_;
};

} // namespace herald::test
