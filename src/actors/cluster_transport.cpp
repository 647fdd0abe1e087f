#include "actors/cluster_transport.hpp"

#include "actors/cluster_frames.hpp"
#include "domain/api_key.hpp"
#include "observability/log.hpp"
#include "observability/metrics.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <sys/socket.h>
#include <thread>
#include <type_traits>
#include <utility>

#include <caf/detail/socket_guard.hpp>
#include <caf/exit_reason.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor_impl.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/io/scribe.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/session.hpp>
#include <caf/policy/tcp.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace herald::actors {

namespace {

namespace net = caf::io::network;
using steady = std::chrono::steady_clock;

/// Reads and writes through a TLS session of CAF's OpenSSL module.
class tls_policy {
public:
  explicit tls_policy(caf::openssl::session_ptr session) : session_(std::move(session)) {}

  net::rw_state read_some(std::size_t& result, net::native_socket fd, void* buf, std::size_t len) {
    return session_->read_some(result, fd, buf, len);
  }

  net::rw_state write_some(std::size_t& result, net::native_socket fd, const void* buf,
                           std::size_t len) {
    return session_->write_some(result, fd, buf, len);
  }

  bool must_read_more(net::native_socket fd, std::size_t threshold) {
    return session_->must_read_more(fd, threshold);
  }

private:
  caf::openssl::session_ptr session_;
};

std::string remote_address(net::native_socket fd) {
  auto address = net::remote_addr_of_fd(fd);
  return address ? *address : std::string{"unknown"};
}

} // namespace

/// What the doormen and scribes of one cluster port share: the limits, the connections still in
/// their handshake (with their deadlines) and the counts of what was closed. The pending table
/// is locked: scribes are made on the multiplexer thread (accepted) and the middleman actor's
/// (dialed), and the sweeper runs on its own thread.
struct cluster_transport::guard {
  caf::actor_system* sys = nullptr;
  bool tls = false;
  cluster_port_limits limits;
  std::atomic<std::uint64_t> refused{0};
  std::atomic<std::uint64_t> expired{0};
  std::atomic<std::uint64_t> malformed{0};

  struct pending {
    std::string address;
    steady::time_point deadline;
  };

  /// Whether the connection `fd` from `address` may start its handshake; registers it if so.
  /// Its scribe forgets it before closing the socket, so a descriptor number reused later is
  /// never mistaken for it.
  bool admit(net::native_socket fd, const std::string& address) {
    std::lock_guard<std::mutex> lock{mutex_};
    std::size_t from_address = 0;
    for (const auto& [_, entry] : pending_)
      from_address += entry.address == address ? 1 : 0;
    if (pending_.size() >= limits.max_handshakes ||
        from_address >= limits.max_handshakes_per_address) {
      refused += 1;
      return false;
    }
    pending_.emplace(fd, pending{address, steady::now() + limits.handshake_timeout});
    return true;
  }

  /// Counts a refused frame and keeps a short description of it for the next log line: the
  /// header's fields, or a payload's first bytes (printable ones only, as sent).
  void count_malformed(const unsigned char* data, std::size_t size) {
    std::string what;
    if (size == basp_header_size) {
      what = "header";
      for (std::size_t i = 0; i < size; i += 8)
        what += ' ' + domain::to_hex({reinterpret_cast<const char*>(data + i), 8});
    } else {
      what = "payload of " + std::to_string(size) + " bytes: ";
      for (std::size_t i = 0; i < std::min<std::size_t>(size, 64); ++i)
        what += data[i] >= 0x20 && data[i] < 0x7f ? static_cast<char>(data[i]) : '.';
    }
    std::lock_guard<std::mutex> lock{mutex_};
    malformed += 1;
    last_malformed_ = std::move(what);
  }

  /// The description of the last frame refused, once.
  std::string take_last_malformed() {
    std::lock_guard<std::mutex> lock{mutex_};
    return std::exchange(last_malformed_, {});
  }

  /// The connection `fd` is past its handshake, or about to be closed.
  void forget(net::native_socket fd) {
    std::lock_guard<std::mutex> lock{mutex_};
    pending_.erase(fd);
  }

  /// Shuts down every connection past its handshake deadline. The socket is only shut down
  /// (its scribe still owns and closes the descriptor): the multiplexer then reads the end of
  /// the stream and closes it the way it closes any connection its peer ended. An entry is
  /// removed before its scribe's socket is closed, so the descriptor is still this one.
  void close_expired(steady::time_point now) {
    std::lock_guard<std::mutex> lock{mutex_};
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.deadline <= now) {
        ::shutdown(it->first, SHUT_RDWR);
        expired += 1;
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }

