#pragma once

// What a cluster connection may carry, checked before CAF's BASP broker sees it. CAF 0.17.6
// trusts the 32-byte BASP header: a server handshake without payload is dereferenced as a null
// payload (a crash), and any declared payload length is allocated before it arrives (4 GiB
// for one header). Nor does it bound what a message declares inside its payload: a byte
// buffer's declared length is allocated before it is read, a message nested in a message
// recurses once per level, and any local actor whose id a peer names receives what it is sent.
// Every frame that reaches the broker passes through here first, on TLS and on loopback
// plaintext alike. Pure code: no CAF, no I/O.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace herald::actors {

/// The fixed size of a BASP header: operation, two padding bytes, flags, payload length (32
/// bits), operation data, source actor, destination actor (64 bits each), big-endian.
inline constexpr std::size_t basp_header_size = 32;

/// BASP's operations, the header's first byte (caf/io/basp/message_type.hpp in CAF 0.17.6).
namespace basp {
enum operation : std::uint8_t {
  server_handshake = 0x00,
  client_handshake = 0x01,
  direct_message = 0x02,
  routed_message = 0x03,
  monitor_message = 0x04,
  down_message = 0x05,
  heartbeat = 0x06,
};
} // namespace basp

/// The largest handshake payload accepted: a node id, an actor and its interface's names fit
/// in a few hundred bytes; a connection not yet known cannot make a node allocate more.
inline constexpr std::uint32_t max_handshake_payload = 64 * 1024;

/// The largest payload of a frame whose payload CAF reads as node ids and an error (monitor and
/// down messages): an error's context is a message, and messages nest; a few kilobytes hold
/// any real one and too few levels to exhaust a stack.
inline constexpr std::uint32_t max_control_payload = 4 * 1024;

/// Whether a direct message of type `type_name` (CAF's "@<>+" followed by its elements'
/// names, "+"-separated) is one the cluster sends: herald's heartbeat and task handoff, and
/// the probe CAF's middleman sends a node it learns of, with its answer.
bool is_cluster_message_type(std::string_view type_name);

/// Which side of a connection a check guards: the first frame a node reads must be the
/// handshake its peer sends on that side (a client's from an accepted connection, a server's
/// on a dialed one), and the other side's handshake never comes.
enum class connection_side { accepted, dialed };

/// Follows one connection's frames as the BASP broker reads them (a header, then its payload
/// if it declares one) and refuses any frame CAF could not handle safely: headers BASP would
/// not write, payloads over the bound, routed messages (herald's nodes all talk directly, so
/// none is ever routed through a third), and direct messages that are not of a cluster type
/// or that carry a forwarding stack.
class basp_frame_check {
public:
  basp_frame_check(connection_side side, std::uint32_t max_payload_bytes)
      : side_(side), max_payload_(max_payload_bytes) {}

  /// Whether the next frame, `size` bytes at `data`, may go on to the broker. A refused
  /// connection must be closed: the check's position in the stream is lost.
  bool accept(const unsigned char* data, std::size_t size);

  /// Whether the peer's handshake, header and payload, has been read whole.
  bool past_handshake() const { return greeted_ && awaited_payload_ == 0; }

private:
  bool accept_header(const unsigned char* data);
  bool accept_payload(const unsigned char* data, std::size_t size) const;

  connection_side side_;
  std::uint32_t max_payload_;
  bool greeted_ = false;
  std::uint8_t awaited_operation_ = 0;
  std::uint32_t awaited_payload_ = 0; ///< 0: the next frame is a header
};

} // namespace herald::actors
