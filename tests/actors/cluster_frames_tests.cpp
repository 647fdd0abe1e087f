// basp_frame_check: the frames a cluster connection may carry before CAF's BASP broker reads
// them. The headers are built as BASP lays them out (big-endian, 32 bytes).

#include "actors/cluster_frames.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

using herald::actors::basp_frame_check;
using herald::actors::basp_header_size;
using herald::actors::connection_side;
using herald::actors::max_control_payload;
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

/// A direct message's payload as CAF writes it: forwarding stack, type number 0, type name,
/// then `elements` (left as zero bytes: the check does not read them).
std::vector<unsigned char> message_payload(const std::string& type_name, std::size_t elements = 8,
                                           std::uint8_t stack = 0) {
  std::vector<unsigned char> payload{stack, 0, 0};
  for (auto length = type_name.size();; length >>= 7) { // varbyte
    payload.push_back(static_cast<unsigned char>((length & 0x7f) | (length > 0x7f ? 0x80 : 0)));
    if (length <= 0x7f)
      break;
  }
  payload.insert(payload.end(), type_name.begin(), type_name.end());
  payload.resize(payload.size() + elements, 0);
  return payload;
}

/// Whether a check past the handshake lets a direct message with `payload` through.
bool accept_message(const std::vector<unsigned char>& payload) {
  auto check = greeted_server();
  const auto size = static_cast<std::uint32_t>(payload.size());
  return accept(check, {direct_message, size, 0, 5, 7}) &&
         check.accept(payload.data(), payload.size());
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
  BOOST_TEST(!accept(peer, {direct_message, max_payload + 1, 0, 5, 7}));
  auto other = greeted_server();
  BOOST_TEST(accept(other, {direct_message, max_payload, 0, 5, 7}));
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
  BOOST_REQUIRE(accept(check, {heartbeat}));
  BOOST_REQUIRE(accept(check, {monitor_message, 100}));
  BOOST_TEST(!accept_payload(check, 99));
}

BOOST_AUTO_TEST_CASE(a_direct_message_must_be_of_a_cluster_type) {
  BOOST_TEST(accept_message(message_payload("@<>+@atom+herald.member_beat")));
  BOOST_TEST(accept_message(message_payload("@<>+@atom+herald.task_handoff", 70000)));
  BOOST_TEST(accept_message(message_payload("@<>+@atom+@atom+@str"))); // CAF's node probe
  BOOST_TEST(accept_message(message_payload("@<>+@atom+@str+@strong_actor_ptr+@str")));
  // A byte buffer's declared length is allocated before it is read: 4 GiB from a few bytes.
  BOOST_TEST(!accept_message(message_payload("@<>+@charbuf")));
  // Messages nest, and CAF reads each level with one more call: a stack overflow in 4 MiB.
  BOOST_TEST(!accept_message(message_payload("@<>+@message")));
  // CAF's config server keeps whatever it is put, for good.
  BOOST_TEST(!accept_message(message_payload("@<>+@atom+@str+@message")));
  // Herald's own in-process messages, sent to an actor a peer learned the id of.
  BOOST_TEST(!accept_message(message_payload("@<>+@atom")));
  BOOST_TEST(!accept_message(message_payload("@<>+@atom+@str")));
  BOOST_TEST(!accept_message(message_payload("@<>+@atom+herald.member_beat+@atom")));
}

BOOST_AUTO_TEST_CASE(a_direct_message_is_read_as_caf_writes_it) {
  BOOST_TEST(!accept_message(message_payload("@<>+@atom+herald.member_beat", 8, 1))); // forwarded
  auto wrong_number = message_payload("@<>+@atom+herald.member_beat");
  wrong_number[2] = 1;
  BOOST_TEST(!accept_message(wrong_number));
  auto cut_name = message_payload("@<>+@atom+herald.member_beat", 0);
  cut_name.pop_back();
  BOOST_TEST(!accept_message(cut_name));
  // A type name longer than the payload, a varbyte that never ends.
  BOOST_TEST(!accept_message({0, 0, 0, 0xff, 0xff, 0x03, '@'}));
  BOOST_TEST(!accept_message({0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  BOOST_TEST(!accept_message({0}));
}

BOOST_AUTO_TEST_CASE(random_payloads_never_pass_for_a_message) {
  // What a fuzzer's first tries look like: none is a cluster type, none may read past its end.
  std::uint32_t state = 2463534242u;
  for (int round = 0; round < 20000; ++round) {
    std::vector<unsigned char> payload(1 + round % 64);
    for (auto& byte : payload) {
      state ^= state << 13;
      state ^= state >> 17;
      state ^= state << 5;
      byte = static_cast<unsigned char>(state);
    }
    BOOST_TEST_REQUIRE(!accept_message(payload));
  }
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
      {{direct_message, 8, 0, 5, 7}, true},
      {{direct_message, 8, 0, 5, 0}, false}, // no receiver
      {{direct_message, 8, 0, 0, 7}, false}, // no sender: nobody to answer, nobody to check
      {{direct_message, 0, 0, 5, 7}, false}, // no message
      {{direct_message, 8, 0x1000000000000001, 5, 7}, true},  // a normal message's id
      {{direct_message, 8, 0x8000000000000001, 5, 7}, true},  // an urgent response's
      {{direct_message, 8, 0x2000000000000000, 5, 7}, false}, // stream data (upstream)
      {{direct_message, 8, 0x3000000000000000, 5, 7}, false}, // stream data (downstream)
      {{routed_message, 8, 0, 5, 7}, false},                  // herald's nodes all talk directly
      {{monitor_message, 8}, true},
      {{monitor_message, 8, 1}, false},
      {{monitor_message, max_control_payload + 1}, false}, // node ids are short
      {{down_message, 8, 0, 9, 0}, true},
      {{down_message, max_control_payload + 1, 0, 9, 0}, false}, // so is a real exit reason
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