  /// A scribe for `fd` (already non-blocking): TLS when the cluster has certificates. Null
  /// when no TLS session can be made (the peer already failed, or the files cannot be read).
  caf::io::scribe_ptr make_scribe(net::default_multiplexer& mpx, net::native_socket fd,
                                  connection_side side, const std::shared_ptr<guard>& self);

private:
  std::mutex mutex_;
  std::map<net::native_socket, pending> pending_;
  std::string last_malformed_;
};

namespace {

using guard_ptr = std::shared_ptr<cluster_transport::guard>;

/// A connection of the cluster port: a CAF scribe whose every frame passes basp_frame_check
/// before the BASP broker reads it, and whose handshake the guard times.
template <class Policy> class guarded_scribe final : public caf::io::scribe {
public:
  guarded_scribe(net::default_multiplexer& mpx, net::native_socket fd, Policy policy,
                 guard_ptr guard, connection_side side)
      : caf::io::scribe(net::conn_hdl_from_socket(fd)), stream_(mpx, fd, std::move(policy)),
        guard_(std::move(guard)), frames_(side, guard_->limits.max_frame_bytes),
        holds_writes_(std::is_same_v<Policy, tls_policy> && side == connection_side::accepted) {}

  ~guarded_scribe() override { guard_->forget(stream_.fd()); }

  void configure_read(caf::io::receive_policy::config config) override {
    stream_.configure_read(config);
    if (!launched_)
      launch();
  }

  void ack_writes(bool enable) override { stream_.ack_writes(enable); }
  std::vector<char>& wr_buf() override { return stream_.wr_buf(); }
  std::vector<char>& rd_buf() override { return stream_.rd_buf(); }
  // An accepted TLS connection writes nothing before its peer's first frame has passed. The
  // broker writes its server handshake at once, and a write pending while SSL_accept still
  // waits for the client makes CAF's session report success with nothing written: the
  // level-triggered multiplexer would then spin on the writable socket until the handshake
  // deadline, a core per silent stranger. A BASP client sends its handshake without waiting
  // for the server's, so holding the server's costs a legitimate peer nothing.
  void flush() override {
    if (holds_writes_)
      write_held_ = true;
    else
      stream_.flush(this);
  }

  void graceful_shutdown() override {
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }

  std::string addr() const override { return remote_address(stream_.fd()); }

  std::uint16_t port() const override {
    auto port = net::remote_port_of_fd(stream_.fd());
    return port ? *port : 0;
  }

  void add_to_loop() override { stream_.activate(this); }
  void remove_from_loop() override { stream_.passivate(); }

  bool consume(caf::execution_unit* ctx, const void* data, std::size_t size) override {
    if (!frames_.accept(static_cast<const unsigned char*>(data), size)) {
      guard_->count_malformed(static_cast<const unsigned char*>(data), size);
      // As the stream does when a read fails: the broker drops the connection. The socket is
      // shut down too, so that a write still queued for the peer fails instead of waiting.
      ::shutdown(stream_.fd(), SHUT_RDWR);
      io_failure(ctx, net::operation::read);
      return false;
    }
    if (holds_writes_) {
      holds_writes_ = false;
      if (write_held_)
        stream_.flush(this);
    }
    if (frames_.past_handshake() && !known_peer_) {
      known_peer_ = true;
      guard_->forget(stream_.fd()); // no deadline for a peer whose handshake went through
    }
    return caf::io::scribe::consume(ctx, data, size);
  }

private:
  void launch() {
    launched_ = true;
    stream_.start(this);
    // A dialed TLS session has to start SSL_connect: a write event drives it. An accepted one
    // is driven by the client's bytes as they are read, and must not take a write event
    // before the peer has spoken: one would send the server handshake held by flush().
    if constexpr (std::is_same_v<Policy, tls_policy>)
      if (!holds_writes_)
        stream_.force_empty_write(this);
  }

  bool launched_ = false;
  bool known_peer_ = false;
  net::stream_impl<Policy> stream_;
  guard_ptr guard_;
  basp_frame_check frames_;
  bool holds_writes_;       ///< until the peer's first frame passed (see flush)
  bool write_held_ = false; ///< the broker flushed while writes were held
};

/// Accepts connections on the cluster port within the guard's caps.
class guarded_doorman final : public net::doorman_impl {
public:
  guarded_doorman(net::default_multiplexer& mpx, net::native_socket fd, guard_ptr guard)
      : net::doorman_impl(mpx, fd), guard_(std::move(guard)) {}

