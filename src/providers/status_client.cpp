#include "providers/status_client.hpp"

#include "domain/masking.hpp"
#include "observability/log.hpp"
#include "providers/webhook_provider.hpp"

#include <algorithm>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <curl/curl.h>

namespace herald::providers {
namespace {

/// A status answer is a small JSON object; anything longer is not one.
constexpr std::size_t max_answer_bytes = 4096;

status_answer unknown(std::string detail) {
  return {status_answer::kind::unknown, provider_status::accepted, {}, std::move(detail)};
}

/// One query in curl's hands. Lives at a stable address: curl holds pointers into it.
struct running_query {
  status_callback done;
  std::string body;
  char error[CURL_ERROR_SIZE] = {};
};

size_t on_answer_body(char* data, size_t size, size_t count, void* user) {
  auto* q = static_cast<running_query*>(user);
  const auto bytes = size * count;
  const auto room =
      max_answer_bytes + 1 > q->body.size() ? max_answer_bytes + 1 - q->body.size() : 0;
  q->body.append(data, bytes < room ? bytes : room);
  return bytes;
}

using answered_list = std::vector<std::pair<status_callback, status_answer>>;

void answer_all(answered_list& answered) {
  for (auto& [done, answer] : answered) {
    try {
      done(std::move(answer));
    } catch (...) { // the worker thread must survive a callback's failure
      log::error("status_query.callback_threw", {});
    }
  }
  answered.clear();
}

} // namespace

std::string escape_path_segment(std::string_view id) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(id.size());
  for (const char c : id) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
                            (byte >= '0' && byte <= '9') || c == '-' || c == '.' || c == '_' ||
                            c == '~';
    if (unreserved) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(hex[byte >> 4]);
      out.push_back(hex[byte & 0x0f]);
    }
  }
  return out;
}

status_answer classify_status_answer(int code, long http_status, std::string_view body,
                                     std::string_view error_text) {
  if (code != CURLE_OK && http_status < 200)
    return unknown(
        "status query failed: " + std::string{curl_easy_strerror(static_cast<CURLcode>(code))} +
        (error_text.empty() ? "" : ": " + domain::mask_free_text(error_text)));
  if (http_status == 404)
    return {status_answer::kind::not_found, provider_status::accepted, {}, "404"};
  if (http_status < 200 || http_status > 299)
    return unknown("status query answered HTTP " + std::to_string(http_status));
  if (code != CURLE_OK || body.size() > max_answer_bytes)
    return unknown("status query answer cut off");
  boost::system::error_code ec;
  const auto value = boost::json::parse(body, ec);
  const auto* status = !ec && value.is_object() ? value.as_object().if_contains("status") : nullptr;
  const auto parsed = status != nullptr && status->is_string()
                          ? parse_provider_status(std::string_view{status->as_string()})
                          : std::nullopt;
  if (!parsed)
    return unknown("status query answer names no known status");
  return {status_answer::kind::found, *parsed, message_id_in(body), {}};
}

struct status_client::impl {
  struct waiting_query {
    std::string url;
    status_callback done;
  };

  status_client_config config;
  std::string base; ///< status_url without a trailing '/'
  CURLM* multi = nullptr;

  std::mutex mutex;
  std::deque<waiting_query> queue; ///< guarded by mutex
  bool stopping = false;           ///< guarded by mutex

  std::unordered_map<CURL*, std::unique_ptr<running_query>> active; ///< worker thread only
  std::thread worker;

  ~impl() {
    if (multi != nullptr)
      curl_multi_cleanup(multi);
  }

