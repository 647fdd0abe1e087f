#include "tools/h2c_server.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <list>
#include <map>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdexcept>
#include <string_view>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace herald::tools {
namespace {

/// Largest request body kept; a fake needs no more.
constexpr std::size_t max_request_body = 1024 * 1024;
/// Output buffered before the socket must take some of it.
constexpr std::size_t max_buffered_output = 256 * 1024;

/// One request stream: what the client sent, then what the server answers.
struct stream {
  fake_request request;
  std::string answer_body;
  std::size_t sent = 0;
  std::size_t limit = 0; ///< bytes of the body sent: all of it, or half when cut
  bool cut = false;
};

struct connection {
  int fd = -1;
  nghttp2_session* session = nullptr;
  const h2c_server::handler* answer = nullptr;
  std::map<std::int32_t, stream> streams;
  std::string output;       ///< bytes for the socket, not yet written
  bool garbage = false;     ///< a reply asked for garbage: no more HTTP/2, close once written
  bool peer_closed = false; ///< the client closed, or the connection failed

  connection() = default;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection() {
    if (session != nullptr)
      nghttp2_session_del(session);
    if (fd >= 0)
      ::close(fd);
  }
};

connection& of(void* user_data) {
  return *static_cast<connection*>(user_data);
}

stream* find_stream(connection& c, std::int32_t id) {
  auto found = c.streams.find(id);
  return found == c.streams.end() ? nullptr : &found->second;
}

/// A header for nghttp2_submit_response, which copies it: `name` and `value` need only outlive
/// that call (string literals or strings, never temporaries).
nghttp2_nv header_pair(std::string_view name, std::string_view value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
          value.size(), NGHTTP2_NV_FLAG_NONE};
}

ssize_t read_answer_body(nghttp2_session*, std::int32_t, std::uint8_t* buffer, std::size_t length,
                         std::uint32_t* flags, nghttp2_data_source* source, void*) {
  auto& s = *static_cast<stream*>(source->ptr);
  const auto n = std::min(length, s.limit - s.sent);
  std::memcpy(buffer, s.answer_body.data() + s.sent, n);
  s.sent += n;
  if (s.sent == s.limit) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (s.cut) // the stream is reset once this frame is out (on_frame_sent)
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
  }
  return static_cast<ssize_t>(n);
}

/// Answers the complete request on stream `id`.
void answer_request(connection& c, std::int32_t id, stream& s) {
  s.request.protocol = "HTTP/2";
  fake_reply reply;
  try {
    reply = (*c.answer)(s.request);
  } catch (const std::exception& e) {
    reply = {500, "text/plain", std::string{"handler failed: "} + e.what()};
  }
  if (reply.hang)
    return; // open and silent until the client resets the stream
  switch (reply.ending) {
  case fake_ending::dropped:
    nghttp2_submit_rst_stream(c.session, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
    return;
  case fake_ending::garbage:
    c.garbage = true;
    c.output.append("\x17\x03\x03 not an HTTP/2 frame \x01\x02\r\n\r\n");
    return;
  case fake_ending::cut:
  case fake_ending::complete:
    break;
  }
  s.answer_body = std::move(reply.body);
  s.cut = reply.ending == fake_ending::cut;
  s.limit = s.cut ? s.answer_body.size() / 2 : s.answer_body.size();
  const std::string status = std::to_string(reply.status);
  const std::string length = std::to_string(s.answer_body.size());
  std::vector<nghttp2_nv> headers{header_pair(":status", status)};
  if (!reply.content_type.empty())
    headers.push_back(header_pair("content-type", reply.content_type));
  headers.push_back(header_pair("content-length", length));
  for (const auto& [name, value] : reply.headers)
    headers.push_back(header_pair(name, value));
  nghttp2_data_provider body{};
  body.source.ptr = &s;
  body.read_callback = read_answer_body;
  // nghttp2 copies the header pairs; the body is read from the stream as frames go out.
  nghttp2_submit_response(c.session, id, headers.data(), headers.size(),
                          s.answer_body.empty() && !s.cut ? nullptr : &body);
}

int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
    of(user_data).streams[frame->hd.stream_id] = stream{};
  return 0;
}

