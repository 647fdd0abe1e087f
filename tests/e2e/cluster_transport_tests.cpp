// The cluster port against the bytes a stranger can send (issue 26, docs/security.md, "The
// cluster port"), on the built binary: nodes on loopback, one PostgreSQL database of their own,
// certificates made by scripts/cluster-certs.sh as docs/cluster.md says to.
//
// - Over TLS: the 32-byte packet that crashed CAF 0.17.6, a 4 GiB declaration, 1 MiB of random
//   bytes and 200 half-open connections leave the node running, its RSS within +64 MiB and its
//   /healthz answering within 1 s throughout; the half-open connections are closed within
//   30 s; a node with the cluster's certificate joins within 10 s afterwards.
// - A node whose certificate another authority signed is never a member; given one of the
//   cluster's authority, the same node joins.
// - Plaintext (loopback only): the same packets reach the frame check, not CAF, and the node
//   keeps serving.
// - A node limited to 256 descriptors keeps serving HTTP while 300 connections wait on its
//   cluster port.

#include "support/eventually.hpp"
#include "support/herald_process.hpp"
#include "support/herald_server.hpp"
#include "support/http_client.hpp"
#include "support/postgres.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <netinet/in.h>
#include <optional>
#include <poll.h>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

constexpr int heartbeat_ms = 150;
constexpr int member_timeout_ms = 1000;

/// Makes `nodes`' certificates under `dir` with the documented script (one authority per dir).
void make_certificates(const std::string& dir, const std::vector<std::string>& nodes) {
  std::string command = std::string(HERALD_SOURCE_DIR) + "/scripts/cluster-certs.sh '" + dir + "'";
  for (const auto& node : nodes)
    command += " " + node;
  command += " >/dev/null";
  BOOST_REQUIRE_EQUAL(std::system(command.c_str()), 0);
}

/// How a node's cluster port is set up.
struct port_setup {
  std::string certificates; ///< the folder of its certificate and authority; empty: plaintext
};

std::string node_config(const std::string& node_id, std::uint16_t port,
                        const std::vector<std::uint16_t>& peers, const port_setup& setup) {
  json::array peer_addresses;
  for (auto peer : peers)
    peer_addresses.emplace_back(host + ":" + std::to_string(peer));
  json::object cluster{{"node_id", node_id},
                       {"listen", host + ":" + std::to_string(port)},
                       {"peers", peer_addresses},
                       {"heartbeat_ms", heartbeat_ms},
                       {"timeout_ms", member_timeout_ms}};
  if (!setup.certificates.empty())
    cluster["tls"] = json::object{{"certificate", setup.certificates + "/" + node_id + ".pem"},
                                  {"key", setup.certificates + "/" + node_id + ".key"},
                                  {"ca_file", setup.certificates + "/ca.pem"}};
  const json::object channel{{"name", "sms"}, {"type", "simulated"}};
  return json::serialize(json::object{{"channels", json::array{channel}}, {"cluster", cluster}});
}

/// The node ids a node's GET /v1/cluster shows as members; empty when it does not answer.
std::set<std::string> members(running_herald& node) {
  std::set<std::string> ids;
  try {
    auto response = node.get("/v1/cluster");
    if (response.status != 200)
      return ids;
    const auto view = json::parse(response.body);
    for (const auto& member : view.at("members").as_array())
      ids.emplace(member.at("node_id").as_string());
  } catch (const std::exception&) {
  }
  return ids;
}

/// Asks GET /healthz every 100 ms on a thread of its own while an attack runs; the slowest
/// answer, and how many did not come (a refused connection, a timeout, not 200).
class healthz_probe {
public:
  explicit healthz_probe(std::uint16_t port)
      : thread_([this, port] {
          while (!stop_) {
            const auto start = std::chrono::steady_clock::now();
            bool ok = false;
            try {
              http_connection connection{host, port, 2s};
              ok = connection.request("GET", "/healthz").status == 200;
            } catch (const std::exception&) {
            }
            const auto took = std::chrono::steady_clock::now() - start;
            slowest_ = std::max<std::int64_t>(
                slowest_, std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
            failed_ += ok ? 0 : 1;
            answered_ += 1;
            std::this_thread::sleep_for(100ms);
          }
        }) {}

  ~healthz_probe() { finish(); }

  void finish() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
  }

  std::int64_t slowest_ms() const { return slowest_; }
  int failed() const { return failed_; }
  int asked() const { return answered_; }

private:
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> slowest_{0};
  std::atomic<int> failed_{0};
  std::atomic<int> answered_{0};
  std::thread thread_;
};

std::string bytes_of_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

/// The outside review's packet: a BASP server handshake header without payload.
const std::string crash_packet = bytes_of_hex(std::string(30, '0') + "03" + std::string(32, '0'));
/// struct.pack(">BBBBIQQQ", 1, 0, 0, 0, 0xFFFFFFFF, 0, 0, 0): a 4 GiB client handshake.
const std::string huge_declaration = bytes_of_hex("01000000ffffffff" + std::string(48, '0'));

