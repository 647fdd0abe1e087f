#pragma once

// The cluster port (docs/cluster.md, "Transport"): CAF's BASP over TLS with mutual certificate
// authentication through CAF's OpenSSL module, or plaintext on loopback only. Connections are
// accepted and read through guarded servants of our own, so that
// - a stranger's bytes end in a failed TLS handshake and never reach BASP,
// - connections still in their handshake are capped (in all and per address) and closed after
//   a deadline, so half-open sockets cannot fill the descriptor table,
// - every frame, even an authenticated peer's, passes basp_frame_check before CAF reads it:
//   no header CAF would crash on, no payload larger than the bound is ever allocated.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>
#include <caf/io/middleman_actor.hpp>

namespace herald {
class metrics;
}

namespace herald::actors {

/// `cluster.tls`: this node's certificate and key, and the cluster's certificate authority.
/// Peers must present a certificate the authority signed, and this node presents its own.
struct cluster_tls_config {
  std::string certificate;    ///< PEM file: this node's certificate (and its chain)
  std::string key;            ///< PEM file: its private key
  std::string ca_file;        ///< PEM file: the authorities whose certificates are members
  std::string key_passphrase; ///< the key's passphrase, if it has one
  bool enabled() const { return !certificate.empty(); }
};

/// What the cluster port allows before a peer is known.
struct cluster_port_limits {
  /// Connections accepted whose peer has not yet completed its handshake (TLS and BASP).
  std::size_t max_handshakes = 64;
  /// The same, from one address: one host cannot take every place.
  std::size_t max_handshakes_per_address = 8;
  /// An accepted connection that has not completed its handshake by then is closed.
  std::chrono::milliseconds handshake_timeout{5000};
  /// The largest BASP payload a peer may declare; a larger declaration closes the connection.
  std::uint32_t max_frame_bytes = 4 * 1024 * 1024;
};

/// Counts of what the guard refused, for metrics and logs.
struct cluster_port_counters {
  std::uint64_t refused = 0;   ///< connections closed at accept: over a cap, or no TLS session
  std::uint64_t expired = 0;   ///< closed for not completing the handshake in time
  std::uint64_t malformed = 0; ///< closed for a frame basp_frame_check refused
};

/// The openssl.* settings of CAF's actor system config, and its OpenSSL module, when `tls` is
/// enabled; nothing otherwise. Call before the actor system is made.
void configure_cluster_tls(caf::actor_system_config& cfg, const cluster_tls_config& tls);

/// Loads `tls`'s files as a node's TLS context would, and checks that the key is the
/// certificate's; an empty string when they are usable, else what is wrong (one line).
std::string check_cluster_tls(const cluster_tls_config& tls);

/// The guarded middleman of this node's cluster port: publish this node's member on it, and
/// dial peers through middleman() (connect_atom, as CAF's own middleman actor answers it).
/// Destroy it before the actor system.
class cluster_transport {
public:
  /// `metrics` (may be null) counts the connections closed before they carried a peer.
  cluster_transport(caf::actor_system& sys, const cluster_tls_config& tls,
                    const cluster_port_limits& limits, std::shared_ptr<herald::metrics> metrics);
  ~cluster_transport();
  cluster_transport(const cluster_transport&) = delete;
  cluster_transport& operator=(const cluster_transport&) = delete;

  /// The middleman actor peers are dialed through (connect_atom, host, port).
  const caf::io::middleman_actor& middleman() const { return middleman_; }

  /// Makes `whom` reachable on `host:port` with the message interface `interface`; the port.
  caf::expected<std::uint16_t> publish(const caf::strong_actor_ptr& whom,
                                       std::set<std::string> interface, std::uint16_t port,
                                       const std::string& host);

  cluster_port_counters counters() const;

  struct guard; ///< shared with the servants it makes (cluster_transport.cpp)

private:
  /// The sweeper thread: closes expired handshakes, counts and logs what was closed.
  void sweep();

  caf::actor_system& sys_;
  std::shared_ptr<guard> guard_;
  std::shared_ptr<herald::metrics> metrics_;
  caf::io::middleman_actor middleman_;
  std::mutex sweeper_mutex_;
  std::condition_variable sweeper_wake_;
  bool stopping_ = false;
  std::thread sweeper_;
};

} // namespace herald::actors
