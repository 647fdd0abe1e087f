#pragma once

// What the fake providers (WeChat, Twilio, …) see and answer: pure request -> reply logic,
// served over HTTP by tests (tests/support/fake_provider_server.hpp) and `herald sim-provider`.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herald::tools {

/// A request as a fake provider sees it.
struct fake_request {
  std::string method;
  std::string target; ///< path and query
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers; ///< names lower-cased

  /// The value of the first header named `name` (lower-case); empty when absent.
  std::string header(std::string_view name) const {
    for (const auto& [key, value] : headers)
      if (key == name)
        return value;
    return {};
  }
};

/// How a fake provider answers.
struct fake_reply {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  bool hang = false; ///< never answer: a reply slower than any client's timeout
  std::vector<std::pair<std::string, std::string>> headers; ///< further headers
};

} // namespace herald::tools
