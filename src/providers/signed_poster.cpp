#include "providers/signed_poster.hpp"

#include "domain/masking.hpp"
#include "observability/log.hpp"
#include "providers/failure_class.hpp"
#include "providers/webhook_signature.hpp"

#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <curl/curl.h>

namespace herald::providers {

void ensure_curl_global() {
  static std::once_flag once;
  static CURLcode result = CURLE_OK;
  std::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (result != CURLE_OK)
    throw std::runtime_error(std::string{"curl_global_init failed: "} + curl_easy_strerror(result));
}

namespace {

bool iequals_prefix(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size())
    return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    auto a = text[i];
    if (a >= 'A' && a <= 'Z')
      a = static_cast<char>(a - 'A' + 'a');
    if (a != prefix[i])
      return false;
  }
  return true;
}

/// Owns a CURLU while a URL is checked.
struct url_handle {
  CURLU* handle = curl_url();
  ~url_handle() { curl_url_cleanup(handle); }
  url_handle() = default;
  url_handle(const url_handle&) = delete;
  url_handle& operator=(const url_handle&) = delete;
};

/// The URL part `part` of `url`, or nullopt.
std::optional<std::string> url_part(CURLU* url, CURLUPart part) {
  char* text = nullptr;
  if (curl_url_get(url, part, &text, 0) != CURLUE_OK || text == nullptr)
    return std::nullopt;
  std::string out{text};
  curl_free(text);
  return out;
}

/// A call handed to post() and not yet given to curl.
struct pending_call {
  signed_post request;
  post_callback done;
};

/// One call in curl's hands. Lives at a stable address: curl holds pointers into it.
struct transfer {
  signed_post request;
  post_callback done;
  std::string body;
  curl_slist* headers = nullptr;
  std::string response_excerpt;
  std::optional<std::string> retry_after; ///< of the last response's headers
  char error[CURL_ERROR_SIZE] = {};

  transfer() = default;
  transfer(const transfer&) = delete;
  transfer& operator=(const transfer&) = delete;
  ~transfer() { curl_slist_free_all(headers); }
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  const auto bytes = size * count;
  // Only the start is kept: enough for a success's JSON naming the provider's message id (a
  // real provider's answer runs to a kilobyte or two) and for failure details, which the
  // classifier cuts to max_body_excerpt itself.
  const auto room = max_kept_answer > t->response_excerpt.size()
                        ? max_kept_answer - t->response_excerpt.size()
                        : 0;
  t->response_excerpt.append(data, bytes < room ? bytes : room);
  return bytes;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  const auto bytes = size * count;
  const std::string_view line{data, bytes};
  if (line.substr(0, 5) == "HTTP/") {
    t->retry_after.reset(); // a new response (after an interim 1xx): forget older headers
    t->response_excerpt.clear();
  } else if (iequals_prefix(line, "retry-after:")) {
    t->retry_after = std::string{line.substr(12)};
  }
  return bytes;
}

post_answer stopped_result() {
  return {{call_outcome::timeout, "adapter stopped", std::nullopt}, 0, {}};
}

using finished_list = std::vector<std::pair<post_callback, post_answer>>;

void deliver(finished_list& finished) {
  for (auto& [done, result] : finished) {
    if (!done)
      continue;
    try {
      done(std::move(result));
    } catch (const std::exception& e) {
      log::error("webhook.callback_threw", {{"error", e.what()}});
    } catch (...) {
      log::error("webhook.callback_threw", {{"error", "unknown exception"}});
    }
  }
  finished.clear();
}

} // namespace

std::int64_t system_unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string http_url_problem(const std::string& url, const std::string& what) {
  if (!iequals_prefix(url, "http://") && !iequals_prefix(url, "https://"))
    return what + " must start with http:// or https://";
  // curl would read "https:///x" as host "x"; an empty authority is a typo, refuse it.
  if (const auto rest = url.substr(url.find("://") + 3); rest.empty() || rest.front() == '/')
    return what + " has no host: " + domain::mask_url(url);
  try {
    ensure_curl_global();
  } catch (const std::exception& e) {
    return e.what();
  }
  url_handle parsed;
  if (parsed.handle == nullptr)
    return what + ": out of memory";
  if (curl_url_set(parsed.handle, CURLUPART_URL, url.c_str(), 0) != CURLUE_OK)
    return what + " is not a valid URL: " + domain::mask_url(url);
  const auto host = url_part(parsed.handle, CURLUPART_HOST);
  if (!host || host->empty())
    return what + " has no host: " + domain::mask_url(url);
  return {};
}

