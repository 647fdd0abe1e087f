#include "actors/cluster_frames.hpp"

namespace herald::actors {

namespace {

std::uint64_t big_endian(const unsigned char* data, std::size_t bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < bytes; ++i)
    value = (value << 8) | data[i];
  return value;
}

} // namespace

bool basp_frame_check::accept(const unsigned char* data, std::size_t size) {
  if (awaited_payload_ != 0) {
    const bool whole = size == awaited_payload_;
    awaited_payload_ = 0;
    return whole;
  }
  return size == basp_header_size && accept_header(data);
}

bool basp_frame_check::accept_header(const unsigned char* data) {
  using namespace basp;
  const auto op = data[0];
  const auto payload = static_cast<std::uint32_t>(big_endian(data + 4, 4));
  const auto op_data = big_endian(data + 8, 8);
  const auto source = big_endian(data + 16, 8);
  const auto dest = big_endian(data + 24, 8);
  if (payload > max_payload_)
    return false;
  // The first frame is the peer's handshake. A dialing node sends its client handshake at
  // once and again, selecting the connection, after the server's: a handshake may repeat, but
  // only the one of the peer's side.
  const auto handshake = side_ == connection_side::accepted ? client_handshake : server_handshake;
  const auto wrong_side = side_ == connection_side::accepted ? server_handshake : client_handshake;
  if (op == wrong_side || (!greeted_ && op != handshake))
    return false;
  bool valid = false;
  switch (op) {
  case server_handshake: // carries the server's node id and published actor: never empty
    valid = op_data != 0 && payload != 0 && payload <= max_handshake_payload;
    break;
  case client_handshake:
    valid = source == 0 && dest == 0 && payload != 0 && payload <= max_handshake_payload;
    break;
  case direct_message:
  case routed_message:
    valid = dest != 0 && payload != 0;
    break;
  case monitor_message:
    valid = payload != 0 && op_data == 0;
    break;
  case down_message:
    valid = source != 0 && dest == 0 && payload != 0 && op_data == 0;
    break;
  case heartbeat:
    valid = source == 0 && dest == 0 && payload == 0 && op_data == 0;
    break;
  default:
    return false;
  }
  if (!valid)
    return false;
  greeted_ = true;
  awaited_payload_ = payload;
  return true;
}

} // namespace herald::actors
