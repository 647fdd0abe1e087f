// The built herald binary against hostile HTTP (issue #6, "HTTP and input"): a smuggled
// request is not executed, idle connections under a small descriptor limit do not lock new
// clients out, and control characters, non-finite numbers and duplicate keys are refused with
// nothing stored. Issue #26: a chunked trailer never counts as a header, two Authorization or
// Host headers or none are 400, and without keys only requests addressed to loopback are served.

#include "support/eventually.hpp"
#include "support/herald_process.hpp"
#include "support/herald_server.hpp"
#include "support/http_client.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <netinet/in.h>
#include <random>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

/// biz_ids unique to this run.
std::string unique_prefix() {
  std::random_device device;
  return "hard-" + std::to_string(::getpid()) + "-" + std::to_string(device() % 1000000) + "-";
}

/// A valid request for `biz_id` with `members` spliced in (e.g. `,"params":{...}`) and the
/// content given, as raw JSON text so that the bad cases can be written as they travel.
std::string request_body(const std::string& biz_id, const std::string& content,
                         const std::string& members = {}) {
  return R"({"biz_type":"ORDER_SHIPPED","biz_id":")" + biz_id +
         R"(","user_id":"u-1","channels":["sms"],"to":{"sms":"+8613800000000"},"content":)" +
         content + members + "}";
}

/// Checks that `biz_id` left nothing behind: a valid request for it now creates its task.
void expect_nothing_stored(running_herald& herald, const std::string& biz_id) {
  auto response = herald.post(request_body(biz_id, R"({"title":"t","body":"b"})"));
  BOOST_TEST(response.status == 202, response.body);
  if (response.status != 202)
    return;
  const json::value answer = json::parse(response.body);
  for (const auto& task : answer.at("tasks").as_array())
    BOOST_TEST(task.at("duplicate").as_bool() == false);
}

/// Raw TCP connections to a port, opened and held without sending anything.
class idle_connections {
public:
  ~idle_connections() {
    for (int fd : fds_)
      ::close(fd);
  }

  /// Opens `count` connections; each connect gives up after 2 s. The number opened.
  std::size_t open(std::uint16_t port, std::size_t count) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      if (fd < 0)
        break;
      timeval bound{2, 0}; // connect honours the send timeout
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        continue;
      }
      fds_.push_back(fd);
    }
    return fds_.size();
  }

private:
  std::vector<int> fds_;
};

/// herald with API keys on a fresh SQLite file, and a key with the submit, read and admin
/// scopes.
struct keyed_herald {
  temp_dir dir{"herald-e2e-keyed"};
  std::string database = "sqlite:" + dir.file("herald.db");
  std::string key = create_api_key(database, "acme", "submit,read,admin");
  running_herald herald{database, R"({"auth":{"mode":"api_keys"},
                                      "channels":[{"name":"sms","type":"simulated"}]})"};
};

/// A chunked POST /v1/messages of `body` in one chunk, with `headers` (each "Name: value\r\n")
/// before it and `trailer` (the same) after it.
std::string chunked_submission(const std::string& headers, const std::string& body,
                               const std::string& trailer) {
  std::ostringstream hex;
  hex << std::hex << body.size();
  return "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n" +
         headers + "\r\n" + hex.str() + "\r\n" + body + "\r\n0\r\n" + trailer + "\r\n";
}