struct signed_poster::impl {
  poster_config config;
  std::function<std::int64_t()> unix_seconds;
  CURLM* multi = nullptr;

  std::mutex mutex;
  std::deque<pending_call> queue; ///< guarded by mutex
  bool stopping = false;          ///< guarded by mutex

  // Owned by the worker thread alone.
  std::vector<CURL*> idle; ///< easy handles kept for reuse (they carry TLS sessions, DNS cache)
  std::unordered_map<CURL*, std::unique_ptr<transfer>> active;

  std::thread worker;

  impl(poster_config c, std::function<std::int64_t()> clock)
      : config(std::move(c)), unix_seconds(std::move(clock)) {}

  ~impl() {
    for (auto* easy : idle)
      curl_easy_cleanup(easy);
    if (multi != nullptr)
      curl_multi_cleanup(multi);
  }

  void run() {
    finished_list finished;
    for (;;) {
      std::deque<pending_call> incoming;
      bool stop = false;
      {
        std::lock_guard<std::mutex> guard{mutex};
        incoming.swap(queue);
        stop = stopping;
      }
      if (stop) {
        abandon(incoming, finished);
        deliver(finished);
        return;
      }
      for (auto& call : incoming)
        start(call, finished);
      int running = 0;
      curl_multi_perform(multi, &running);
      collect(finished);
      deliver(finished);
      // Sleeps until a socket is ready, curl's next timeout, or curl_multi_wakeup from send().
      curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
  }

  CURL* acquire() {
    if (idle.empty())
      return curl_easy_init();
    auto* easy = idle.back();
    idle.pop_back();
    curl_easy_reset(easy);
    return easy;
  }

  void release(CURL* easy) {
    if (idle.size() < config.max_connections)
      idle.push_back(easy);
    else
      curl_easy_cleanup(easy);
  }

  /// Hands one call to curl; a call that cannot even start is answered retryable (nothing left
  /// the process).
  void start(pending_call& call, finished_list& finished) {
    CURL* easy = nullptr;
    try {
      auto t = std::make_unique<transfer>();
      t->request = std::move(call.request);
      const auto& request = t->request;
      const auto now = unix_seconds();
      t->body = request.body(now);
      std::vector<std::string> header_lines = {
          "Content-Type: application/json",
          "webhook-id: " + request.id,
          "webhook-timestamp: " + std::to_string(now),
          "webhook-signature: " + sign_webhook(config.key, request.id, now, t->body),
      };
      header_lines.insert(header_lines.end(), request.headers.begin(), request.headers.end());
      header_lines.emplace_back("Expect:"); // no 100-continue round trip for larger bodies
      for (const auto& line : header_lines) {
        auto* grown = curl_slist_append(t->headers, line.c_str());
        if (grown == nullptr)
          throw std::bad_alloc();
        t->headers = grown;
      }
      easy = acquire();
      if (easy == nullptr)
        throw std::runtime_error("curl_easy_init failed");
      curl_easy_setopt(easy, CURLOPT_URL, config.url.c_str());
      curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
      curl_easy_setopt(easy, CURLOPT_POST, 1L);
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, t->body.data());
      curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t->headers);
      curl_easy_setopt(easy, CURLOPT_USERAGENT, config.user_agent.c_str());
      curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(config.timeout.count()));
      curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
      curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
      curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
      curl_easy_setopt(easy, CURLOPT_WRITEDATA, t.get());
      curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
      curl_easy_setopt(easy, CURLOPT_HEADERDATA, t.get());
      curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t->error);
      if (curl_multi_add_handle(multi, easy) != CURLM_OK)
        throw std::runtime_error("curl_multi_add_handle failed");
      try {
        active.emplace(easy, std::move(t));
      } catch (...) {
        curl_multi_remove_handle(multi, easy);
        throw;
      }
      active.at(easy)->done = std::move(call.done);
    } catch (const std::exception& e) {
      not_started(call, easy, e.what(), finished);
    } catch (...) { // e.g. from the injected clock: the worker thread must survive it
      not_started(call, easy, "unknown exception", finished);
    }
  }

  void not_started(pending_call& call, CURL* easy, const char* why, finished_list& finished) {
    if (easy != nullptr)
      curl_easy_cleanup(easy);
    finished.emplace_back(
        std::move(call.done),
        post_answer{{call_outcome::retryable, std::string{"webhook call not started: "} + why,
                     std::nullopt},
                    0,
                    {}});
  }

  /// Answers every transfer curl has finished.
  void collect(finished_list& finished) {
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &left)) {
      if (message->msg != CURLMSG_DONE)
        continue;
      CURL* easy = message->easy_handle;
      const CURLcode code = message->data.result; // read before the handle is removed
      auto found = active.find(easy);
      if (found == active.end())
        continue;
      auto t = std::move(found->second);
      active.erase(found);
      long status = 0;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
      curl_multi_remove_handle(multi, easy);
      release(easy);
      finished.emplace_back(std::move(t->done), classify(code, status, *t));
    }
  }

  static post_answer classify(CURLcode code, long status, const transfer& t) {
    post_answer answer;
    answer.status = status;
    answer.response_excerpt = t.response_excerpt;
    // A final status seen means the endpoint decided, even if the rest of the answer was lost.
    if (code == CURLE_OK || status >= 200) {
      const auto retry_after =
          t.retry_after ? parse_retry_after(*t.retry_after, std::chrono::system_clock::now())
                        : std::nullopt;
      answer.result = classify_http(status, retry_after, t.response_excerpt);
    } else {
      // curl may quote the URL
      answer.result = classify_transport(code, domain::mask_free_text(t.error));
    }
    return answer;
  }

  /// On stop: every call not yet answered is answered now, none is lost.
  void abandon(std::deque<pending_call>& incoming, finished_list& finished) {
    for (auto& [easy, t] : active) {
      curl_multi_remove_handle(multi, easy);
      curl_easy_cleanup(easy);
      finished.emplace_back(std::move(t->done), stopped_result());
    }
    active.clear();
    for (auto& call : incoming)
      finished.emplace_back(std::move(call.done), stopped_result());
  }
};

