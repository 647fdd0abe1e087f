#include "actors/cluster_frames.hpp"

#include "actors/cluster_messages.hpp"

#include <algorithm>
#include <array>
#include <string>

namespace herald::actors {

namespace {

std::uint64_t big_endian(const unsigned char* data, std::size_t bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < bytes; ++i)
    value = (value << 8) | data[i];
  return value;
}

/// Reads the start of a payload as CAF's binary_deserializer writes it: integers big-endian,
/// sequence and string lengths as varbytes (7 bits a byte, least significant first).
class payload_reader {
public:
  payload_reader(const unsigned char* data, std::size_t size) : data_(data), size_(size) {}

  bool varbyte(std::uint32_t& value) {
    value = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      if (at_ == size_)
        return false;
      const auto byte = data_[at_++];
      value |= static_cast<std::uint32_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0)
        return true;
    }
    return false;
  }

  bool uint16(std::uint16_t& value) {
    if (size_ - at_ < 2)
      return false;
    value = static_cast<std::uint16_t>(big_endian(data_ + at_, 2));
    at_ += 2;
    return true;
  }

  bool string(std::string_view& value) {
    std::uint32_t length = 0;
    if (!varbyte(length) || length > size_ - at_)
      return false;
    value = {reinterpret_cast<const char*>(data_ + at_), length};
    at_ += length;
    return true;
  }

private:
  const unsigned char* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

} // namespace

bool is_cluster_message_type(std::string_view type_name) {
  static const std::array<std::string, 4> types{
      std::string{"@<>+@atom+"} + member_beat_type_name,
      std::string{"@<>+@atom+"} + task_handoff_type_name,
      // CAF's middleman asks each node it learns of for its spawn server (sys_atom, get_atom,
      // "info") and gets (ok_atom, "info", the server, its name) back.
      "@<>+@atom+@atom+@str",
      "@<>+@atom+@str+@strong_actor_ptr+@str",
  };
  return std::find(types.begin(), types.end(), type_name) != types.end();
}

bool basp_frame_check::accept(const unsigned char* data, std::size_t size) {
  if (awaited_payload_ != 0) {
    const bool whole = size == awaited_payload_;
    awaited_payload_ = 0;
    return whole && accept_payload(data, size);
  }
  return size == basp_header_size && accept_header(data);
}

bool basp_frame_check::accept_payload(const unsigned char* data, std::size_t size) const {
  if (awaited_operation_ != basp::direct_message)
    return true;
  // A direct message's payload: its forwarding stack (herald never forwards), then the message
  // as an object: type number 0 and its type name, then its elements.
  payload_reader reader{data, size};
  std::uint32_t stack = 0;
  std::uint16_t type_number = 0;
  std::string_view type_name;
  return reader.varbyte(stack) && stack == 0 && reader.uint16(type_number) && type_number == 0 &&
         reader.string(type_name) && is_cluster_message_type(type_name);
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
  case direct_message: // from an actor (a reply goes to it) to an actor
    // The operation data is the message id; its category bits tell CAF how to read the
    // message. A stream category makes CAF take the first element for stream data (found by
    // fuzzing: a heartbeat marked so crashed the node): herald sends only ordinary messages.
    valid = source != 0 && dest != 0 && payload != 0 && (op_data >> 60 & 0x3) < 2;
    break;
  case monitor_message:
    valid = payload != 0 && payload <= max_control_payload && op_data == 0;
    break;
  case down_message:
    valid =
        source != 0 && dest == 0 && payload != 0 && payload <= max_control_payload && op_data == 0;
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
  awaited_operation_ = op;
  awaited_payload_ = payload;
  return true;
}

} // namespace herald::actors