  void run() {
    answered_list answered;
    for (;;) {
      std::deque<waiting_query> incoming;
      bool stop = false;
      {
        std::lock_guard<std::mutex> guard{mutex};
        incoming.swap(queue);
        stop = stopping;
      }
      if (stop) {
        for (auto& [easy, q] : active) {
          curl_multi_remove_handle(multi, easy);
          curl_easy_cleanup(easy);
          answered.emplace_back(std::move(q->done), unknown("status client stopped"));
        }
        active.clear();
        for (auto& waiting : incoming)
          answered.emplace_back(std::move(waiting.done), unknown("status client stopped"));
        answer_all(answered);
        return;
      }
      for (auto& waiting : incoming)
        start(waiting, answered);
      int still_running = 0;
      curl_multi_perform(multi, &still_running);
      collect(answered);
      answer_all(answered);
      curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
  }

  void start(waiting_query& waiting, answered_list& answered) {
    CURL* easy = curl_easy_init();
    try {
      if (easy == nullptr)
        throw std::runtime_error("curl_easy_init failed");
      auto q = std::make_unique<running_query>();
      curl_easy_setopt(easy, CURLOPT_URL, waiting.url.c_str());
      curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
      curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
      curl_easy_setopt(easy, CURLOPT_USERAGENT, "herald-webhook/1");
      curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(config.timeout.count()));
      curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
      curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_answer_body);
      curl_easy_setopt(easy, CURLOPT_WRITEDATA, q.get());
      curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, q->error);
      if (curl_multi_add_handle(multi, easy) != CURLM_OK)
        throw std::runtime_error("curl_multi_add_handle failed");
      q->done = std::move(waiting.done);
      active.emplace(easy, std::move(q));
    } catch (const std::exception& e) {
      if (easy != nullptr)
        curl_easy_cleanup(easy);
      answered.emplace_back(std::move(waiting.done),
                            unknown(std::string{"status query not started: "} + e.what()));
    }
  }

  void collect(answered_list& answered) {
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &left)) {
      if (message->msg != CURLMSG_DONE)
        continue;
      CURL* easy = message->easy_handle;
      const CURLcode code = message->data.result; // read before the handle is removed
      auto found = active.find(easy);
      if (found == active.end())
        continue;
      auto q = std::move(found->second);
      active.erase(found);
      long status = 0;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
      curl_multi_remove_handle(multi, easy);
      curl_easy_cleanup(easy);
      answered.emplace_back(std::move(q->done),
                            classify_status_answer(code, status, q->body, q->error));
    }
  }
};

status_client::status_client(status_client_config config) {
  // Also makes libcurl's global state ready.
  if (auto problem = http_url_problem(config.status_url, "status_url"); !problem.empty())
    throw std::invalid_argument(problem);
  impl_ = std::make_unique<impl>();
  impl_->config = std::move(config);
  impl_->base = impl_->config.status_url;
  while (!impl_->base.empty() && impl_->base.back() == '/')
    impl_->base.pop_back();
  impl_->multi = curl_multi_init();
  if (impl_->multi == nullptr)
    throw std::runtime_error("curl_multi_init failed");
  const auto connections =
      static_cast<long>(std::max<std::size_t>(impl_->config.max_connections, 1));
  curl_multi_setopt(impl_->multi, CURLMOPT_MAX_HOST_CONNECTIONS, connections);
  curl_multi_setopt(impl_->multi, CURLMOPT_MAXCONNECTS, connections);
  impl_->worker = std::thread([state = impl_.get()] { state->run(); });
}

status_client::~status_client() {
  {
    std::lock_guard<std::mutex> guard{impl_->mutex};
    impl_->stopping = true;
  }
  curl_multi_wakeup(impl_->multi);
  impl_->worker.join();
}

void status_client::query(const provider_status_query& query, status_callback done) {
  if (!done)
    return;
  impl::waiting_query waiting{impl_->base + "/" + escape_path_segment(query.provider_request_id),
                              std::move(done)};
  bool queued = false;
  try {
    std::lock_guard<std::mutex> guard{impl_->mutex};
    if (!impl_->stopping) {
      impl_->queue.push_back(std::move(waiting)); // strong guarantee: intact if it throws
      queued = true;
    }
  } catch (const std::exception&) {
  }
  if (queued) {
    curl_multi_wakeup(impl_->multi);
    return;
  }
  try {
    waiting.done(unknown("status query not queued"));
  } catch (...) {
    log::error("status_query.callback_threw", {});
  }
}

} // namespace herald::providers