  bool new_connection() override {
    if (detached())
      return false;
    auto& mpx = acceptor_.backend();
    const auto fd = acceptor_.accepted_socket();
    caf::detail::socket_guard closer{fd};
    if (!guard_->admit(fd, remote_address(fd)))
      return false;
    net::nonblocking(fd, true);
    auto scribe = guard_->make_scribe(mpx, fd, connection_side::accepted, guard_);
    if (!scribe) {
      guard_->forget(fd);
      return false;
    }
    closer.release(); // the scribe's stream owns the socket now
    auto handle = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return caf::io::doorman::new_connection(&mpx, handle);
  }

private:
  guard_ptr guard_;
};

/// CAF's middleman actor with guarded doormen and scribes: publishes and dials for the cluster.
class guarded_middleman final : public caf::io::middleman_actor_impl {
public:
  guarded_middleman(caf::actor_config& cfg, caf::actor broker, guard_ptr guard)
      : caf::io::middleman_actor_impl(cfg, std::move(broker)), guard_(std::move(guard)) {}

  const char* name() const override { return "herald.cluster_middleman"; }

protected:
  caf::expected<caf::io::scribe_ptr> connect(const std::string& host, std::uint16_t port) override {
    auto fd = net::new_tcp_connection(host, port);
    if (!fd)
      return std::move(fd.error());
    net::nonblocking(*fd, true);
    auto scribe = guard_->make_scribe(mpx(), *fd, connection_side::dialed, guard_);
    if (!scribe) {
      net::close_socket(*fd);
      return caf::sec::cannot_connect_to_node;
    }
    return scribe;
  }

  caf::expected<caf::io::doorman_ptr> open(std::uint16_t port, const char* address,
                                           bool reuse) override {
    auto fd = net::new_tcp_acceptor_impl(port, address, reuse);
    if (!fd)
      return std::move(fd.error());
    return caf::make_counted<guarded_doorman>(mpx(), *fd, guard_);
  }

private:
  net::default_multiplexer& mpx() {
    return static_cast<net::default_multiplexer&>(system().middleman().backend());
  }

  guard_ptr guard_;
};

} // namespace

caf::io::scribe_ptr cluster_transport::guard::make_scribe(net::default_multiplexer& mpx,
                                                          net::native_socket fd,
                                                          connection_side side,
                                                          const std::shared_ptr<guard>& self) {
  if (!tls)
    return caf::make_counted<guarded_scribe<caf::policy::tcp>>(mpx, fd, caf::policy::tcp{}, self,
                                                               side);
  caf::openssl::session_ptr session;
  try {
    // Each session loads the files anew: certificates replaced on disk serve the next
    // connection without a restart (docs/cluster.md, rotating certificates).
    session = caf::openssl::make_session(*sys, fd, side == connection_side::accepted);
  } catch (const std::exception& e) {
    log::error("cluster.tls_unusable", {{"error", e.what()}});
  }
  if (!session) {
    refused += side == connection_side::accepted ? 1 : 0;
    return nullptr;
  }
  return caf::make_counted<guarded_scribe<tls_policy>>(mpx, fd, tls_policy{std::move(session)},
                                                       self, side);
}

void configure_cluster_tls(caf::actor_system_config& cfg, const cluster_tls_config& tls) {
  if (!tls.enabled())
    return;
  cfg.load<caf::openssl::manager>();
  cfg.openssl_certificate = tls.certificate;
  cfg.openssl_key = tls.key;
  cfg.openssl_cafile = tls.ca_file;
  cfg.openssl_passphrase = tls.key_passphrase;
}

namespace {

std::string openssl_error() {
  const auto code = ERR_get_error();
  ERR_clear_error();
  if (code == 0)
    return "unknown error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

int passphrase_callback(char* buf, int size, int, void* passphrase) {
  const auto& text = *static_cast<const std::string*>(passphrase);
  if (size <= 0 || text.size() >= static_cast<std::size_t>(size))
    return 0;
  text.copy(buf, text.size());
  return static_cast<int>(text.size());
}

} // namespace

std::string check_cluster_tls(const cluster_tls_config& tls) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{SSL_CTX_new(TLS_method()), SSL_CTX_free};
  if (!ctx)
    return "cannot make a TLS context: " + openssl_error();
  auto passphrase = tls.key_passphrase;
  SSL_CTX_set_default_passwd_cb(ctx.get(), passphrase_callback);
  SSL_CTX_set_default_passwd_cb_userdata(ctx.get(), &passphrase);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), tls.certificate.c_str()) != 1)
    return "cluster.tls.certificate: cannot load " + tls.certificate + ": " + openssl_error();
  const auto mismatch = "cluster.tls.key: is not the key of " + tls.certificate;
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      return mismatch;
    }
    return "cluster.tls.key: cannot load " + tls.key + ": " + openssl_error();
  }
  if (SSL_CTX_check_private_key(ctx.get()) != 1)
    return mismatch;
  if (SSL_CTX_load_verify_locations(ctx.get(), tls.ca_file.c_str(), nullptr) != 1)
    return "cluster.tls.ca_file: cannot load " + tls.ca_file + ": " + openssl_error();
  return {};
}