std::string error_code_of(const http_response& response) {
  try {
    return json::value_to<std::string>(json::parse(response.body).at("error").at("code"));
  } catch (const std::exception& e) {
    BOOST_ERROR("error body unreadable (" << e.what() << "): " << response.body);
    return {};
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(http_hardening_tests)

BOOST_FIXTURE_TEST_CASE(a_trailer_never_becomes_a_header, keyed_herald) {
  const auto prefix = unique_prefix();
  const std::string authorization = "Authorization: Bearer " + key + "\r\n";
  const std::string json_type = "Content-Type: application/json\r\n";
  {BOOST_TEST_CONTEXT("a key sent only after the body"){
      http_connection connection(host, herald.port(), 10s);
  const std::string biz_id = prefix + "trailer-key";
  auto response = connection.raw(chunked_submission(
      json_type, request_body(biz_id, R"({"title":"t","body":"b"})"), authorization));
  BOOST_TEST(response.status == 401);
  BOOST_TEST(error_code_of(response) == "unauthorized");
  BOOST_TEST(connection.closed_by_peer()); // its body was never read
}
}
{BOOST_TEST_CONTEXT("a Content-Type sent only after the body"){
    http_connection connection(host, herald.port(), 10s);
auto response = connection.raw(chunked_submission(
    authorization, request_body(prefix + "trailer-type", R"({"title":"t","body":"b"})"),
    json_type));
BOOST_TEST(response.status == 415);
BOOST_TEST(error_code_of(response) == "unsupported_media_type");
}
}
{
  BOOST_TEST_CONTEXT("a trailer of its own is ignored, the request taken") {
    http_connection connection(host, herald.port(), 10s);
    auto response = connection.raw(
        chunked_submission(authorization + json_type,
                           request_body(prefix + "trailer-other", R"({"title":"t","body":"b"})"),
                           "X-Checksum: 1234\r\n"));
    BOOST_TEST(response.status == 202, response.body);
  }
}
}

BOOST_FIXTURE_TEST_CASE(two_authorization_headers_are_400, keyed_herald) {
  http_connection connection(host, herald.port(), 10s);
  // Even both valid: a proxy in front may have checked either.
  auto response = connection.raw("GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                 "Authorization: Bearer " +
                                 key + "\r\nAuthorization: Bearer " + key + "\r\n\r\n");
  BOOST_TEST(response.status == 400);
  BOOST_TEST(error_code_of(response) == "invalid_request");
  BOOST_TEST(response.body.find("Authorization") != std::string::npos, response.body);
  BOOST_TEST(connection.closed_by_peer());
  BOOST_TEST(
      request(host, herald.port(), "GET", "/v1/stats", {}, {{"Authorization", "Bearer " + key}})
          .status == 200);
}

BOOST_AUTO_TEST_CASE(two_host_headers_are_400) {
  running_herald herald({});
  http_connection connection(host, herald.port(), 10s);
  auto response =
      connection.raw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n");
  BOOST_TEST(response.status == 400);
  BOOST_TEST(error_code_of(response) == "invalid_request");
  BOOST_TEST(response.body.find("Host") != std::string::npos, response.body);
  BOOST_TEST(connection.closed_by_peer());
}

BOOST_AUTO_TEST_CASE(an_http_1_1_request_without_host_is_400) {
  running_herald herald({});
  http_connection connection(host, herald.port(), 10s);
  auto response = connection.raw("GET /healthz HTTP/1.1\r\n\r\n");
  BOOST_TEST(response.status == 400);
  BOOST_TEST(error_code_of(response) == "invalid_request");
  BOOST_TEST(response.body.find("Host") != std::string::npos, response.body);
  // HTTP/1.0 has no Host requirement.
  http_connection old_client(host, herald.port(), 10s);
  BOOST_TEST(old_client.raw("GET /healthz HTTP/1.0\r\n\r\n").status == 200);
}

BOOST_AUTO_TEST_CASE(without_keys_only_loopback_hosts_are_served) {
  running_herald herald({}); // the embedded default: auth.mode none on 127.0.0.1
  const auto port = std::to_string(herald.port());
  for (const std::string& name :
       std::vector<std::string>{"evil.example", "evil.example:" + port, "192.168.1.10",
                                "[2001:db8::1]:" + port, "localhost.evil.example"}) {
    BOOST_TEST_CONTEXT("Host: " << name) {
      http_connection connection(host, herald.port(), 10s);
      auto response = connection.raw("GET /v1/dead-letters HTTP/1.1\r\nHost: " + name + "\r\n\r\n");
      BOOST_TEST(response.status == 421);
      BOOST_TEST(error_code_of(response) == "misdirected_request");
      BOOST_TEST(!response.header("x-trace-id").empty());
    }
  }
  for (const std::string& name :
       std::vector<std::string>{"localhost", "LocalHost:" + port, "127.0.0.1:" + port, "127.1.2.3",
                                "[::1]:" + port, "[::1]"}) {
    BOOST_TEST_CONTEXT("Host: " << name) {
      http_connection connection(host, herald.port(), 10s);
      BOOST_TEST(
          connection.raw("GET /v1/dead-letters HTTP/1.1\r\nHost: " + name + "\r\n\r\n").status ==
          200);
    }
  }
}

BOOST_FIXTURE_TEST_CASE(user_ids_in_paths_never_reach_the_log, keyed_herald) {
  const std::string user = "alice-4d2c81";
  const auto with_key = header_list{{"Authorization", "Bearer " + key}};
  BOOST_TEST(request(host, herald.port(), "GET", "/v1/users/" + user).status == 401);
  BOOST_TEST(request(host, herald.port(), "GET", "/v1/users/" + user, {}, with_key).status == 404);
  BOOST_TEST(request(host, herald.port(), "GET", "/v1/users/" + user + "/inbox").status == 401);
  BOOST_TEST(request(host, herald.port(), "PUT", "/v1/users/" + user + "/dnd", "{", json_headers())
                 .status == 401);
  BOOST_TEST(request(host, herald.port(), "GET", "/v1/people/" + user).status == 404);
  const std::string route_logged = R"("path":"/v1/users/{user_id}")";
  BOOST_TEST(eventually(
      [&] { return herald.process().log().find(route_logged) != std::string::npos; }, 10s));
  const auto log = herald.process().log();
  BOOST_TEST(log.find(user) == std::string::npos, log);
  BOOST_TEST(log.find(R"("path":"/v1/users/{user_id}/inbox")") != std::string::npos);
  BOOST_TEST(log.find(R"json("path":"(unmatched)")json") != std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(with_keys_any_host_is_served, keyed_herald) {
  http_connection connection(host, herald.port(), 10s);
  BOOST_TEST(connection.raw("GET /healthz HTTP/1.1\r\nHost: herald.internal:8080\r\n\r\n").status ==
             200);
}

BOOST_AUTO_TEST_CASE(idle_connections_do_not_lock_out_new_clients) {
  raise_own_open_file_limit(2048);
  temp_dir dir("herald-e2e-fds");
  write_file(dir.file("herald.json"),
             R"({"http":{"max_connections":800,"max_connections_per_peer":2000},
                 "channels":[{"name":"sms","type":"simulated"}]})"); // one address: the test
  const std::uint16_t port = free_port();
  herald_process herald({"serve", "--listen", host + ":" + std::to_string(port), "--db",
                         "sqlite:" + dir.file("herald.db"), "--config", dir.file("herald.json")},
                        dir.file("herald.log"), process_limits{1024});
  BOOST_REQUIRE_MESSAGE(herald.wait_ready(host, port), herald.log());

  idle_connections idle;
  BOOST_REQUIRE_EQUAL(idle.open(port, 1100), 1100u);

  // A new client is answered at once, not after the idle ones time out (30 s).
  const auto started = std::chrono::steady_clock::now();
  try {
    http_connection client(host, port, 10s);
    BOOST_TEST(client.request("GET", "/healthz").status == 200);
  } catch (const std::exception& e) {
    BOOST_ERROR("a new client got no answer: " << e.what());
  }
  BOOST_TEST((std::chrono::steady_clock::now() - started < 10s));
  BOOST_TEST(herald.running());
  const auto log = herald.log();
  BOOST_TEST(log.find(R"("event":"open_file_limit")") != std::string::npos, log.substr(0, 2000));
  BOOST_TEST(log.find(R"("hard":"1024")") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(max_connections_out_of_bounds_exits_two) {
  temp_dir dir("herald-e2e-config");
  for (const std::string value : {"0", "1000001", "\"many\""}) {
    BOOST_TEST_CONTEXT("max_connections " << value) {
      write_file(dir.file("herald.json"),
                 R"({"http":{"max_connections":)" + value +
                     R"(},"channels":[{"name":"sms","type":"simulated"}]})");
      auto run = run_herald({"serve", "--config", dir.file("herald.json")});
      BOOST_TEST(run.exit_code == 2);
      BOOST_TEST(run.err.find("max_connections") != std::string::npos, run.err);
      BOOST_TEST(std::count(run.err.begin(), run.err.end(), '\n') <= 1, run.err);
    }
  }
}

BOOST_AUTO_TEST_CASE(slow_client_limits_out_of_bounds_exit_two) {
  temp_dir dir("herald-e2e-config");
  for (const std::string http :
       {R"("max_connections_per_peer": 0)", R"("header_timeout_ms": 10)",
        R"("min_body_bytes_per_second": 0)", R"("body_grace_ms": -1)",
        R"("max_body_bytes_in_flight": 6291456)", // under twice the 4 MiB batch limit
        R"("max_body_bytes": 1048576, "max_body_bytes_in_flight": 3145728)"}) {
    BOOST_TEST_CONTEXT("http " << http) {
      write_file(dir.file("herald.json"),
                 R"({"http":{)" + http + R"(},"channels":[{"name":"sms","type":"simulated"}]})");
      auto run = run_herald({"serve", "--config", dir.file("herald.json")});
      BOOST_TEST(run.exit_code == 2);
      BOOST_TEST(run.err.find("http.") != std::string::npos, run.err);
      BOOST_TEST(std::count(run.err.begin(), run.err.end(), '\n') <= 1, run.err);
    }
  }
}

BOOST_AUTO_TEST_CASE(smuggled_requests_are_not_executed) {
  running_herald herald({});
  const auto prefix = unique_prefix();
  const std::vector<std::string> codings{"identity", "gzip", "chunked, identity"};
  for (std::size_t i = 0; i < codings.size(); ++i) {
    const std::string& coding = codings[i];
    BOOST_TEST_CONTEXT("Transfer-Encoding: " << coding) {
      const std::string biz_id = prefix + "smuggled-" + std::to_string(i);
      const std::string body = request_body(biz_id, R"({"title":"t","body":"b"})");
      const std::string smuggled =
          "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          "Content-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body;
      http_connection connection(host, herald.port(), 10s);
      auto response =
          connection.raw("GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + coding +
                         "\r\n\r\n" + smuggled);
      BOOST_TEST(response.status == 400);
      BOOST_TEST(connection.closed_by_peer());
      expect_nothing_stored(herald, biz_id);
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_text_and_numbers_store_nothing) {
  running_herald herald({});
  const auto prefix = unique_prefix();
  struct bad_case {
    std::string name;
    std::string content;
    std::string members;
    std::string code;
    std::string field;
  };
  const std::string plain = R"({"title":"t","body":"b"})";
  std::string many_params = R"(,"params":{)";
  for (int i = 0; i < 65; ++i)
    many_params += (i ? "," : "") + std::string(R"("p)") + std::to_string(i) + R"(":"v")";
  many_params += "}";
  const std::vector<bad_case> cases{
      {"NUL in title", R"({"title":"t\u0000T","body":"b"})", "", "invalid_request",
       "content.title"},
      {"NUL in body", R"({"title":"t","body":"b\u0000B"})", "", "invalid_request", "content.body"},
      {"carriage return in body", R"({"title":"t","body":"b\rB"})", "", "invalid_request",
       "content.body"},
      {"newline in title", R"({"title":"t\nT","body":"b"})", "", "invalid_request",
       "content.title"},
      {"escape in a param", plain, R"(,"params":{"x":"\u001b[2J"})", "invalid_request", "params.x"},
      {"DEL in a param", plain, R"(,"params":{"x":"a\u007f"})", "invalid_request", "params.x"},
      {"infinite number", plain, R"(,"params":{"amount":1e999999})", "invalid_request",
       "params.amount"},
      {"param key too long", plain, R"(,"params":{")" + std::string(65, 'k') + R"(":"v"})",
       "invalid_request", "params"},
      {"too many params", plain, many_params, "invalid_request", "params"},
      {"duplicate top-level key", plain, R"(,"user_id":"u-2")", "duplicate_key", "user_id"},
      {"duplicate nested key", R"({"title":"t","body":"b","body":"c"})", "", "duplicate_key",
       "content.body"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    BOOST_TEST_CONTEXT(c.name) {
      const std::string biz_id = prefix + std::to_string(i);
      auto response = herald.post(request_body(biz_id, c.content, c.members));
      BOOST_TEST(response.status == 400);
      try {
        auto error = json::parse(response.body).at("error").as_object();
        BOOST_TEST(json::value_to<std::string>(error.at("code")) == c.code);
        BOOST_TEST(json::value_to<std::string>(error.at("field")) == c.field);
      } catch (const std::exception& e) {
        BOOST_ERROR("error body unreadable (" << e.what() << "): " << response.body);
      }
      expect_nothing_stored(herald, biz_id);
    }
  }
  // Text may still break lines and indent in the body.
  auto layout = herald.post(request_body(prefix + "layout", R"({"title":"t","body":"a\n\tb"})"));
  BOOST_TEST(layout.status == 202, layout.body);
}

BOOST_AUTO_TEST_SUITE_END()