std::string random_bytes(std::size_t size, std::mt19937& random) {
  std::string out(size, '\0');
  for (auto& c : out)
    c = static_cast<char>(random() & 0xff);
  return out;
}

/// A plain TCP connection to the cluster port, as a stranger opens it.
class raw_connection {
public:
  /// Connects from 127.0.0.1, or from 127.0.0.`source_host` (1-254): all of 127/8 is loopback,
  /// so one test host can be many attacking addresses.
  explicit raw_connection(std::uint16_t port, int source_host = 1)
      : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    BOOST_REQUIRE(fd_ >= 0);
    sockaddr_in source{};
    source.sin_family = AF_INET;
    source.sin_addr.s_addr = htonl((127u << 24) | static_cast<std::uint32_t>(source_host));
    BOOST_REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&source), sizeof source) == 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const auto connected = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    BOOST_REQUIRE_MESSAGE(connected == 0, "cannot connect to the cluster port "
                                              << port << " from 127.0.0." << source_host << ": "
                                              << std::strerror(errno));
  }
  ~raw_connection() { ::close(fd_); }
  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;

  /// Sends all of `bytes`; false when the node closed the connection first.
  bool send(const std::string& bytes) {
    for (std::size_t sent = 0; sent < bytes.size();) {
      const auto n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0)
        return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  /// Whether the node closes the connection within `bound`: whatever it sends first (a BASP
  /// handshake, a TLS alert) is read and dropped until the end of the stream.
  bool closed_within(std::chrono::milliseconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    char buffer[4096];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return false;
      pollfd ready{fd_, POLLIN, 0};
      if (::poll(&ready, 1, static_cast<int>(left.count())) <= 0)
        continue;
      if (::recv(fd_, buffer, sizeof buffer, 0) <= 0)
        return true; // end of stream, or reset
    }
  }

private:
  int fd_;
};

/// Sends `bytes` on a fresh connection to the cluster port; whether the node then closed it
/// within `bound`.
bool sent_and_closed(std::uint16_t port, const std::string& bytes,
                     std::chrono::milliseconds bound = 10s) {
  raw_connection connection{port};
  connection.send(bytes); // refused midway is as good as closed after
  return connection.closed_within(bound);
}

/// Connections that send nothing, held open until closed by the node or destroyed.
std::vector<std::unique_ptr<raw_connection>> half_open(std::uint16_t port, std::size_t count,
                                                       int addresses = 1) {
  std::vector<std::unique_ptr<raw_connection>> out;
  for (std::size_t i = 0; i < count; ++i)
    out.push_back(std::make_unique<raw_connection>(port, 1 + static_cast<int>(i) % addresses));
  return out;
}

/// Whether every one of `connections` has been closed by the node within `bound`.
bool all_closed(std::vector<std::unique_ptr<raw_connection>>& connections,
                std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (auto& connection : connections) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!connection->closed_within(std::max(left, std::chrono::milliseconds{1})))
      return false;
  }
  return true;
}

/// The cluster port's closed-connection counter of a node, by reason.
double closed_total(running_herald& node, const std::string& reason) {
  return metric_sum(node.metrics(), "herald_cluster_connections_closed_total",
                    {"reason=\"" + reason + "\""});
}

/// Two node ids and their ports, on one fresh database.
struct two_nodes {
  std::string database = own_test_database("herald_transport_");
  std::uint16_t port1 = free_port();
  std::uint16_t port2 = free_port();
};