cluster_transport::cluster_transport(caf::actor_system& sys, const cluster_tls_config& tls,
                                     const cluster_port_limits& limits,
                                     std::shared_ptr<herald::metrics> metrics)
    : sys_(sys), guard_(std::make_shared<guard>()), metrics_(std::move(metrics)) {
  guard_->sys = &sys;
  guard_->tls = tls.enabled();
  guard_->limits = limits;
  auto broker = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  middleman_ = caf::actor_cast<caf::io::middleman_actor>(
      sys.spawn<guarded_middleman, caf::detached + caf::hidden>(std::move(broker), guard_));
  // Every reason's series from the start at 0: an alert on its increase sees the first one.
  if (metrics_)
    for (const auto* reason : {"refused", "expired", "malformed"})
      metrics_->cluster_connection_closed(reason, 0);
  sweeper_ = std::thread{[this] { sweep(); }};
}

cluster_transport::~cluster_transport() {
  {
    std::lock_guard<std::mutex> lock{sweeper_mutex_};
    stopping_ = true;
  }
  sweeper_wake_.notify_all();
  sweeper_.join();
  caf::scoped_actor self{sys_, true};
  self->send_exit(middleman_, caf::exit_reason::kill); // it traps ordinary exits
  self->wait_for(middleman_);
}

void cluster_transport::sweep() {
  // A tenth of the deadline, so a connection is closed at most 10 % late; at least every second.
  const auto period = std::clamp(guard_->limits.handshake_timeout / 10,
                                 std::chrono::milliseconds{10}, std::chrono::milliseconds{1000});
  // Metrics follow every period; the log gets one line per ten seconds for whatever a flood of
  // strangers caused, not one per connection or period.
  constexpr auto log_period = std::chrono::seconds{10};
  cluster_port_counters metered;
  cluster_port_counters logged;
  auto next_log = steady::now();
  const auto differ = [](const cluster_port_counters& a, const cluster_port_counters& b) {
    return a.refused != b.refused || a.expired != b.expired || a.malformed != b.malformed;
  };
  std::unique_lock<std::mutex> lock{sweeper_mutex_};
  while (!sweeper_wake_.wait_for(lock, period, [this] { return stopping_; })) {
    guard_->close_expired(steady::now());
    const auto now = counters();
    if (metrics_ && differ(now, metered)) {
      metrics_->cluster_connection_closed("refused", now.refused - metered.refused);
      metrics_->cluster_connection_closed("expired", now.expired - metered.expired);
      metrics_->cluster_connection_closed("malformed", now.malformed - metered.malformed);
    }
    metered = now;
    if (differ(now, logged) && steady::now() >= next_log) {
      log::warn("cluster.connections_closed",
                {{"refused", std::to_string(now.refused - logged.refused)},
                 {"expired", std::to_string(now.expired - logged.expired)},
                 {"malformed", std::to_string(now.malformed - logged.malformed)},
                 {"last_malformed", guard_->take_last_malformed()}});
      logged = now;
      next_log = steady::now() + log_period;
    }
  }
}

caf::expected<std::uint16_t> cluster_transport::publish(const caf::strong_actor_ptr& whom,
                                                        std::set<std::string> interface,
                                                        std::uint16_t port,
                                                        const std::string& host) {
  caf::expected<std::uint16_t> result{caf::sec::runtime_error};
  caf::scoped_actor self{sys_};
  self->request(middleman_, std::chrono::seconds{10}, caf::publish_atom::value, port, whom,
                std::move(interface), host, true)
      .receive([&](std::uint16_t actual) { result = actual; },
               [&](caf::error& err) { result = std::move(err); });
  return result;
}

cluster_port_counters cluster_transport::counters() const {
  return {guard_->refused.load(), guard_->expired.load(), guard_->malformed.load()};
}

} // namespace herald::actors
