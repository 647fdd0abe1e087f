#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herald::tools {

/// What the fake providers (wechat_fake, fcm_fake, apns_fake) read and answer: plain values, so
/// a fake is pure logic, served by whichever server speaks its provider's protocol (the
/// HTTP/1.1 test server, h2c_server for HTTP/2-only APNs).

/// A request as a fake provider sees it.
struct fake_request {
  std::string method;
  std::string target; ///< path and query
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers = {}; ///< names lower-cased
  std::string protocol = "HTTP/1.1";                             ///< or "HTTP/2"

  /// The value of the first header named `name` (lower-case); empty when absent.
  std::string_view header(std::string_view name) const {
    for (const auto& [key, value] : headers)
      if (key == name)
        return value;
    return {};
  }
};

/// How an answer ends when it does not end as HTTP says it should.
enum class fake_ending {
  complete, ///< the whole answer
  cut,      ///< the status, the headers and half the body, then the answer is dropped
  dropped,  ///< no answer: the request is dropped (HTTP/1.1: the connection closes)
  garbage,  ///< bytes that are no HTTP at all instead of an answer, then the connection closes
};

/// How a fake provider answers.
struct fake_reply {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  bool hang = false; ///< never answer: a reply slower than any client's timeout
  std::vector<std::pair<std::string, std::string>> headers = {}; ///< further answer headers
  fake_ending ending = fake_ending::complete;
};

/// A copy of `value`, read under `mutex`: how the fakes' counters and records are read while a
/// server thread answers.
template <class T> T locked_copy(std::mutex& mutex, const T& value) {
  std::lock_guard<std::mutex> guard{mutex};
  return value;
}

} // namespace herald::tools