/// Runs every attack of the review against `port` and checks what must hold meanwhile.
void attack_and_check(running_herald& node, std::uint16_t port, bool tls) {
  const auto pid = node.process().pid();
  const auto before = status_kib(pid, "VmRSS");
  std::mt19937 random{2612};
  healthz_probe probe{node.port()};
  for (int i = 0; i < 20; ++i)
    BOOST_TEST(sent_and_closed(port, crash_packet), "crash packet " << i << " left open");
  for (int i = 0; i < 5; ++i)
    BOOST_TEST(sent_and_closed(port, huge_declaration), "4 GiB declaration " << i << " left open");
  BOOST_TEST(sent_and_closed(port, random_bytes(1024 * 1024, random)));
  for (int i = 0; i < 20; ++i)
    BOOST_TEST(sent_and_closed(port, random_bytes(64 * 1024, random)));
  auto waiting = half_open(port, 200);
  BOOST_TEST(all_closed(waiting, 30s), "a half-open connection stayed open past 30 s");
  probe.finish();
  BOOST_REQUIRE(node.process().running());
  BOOST_TEST(probe.failed() == 0, probe.failed() << " of " << probe.asked() << " /healthz failed");
  BOOST_TEST(probe.slowest_ms() < 1000, "slowest /healthz: " << probe.slowest_ms() << " ms");
  const auto peak = status_kib(pid, "VmHWM");
  BOOST_TEST_MESSAGE("RSS " << before << " KiB, at most " << peak << " KiB since; slowest /healthz "
                            << probe.slowest_ms() << " ms of " << probe.asked());
  if (rss_measures_herald(pid))
    BOOST_TEST(peak - before < 64 * 1024, "RSS peaked at " << peak << " KiB from " << before);
  // 200 from one address against 8 places: most refused at once, the rest timed out.
  BOOST_TEST(closed_total(node, "refused") > 0);
  BOOST_TEST(closed_total(node, "expired") > 0);
  if (!tls) // on TLS the handshake fails before any frame is read
    BOOST_TEST(closed_total(node, "malformed") >= 25);
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_transport_tests,
                      *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

BOOST_AUTO_TEST_CASE(hostile_bytes_on_the_tls_port_leave_the_node_serving_and_peers_joining) {
  temp_dir certs{"herald-certs"};
  make_certificates(certs.path(), {"n1", "n2"});
  two_nodes ports;
  const port_setup tls{certs.path()};
  running_herald n1{ports.database, node_config("n1", ports.port1, {ports.port2}, tls)};
  attack_and_check(n1, ports.port1, true);
  const auto start = std::chrono::steady_clock::now();
  running_herald n2{ports.database, node_config("n2", ports.port2, {ports.port1}, tls)};
  const std::set<std::string> both{"n1", "n2"};
  BOOST_TEST(eventually([&] { return members(n1) == both && members(n2) == both; }, 10s),
             "n2 did not join within 10 s; n1 sees " << members(n1).size() << "\n"
                                                     << n1.process().log());
  BOOST_TEST_MESSAGE("n2 joined after " << std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::steady_clock::now() - start)
                                               .count()
                                        << " ms");
}

BOOST_AUTO_TEST_CASE(a_node_without_the_clusters_certificate_is_refused) {
  temp_dir ours{"herald-certs"};
  temp_dir theirs{"herald-certs"};
  make_certificates(ours.path(), {"n1", "n2"});
  make_certificates(theirs.path(), {"n2"}); // the same name, another authority
  two_nodes ports;
  running_herald n1{ports.database,
                    node_config("n1", ports.port1, {ports.port2}, port_setup{ours.path()})};
  {
    running_herald stranger{
        ports.database, node_config("n2", ports.port2, {ports.port1}, port_setup{theirs.path()})};
    // Both dial each other (every heartbeat at first): for 3 s neither may see the other.
    const auto until = std::chrono::steady_clock::now() + 3s;
    while (std::chrono::steady_clock::now() < until) {
      BOOST_REQUIRE(members(n1) == std::set<std::string>{"n1"});
      BOOST_REQUIRE(members(stranger) == std::set<std::string>{"n2"});
      std::this_thread::sleep_for(100ms);
    }
    BOOST_REQUIRE_EQUAL(stranger.process().stop(), 0); // its node name is free again
  }
  // The same node with the cluster's certificate: a member within 10 s.
  running_herald n2{ports.database,
                    node_config("n2", ports.port2, {ports.port1}, port_setup{ours.path()})};
  const std::set<std::string> both{"n1", "n2"};
  BOOST_TEST(eventually([&] { return members(n1) == both && members(n2) == both; }, 10s));
}

BOOST_AUTO_TEST_CASE(hostile_bytes_on_a_plaintext_loopback_port_never_reach_caf) {
  two_nodes ports;
  running_herald n1{ports.database, node_config("n1", ports.port1, {ports.port2}, {})};
  attack_and_check(n1, ports.port1, false);
  running_herald n2{ports.database, node_config("n2", ports.port2, {ports.port1}, {})};
  const std::set<std::string> both{"n1", "n2"};
  BOOST_TEST(eventually([&] { return members(n1) == both && members(n2) == both; }, 10s));
}

BOOST_AUTO_TEST_CASE(waiting_cluster_connections_cannot_take_the_descriptors_http_needs) {
  temp_dir certs{"herald-certs"};
  make_certificates(certs.path(), {"n1"});
  two_nodes ports;
  temp_dir dir{"herald-e2e"};
  write_file(dir.file("herald.json"),
             node_config("n1", ports.port1, {ports.port2}, port_setup{certs.path()}));
  const auto http_port = free_port();
  herald_process node{{"serve", "--listen", host + ":" + std::to_string(http_port), "--db",
                       ports.database, "--config", dir.file("herald.json")},
                      dir.file("herald.log"),
                      process_limits{256}};
  BOOST_REQUIRE_MESSAGE(node.wait_ready(host, http_port), node.log());
  // From 40 addresses: the per-address cap alone (8) would not stop them, the total one must.
  auto waiting = half_open(ports.port1, 300, 40);
  for (int i = 0; i < 10; ++i) {
    const auto start = std::chrono::steady_clock::now();
    BOOST_TEST(request(host, http_port, "GET", "/healthz").status == 200);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    BOOST_TEST(took.count() < 1000, "/healthz took " << took.count() << " ms");
  }
  BOOST_TEST(all_closed(waiting, 30s));
}

BOOST_AUTO_TEST_SUITE_END()