int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
              std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
              std::uint8_t, void* user_data) {
  auto* s = find_stream(of(user_data), frame->hd.stream_id);
  if (s == nullptr)
    return 0;
  const std::string key(reinterpret_cast<const char*>(name), name_length);
  std::string text(reinterpret_cast<const char*>(value), value_length);
  if (key == ":method")
    s->request.method = std::move(text);
  else if (key == ":path")
    s->request.target = std::move(text);
  else if (key.empty() || key.front() != ':') // HTTP/2 header names are lower-case already
    s->request.headers.emplace_back(key, std::move(text));
  return 0;
}

int on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                  std::size_t length, void* user_data) {
  auto* s = find_stream(of(user_data), id);
  if (s != nullptr && s->request.body.size() + length <= max_request_body)
    s->request.body.append(reinterpret_cast<const char*>(data), length);
  return 0;
}

int on_frame_received(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto& c = of(user_data);
  const bool ends_request = (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
                            (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (ends_request)
    if (auto* s = find_stream(c, frame->hd.stream_id))
      answer_request(c, frame->hd.stream_id, *s);
  return 0;
}

int on_frame_sent(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
  if (frame->hd.type != NGHTTP2_DATA)
    return 0;
  auto* s = find_stream(of(user_data), frame->hd.stream_id);
  if (s != nullptr && s->cut && s->sent == s->limit)
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                              NGHTTP2_INTERNAL_ERROR);
  return 0;
}

int on_stream_closed(nghttp2_session*, std::int32_t id, std::uint32_t, void* user_data) {
  of(user_data).streams.erase(id);
  return 0;
}

struct callbacks_holder {
  nghttp2_session_callbacks* callbacks = nullptr;
  callbacks_holder() {
    if (nghttp2_session_callbacks_new(&callbacks) != 0)
      throw std::runtime_error("h2c_server: nghttp2_session_callbacks_new failed");
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_received);
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, on_frame_sent);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_closed);
  }
  ~callbacks_holder() { nghttp2_session_callbacks_del(callbacks); }
  callbacks_holder(const callbacks_holder&) = delete;
  callbacks_holder& operator=(const callbacks_holder&) = delete;
};

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("h2c_server: " + what + ": " + std::strerror(errno));
}

} // namespace

struct h2c_server::impl {
  handler answer;
  std::string host;
  std::uint16_t port = 0;
  int listener = -1;
  int wake = -1; ///< eventfd: the destructor asks the thread to stop
  std::atomic<std::size_t> accepted{0};
  callbacks_holder callbacks;
  std::list<connection> open; ///< touched by the server thread only
  std::thread thread;

  ~impl() {
    if (listener >= 0)
      ::close(listener);
    if (wake >= 0)
      ::close(wake);
  }