signed_poster::signed_poster(poster_config config, std::function<std::int64_t()> unix_seconds) {
  ensure_curl_global();
  if (!unix_seconds)
    unix_seconds = system_unix_seconds;
  impl_ = std::make_unique<impl>(std::move(config), std::move(unix_seconds));
  impl_->multi = curl_multi_init();
  if (impl_->multi == nullptr)
    throw std::runtime_error("curl_multi_init failed");
  const auto connections = static_cast<long>(impl_->config.max_connections);
  curl_multi_setopt(impl_->multi, CURLMOPT_MAX_HOST_CONNECTIONS, connections);
  curl_multi_setopt(impl_->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, connections);
  curl_multi_setopt(impl_->multi, CURLMOPT_MAXCONNECTS, connections);
  impl_->worker = std::thread([state = impl_.get()] { state->run(); });
}

signed_poster::~signed_poster() {
  {
    std::lock_guard<std::mutex> guard{impl_->mutex};
    impl_->stopping = true;
  }
  curl_multi_wakeup(impl_->multi);
  impl_->worker.join();
}

void signed_poster::post(signed_post request, post_callback done) {
  if (!done)
    return; // nobody to answer; do not call the endpoint for nothing
  pending_call call{std::move(request), std::move(done)};
  post_answer refusal = stopped_result();
  try {
    bool queued = false;
    {
      std::lock_guard<std::mutex> guard{impl_->mutex};
      if (!impl_->stopping) {
        impl_->queue.push_back(std::move(call)); // strong guarantee: `call` intact if it throws
        queued = true;
      }
    }
    if (queued) {
      curl_multi_wakeup(impl_->multi);
      return;
    }
  } catch (const std::exception& e) {
    refusal.result = {call_outcome::retryable, std::string{"webhook call not queued: "} + e.what(),
                      std::nullopt};
  }
  try {
    call.done(std::move(refusal));
  } catch (...) {
    log::error("webhook.callback_threw", {{"error", "exception from an inline answer"}});
  }
}

} // namespace herald::providers
