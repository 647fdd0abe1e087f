#pragma once

#include "tools/fake_exchange.hpp"

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace herald::tools {

/// One message the Twilio fake created.
struct twilio_sent {
  std::string sid;
  std::string to;
  std::string from; ///< From or MessagingServiceSid
  std::string body;
  std::string status_callback;
  std::string status; ///< queued until the test moves it on
  int error_code = 0;
};

/// A scripted answer to a create: Twilio's error {"code","message","status"} with that HTTP
/// status, or an answer that goes wrong after Twilio took the call.
struct twilio_error {
  unsigned http_status = 400;
  int code = 0;
  unsigned retry_after_s = 0; ///< 0: no Retry-After
  enum class shape {
    error,     ///< the error above
    truncated, ///< 201 with half the Message JSON: created, answer cut
    hang,      ///< created, never answered
  };
  shape kind = shape::error;
};

/// A local stand-in for the Twilio Messages API, following its documented wire format:
/// POST /2010-04-01/Accounts/{AccountSid}/Messages.json (form: To, From or
/// MessagingServiceSid, Body, StatusCallback) with basic auth answers 201 and the Message JSON
/// ("sid": "SM…", "status": "queued"); 20003 (401) for wrong credentials, 21211 for a To that
/// is no E.164 number, 21610 for a number that replied STOP, 21602 without a Body.
/// GET …/Messages/{sid}.json answers the message as it stands; 20404 (404) for an unknown sid.
/// Thread-safe.
class twilio_fake {
public:
  struct options {
    std::string account_sid = "AC00000000000000000000000000000001";
    std::string auth_token = "fake-auth-token";
  };

  explicit twilio_fake(options o);

  fake_reply handle(const fake_request& request);

  /// The next creates answer these errors, in order.
  void script(std::vector<twilio_error> errors);
  /// Numbers that replied STOP: 21610.
  void unsubscribe(const std::string& number);
  /// Moves a message on (delivered, undelivered, failed …), as the carrier reports it.
  void set_status(const std::string& sid, const std::string& status, int error_code = 0);

  std::vector<twilio_sent> sent() const;
  std::size_t create_requests() const;

  /// The status callback Twilio would POST for `message` now: its form body and the
  /// X-Twilio-Signature over the message's StatusCallback URL.
  struct callback {
    std::string body;
    std::string signature;
  };
  callback status_callback(const twilio_sent& message) const;

private:
  fake_reply create(const fake_request& request);
  fake_reply fetch(const std::string& sid) const;
  bool authorized(const fake_request& request) const;

  options options_;
  mutable std::mutex mutex_;
  std::deque<twilio_error> script_;
  std::set<std::string> unsubscribed_;
  std::vector<twilio_sent> sent_;
  std::map<std::string, std::size_t> index_of_sid_;
  std::size_t create_requests_ = 0;
};

} // namespace herald::tools
