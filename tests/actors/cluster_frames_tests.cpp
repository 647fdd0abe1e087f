// basp_frame_check: the frames a cluster connection may carry before CAF's BASP broker reads
// them. The headers are built as BASP lays them out (big-endian, 32 bytes).

#include "actors/cluster_frames.hpp"

#include <array>
#include <cstdint>
#include <vector>

#include <boost/test/unit_test.hpp>

using herald::actors::basp_frame_check;
using herald::actors::basp_header_size;
using herald::actors::connection_side;
using herald::actors::max_handshake_payload;

namespace {

using namespace herald::actors::basp;

constexpr std::uint32_t max_payload = 4 * 1024 * 1024;

struct header {
  std::uint8_t operation = heartbeat;
  std::uint32_t payload = 0;
  std::uint64_t operation_data = 0;
  std::uint64_t source = 0;
  std::uint64_t dest = 0;
};

void put(std::array<unsigned char, basp_header_size>& out, std::size_t at, std::uint64_t value,
         std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i)
    out[at + i] = static_cast<unsigned char>(value >> (8 * (bytes - 1 - i)));
}

std::array<unsigned char, basp_header_size> bytes_of(const header& h) {
  std::array<unsigned char, basp_header_size> out{};
  out[0] = h.operation;
  put(out, 4, h.payload, 4);
  put(out, 8, h.operation_data, 8);
  put(out, 16, h.source, 8);
  put(out, 24, h.dest, 8);
  return out;
}

bool accept(basp_frame_check& check, const header& h) {
  const auto frame = bytes_of(h);
  return check.accept(frame.data(), frame.size());
}

bool accept_payload(basp_frame_check& check, std::size_t size) {
  std::vector<unsigned char> payload(size, 0x5a);
  return check.accept(payload.data(), payload.size());
}

/// A check on the accepting side that has read a whole client handshake.
basp_frame_check greeted_server() {
  basp_frame_check check{connection_side::accepted, max_payload};
  BOOST_REQUIRE(accept(check, {client_handshake, 40}));
  BOOST_REQUIRE(accept_payload(check, 40));
  return check;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_frames_tests)

BOOST_AUTO_TEST_CASE(the_32_byte_crash_packet_is_refused) {
  // The outside review's packet: a server handshake without payload, operation data 3. CAF
  // 0.17.6 reads its null payload and dies; here it never reaches CAF (on either side).
  std::array<unsigned char, basp_header_size> packet{};
  packet[15] = 0x03;
  basp_frame_check dialed{connection_side::dialed, max_payload};
  BOOST_TEST(!dialed.accept(packet.data(), packet.size()));
  basp_frame_check accepted{connection_side::accepted, max_payload};
  BOOST_TEST(!accepted.accept(packet.data(), packet.size()));
}

BOOST_AUTO_TEST_CASE(a_declared_payload_over_the_bound_is_refused_before_it_is_read) {
  // struct.pack(">BBBBIQQQ", 1, 0, 0, 0, 0xFFFFFFFF, 0, 0, 0): 4 GiB declared.
  basp_frame_check fresh{connection_side::accepted, max_payload};
  BOOST_TEST(!accept(fresh, {client_handshake, 0xFFFFFFFFu}));
  basp_frame_check unknown{connection_side::accepted, max_payload};
  BOOST_TEST(!accept(unknown, {client_handshake, max_handshake_payload + 1}));
  auto peer = greeted_server();
  BOOST_TEST(!accept(peer, {direct_message, max_payload + 1, 0, 0, 7}));
  auto other = greeted_server();
  BOOST_TEST(accept(other, {direct_message, max_payload, 0, 0, 7}));
}

BOOST_AUTO_TEST_CASE(the_first_frame_must_be_the_peers_handshake) {
  basp_frame_check accepted{connection_side::accepted, max_payload};
  BOOST_TEST(!accept(accepted, {heartbeat}));
  basp_frame_check wrong_side{connection_side::accepted, max_payload};
  BOOST_TEST(!accept(wrong_side, {server_handshake, 40, 1}));
  basp_frame_check dialed{connection_side::dialed, max_payload};
  BOOST_TEST(accept(dialed, {server_handshake, 40, 1}));
  BOOST_TEST(!dialed.past_handshake()); // its payload is still to come
  BOOST_TEST(accept_payload(dialed, 40));
  BOOST_TEST(dialed.past_handshake());
}

BOOST_AUTO_TEST_CASE(only_the_peers_side_of_the_handshake_comes) {
  // A dialing CAF node sends its client handshake on connect and again, with the
  // select-connection flag, after the server's handshake.
  auto check = greeted_server();
  BOOST_TEST(accept(check, {client_handshake, 40}));
  BOOST_TEST(accept_payload(check, 40));
  BOOST_TEST(!accept(check, {server_handshake, 40, 1}));
  basp_frame_check dialed{connection_side::dialed, max_payload};
  BOOST_REQUIRE(accept(dialed, {server_handshake, 40, 1}));
  BOOST_REQUIRE(accept_payload(dialed, 40));
  BOOST_TEST(!accept(dialed, {client_handshake, 40}));
}

BOOST_AUTO_TEST_CASE(a_payload_must_be_as_long_as_its_header_said) {
  auto check = greeted_server();
  BOOST_REQUIRE(accept(check, {direct_message, 100, 0, 0, 7}));
  BOOST_TEST(!accept_payload(check, 99));
}

BOOST_AUTO_TEST_CASE(every_operation_is_held_to_its_shape) {
  struct example {
    header frame;
    bool valid;
  };
  const std::vector<example> examples{
      {{heartbeat}, true},
      {{heartbeat, 0, 0, 1, 0}, false},
      {{heartbeat, 8}, false},
      {{direct_message, 8, 0, 0, 7}, true},
      {{direct_message, 8, 0, 0, 0}, false}, // no receiver
      {{direct_message, 0, 0, 0, 7}, false}, // no message
      {{routed_message, 8, 0, 0, 7}, true},
      {{routed_message, 0, 0, 0, 7}, false},
      {{monitor_message, 8}, true},
      {{monitor_message, 8, 1}, false},
      {{down_message, 8, 0, 9, 0}, true},
      {{down_message, 8, 0, 0, 0}, false},
      {{down_message, 8, 0, 9, 3}, false},
      {{7, 8, 0, 0, 7}, false}, // no such operation
      {{0xff}, false},
  };
  for (const auto& [frame, valid] : examples) {
    auto check = greeted_server();
    BOOST_TEST(accept(check, frame) == valid,
               "operation " << int(frame.operation) << " payload " << frame.payload << " source "
                            << frame.source << " dest " << frame.dest);
  }
}

BOOST_AUTO_TEST_CASE(a_header_must_be_exactly_32_bytes) {
  basp_frame_check check{connection_side::accepted, max_payload};
  const auto frame = bytes_of({client_handshake, 40});
  BOOST_TEST(!check.accept(frame.data(), frame.size() - 1));
}

BOOST_AUTO_TEST_SUITE_END()
