#include "providers/signed_poster.hpp"

#include "providers/failure_class.hpp"
#include "providers/webhook_signature.hpp"

#include <utility>

namespace herald::providers {

std::int64_t system_unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

signed_poster::signed_poster(poster_config config, std::function<std::int64_t()> unix_seconds)
    : config_(std::move(config)),
      unix_seconds_(unix_seconds ? std::move(unix_seconds) : system_unix_seconds),
      client_(http_client_options{config_.max_connections, max_kept_answer, config_.user_agent}) {}

void signed_poster::post(signed_post request, post_callback done) {
  if (!done)
    return; // nobody to answer; do not call the endpoint for nothing
  outbound_call call;
  call.url = config_.url;
  call.timeout = config_.timeout;
  try {
    const auto now = unix_seconds_();
    call.body = request.body(now);
    call.headers = {
        "Content-Type: application/json",
        "webhook-id: " + request.id,
        "webhook-timestamp: " + std::to_string(now),
        "webhook-signature: " + sign_webhook(config_.key, request.id, now, call.body),
    };
  } catch (const std::exception& e) { // e.g. from the injected clock: nothing left the process
    done({{call_outcome::retryable, std::string{"webhook call not started: "} + e.what(),
           std::nullopt},
          0,
          {}});
    return;
  }
  call.headers.insert(call.headers.end(), std::make_move_iterator(request.headers.begin()),
                      std::make_move_iterator(request.headers.end()));
  client_.call(std::move(call), [done = std::move(done)](outbound_answer answer) {
    post_answer result{classify_outbound(answer), answer.status, std::move(answer.body)};
    if (result.result.outcome == call_outcome::success)
      result.result.detail.clear();
    done(std::move(result));
  });
}

} // namespace herald::providers