  void listen(const std::string& at, std::uint16_t wanted) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(wanted);
    if (::inet_pton(AF_INET, at.c_str(), &address.sin_addr) != 1)
      throw std::runtime_error("h2c_server: not an IPv4 address: " + at);
    listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listener < 0)
      fail("socket");
    const int on = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
      fail("bind " + at + ":" + std::to_string(wanted));
    if (::listen(listener, 128) != 0)
      fail("listen");
    socklen_t size = sizeof address;
    if (::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size) != 0)
      fail("getsockname");
    host = at;
    port = ntohs(address.sin_port);
    wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake < 0)
      fail("eventfd");
  }

  void accept_all() {
    for (;;) {
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0)
        return;
      const int on = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      auto& c = open.emplace_back();
      c.fd = fd;
      c.answer = &answer;
      ++accepted;
      const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000}};
      if (nghttp2_session_server_new(&c.session, callbacks.callbacks, &c) != 0 ||
          nghttp2_submit_settings(c.session, NGHTTP2_FLAG_NONE, settings, 1) != 0)
        c.peer_closed = true;
    }
  }

  /// Feeds what the client sent to the session (which answers complete requests).
  void receive(connection& c) {
    std::uint8_t buffer[16384];
    for (;;) {
      const auto n = ::recv(c.fd, buffer, sizeof buffer, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        c.peer_closed = true;
        return;
      }
      if (n < 0)
        return;
      if (c.garbage)
        continue; // the connection is spoiled: nothing more is read into it
      if (nghttp2_session_mem_recv(c.session, buffer, static_cast<std::size_t>(n)) < 0) {
        c.peer_closed = true;
        return;
      }
    }
  }

  /// Writes what the session has to send, as far as the socket takes it.
  void transmit(connection& c) {
    while (!c.garbage && c.output.size() < max_buffered_output) {
      const std::uint8_t* data = nullptr;
      const auto n = nghttp2_session_mem_send(c.session, &data);
      if (n < 0) {
        c.peer_closed = true;
        return;
      }
      if (n == 0)
        break;
      c.output.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    while (!c.output.empty()) {
      const auto n = ::send(c.fd, c.output.data(), c.output.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
          c.peer_closed = true;
        return;
      }
      c.output.erase(0, static_cast<std::size_t>(n));
    }
  }

  /// Whether the connection is done with: closed by the client, spoiled and written, or ended
  /// by the session (GOAWAY both ways).
  static bool finished(const connection& c) {
    if (c.peer_closed)
      return true;
    if (c.garbage)
      return c.output.empty();
    return c.output.empty() && nghttp2_session_want_read(c.session) == 0 &&
           nghttp2_session_want_write(c.session) == 0;
  }

  bool wants_output(const connection& c) const {
    return !c.output.empty() || (!c.garbage && nghttp2_session_want_write(c.session) != 0);
  }

  void run() {
    std::vector<pollfd> polled;
    for (;;) {
      polled.clear();
      polled.push_back({wake, POLLIN, 0});
      polled.push_back({listener, POLLIN, 0});
      for (const auto& c : open)
        polled.push_back({c.fd, static_cast<short>(POLLIN | (wants_output(c) ? POLLOUT : 0)), 0});
      if (::poll(polled.data(), polled.size(), -1) < 0 && errno != EINTR)
        return;
      if (polled[0].revents != 0)
        return;
      if (polled[1].revents != 0)
        accept_all();
      std::size_t index = 2;
      for (auto it = open.begin(); it != open.end(); ++index) {
        auto& c = *it;
        // Connections accepted just now were not polled: they get their turn next time.
        const short events = index < polled.size() && polled[index].fd == c.fd
                                 ? polled[index].revents
                                 : static_cast<short>(0);
        if ((events & (POLLIN | POLLHUP | POLLERR)) != 0)
          receive(c);
        if (!c.peer_closed)
          transmit(c);
        it = finished(c) ? open.erase(it) : std::next(it);
      }
    }
  }
};

h2c_server::h2c_server(handler answer, const std::string& host, std::uint16_t port)
    : impl_(std::make_unique<impl>()) {
  impl_->answer = std::move(answer);
  impl_->listen(host, port);
  impl_->thread = std::thread([state = impl_.get()] { state->run(); });
}

h2c_server::~h2c_server() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto written = ::write(impl_->wake, &one, sizeof one);
  impl_->thread.join();
}

std::uint16_t h2c_server::port() const {
  return impl_->port;
}

std::string h2c_server::url(const std::string& path) const {
  return "http://" + impl_->host + ":" + std::to_string(impl_->port) + path;
}

std::size_t h2c_server::connections() const {
  return impl_->accepted;
}

} // namespace herald::tools
