#include "providers/http_client.hpp"

#include "domain/masking.hpp"
#include "observability/log.hpp"

#include <algorithm>
#include <deque>
#include <mutex>
#include <new>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unordered_map>

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

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals_prefix(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size())
    return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (lower(text[i]) != prefix[i])
      return false;
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

struct slist {
  curl_slist* list = nullptr;
  slist() = default;
  slist(const slist&) = delete;
  slist& operator=(const slist&) = delete;
  ~slist() { curl_slist_free_all(list); }
  void append(const std::string& line) {
    auto* grown = curl_slist_append(list, line.c_str());
    if (grown == nullptr)
      throw std::bad_alloc();
    list = grown;
  }
};

/// A call handed to call() and not yet given to curl.
struct pending_call {
  outbound_call request;
  outbound_callback done;
};

/// One call in curl's hands. Lives at a stable address: curl holds pointers into it.
struct transfer {
  outbound_call request;
  outbound_callback done;
  std::size_t max_body = 0;
  std::size_t upload_offset = 0; ///< SMTP: how much of the message curl has read
  bool reply_complete = true;    ///< SMTP: the last reply line ended its reply
  slist headers;
  slist recipients;
  outbound_answer answer;
  char error[CURL_ERROR_SIZE] = {};
};

/// Appends what fits of `data` to an answer kept up to `max` bytes. Once it does not all fit,
/// the kept text ends inside a word: that word goes, up to the last space or punctuation, for
/// the start of a phone number or key ("+86138", "sk_li") is what masking no longer
/// recognises. Nothing is kept after a cut.
void keep(outbound_answer& answer, std::string_view data, std::size_t max) {
  if (answer.body_cut)
    return;
  auto& kept = answer.body;
  const auto room = max > kept.size() ? max - kept.size() : 0;
  kept.append(data.substr(0, room));
  if (data.size() <= room)
    return;
  answer.body_cut = true;
  const auto boundary = kept.find_last_of(" \t\r\n\"',;:<>{}[]");
  kept.resize(boundary == std::string::npos ? 0 : boundary + 1);
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  const auto bytes = size * count;
  keep(t->answer, {data, bytes}, t->max_body);
  return bytes;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  const auto bytes = size * count;
  const std::string_view line{data, bytes};
  if (line.substr(0, 5) == "HTTP/") {
    // A new response (after an interim 1xx): forget what the earlier one said.
    t->answer.headers.clear();
    t->answer.body.clear();
    t->answer.body_cut = false;
    return bytes;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || t->answer.headers.size() >= 100)
    return bytes;
  std::string name{trim_http_whitespace(line.substr(0, colon))};
  std::transform(name.begin(), name.end(), name.begin(), lower);
  t->answer.headers.emplace_back(std::move(name),
                                 std::string{trim_http_whitespace(line.substr(colon + 1))});
  return bytes;
}

/// SMTP: curl hands every reply line of the server to the header callback. Keeps the last
/// reply, all its lines: "250-" continues a reply, "250 " (or a bare code) ends it (RFC 5321
/// §4.2.1), and the first line after an ended reply starts the next.
size_t on_smtp_reply(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  const auto bytes = size * count;
  const std::string_view line{data, bytes};
  auto& reply = t->answer.body;
  // The 221 to the QUIT curl sends when it closes a connection after a failure must not hide
  // the reply that failed the transfer.
  if (line.substr(0, 4) == "221 " || line.substr(0, 4) == "221-")
    return bytes;
  if (t->reply_complete) {
    reply.clear();
    t->answer.body_cut = false;
  }
  t->reply_complete = line.size() < 4 || line[3] != '-';
  keep(t->answer, line, t->max_body);
  return bytes;
}

size_t on_upload(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  const auto& body = t->request.body;
  const auto n = std::min(size * count, body.size() - t->upload_offset);
  std::copy_n(body.data() + t->upload_offset, n, buffer);
  t->upload_offset += n;
  return n;
}

/// Ends the connection a failed SMTP transfer leaves in curl's pool. curl (7.88) keeps a
/// connection whose final reply timed out, and would send the next message's MAIL FROM into
/// the same silence; a socket shut down here reads as closed, so curl drops it before reuse.
void end_connection(CURL* easy) {
  curl_socket_t socket = CURL_SOCKET_BAD;
  if (curl_easy_getinfo(easy, CURLINFO_ACTIVESOCKET, &socket) == CURLE_OK &&
      socket != CURL_SOCKET_BAD)
    ::shutdown(socket, SHUT_RDWR);
}

outbound_answer stopped_answer() {
  outbound_answer answer;
  answer.code = CURLE_ABORTED_BY_CALLBACK;
  answer.error = "client stopped";
  answer.stopped = true;
  return answer;
}

using finished_list = std::vector<std::pair<outbound_callback, outbound_answer>>;

void deliver(finished_list& finished) {
  for (auto& [done, answer] : finished) {
    try {
      done(std::move(answer));
    } catch (const std::exception& e) {
      log::error("provider.callback_threw", {{"error", domain::mask_free_text(e.what())}});
    } catch (...) {
      log::error("provider.callback_threw", {{"error", "unknown exception"}});
    }
  }
  finished.clear();
}

/// Whether this libcurl can send a call over a cleartext HTTP/2 connection an earlier call
/// opened with prior knowledge. Before 8.0.0 it cannot (curl issue 10634: the reused connection
/// fails every later stream with CURLE_HTTP2), so there each such call opens its own connection:
/// slower, but only local fakes are reached that way.
bool reuses_h2c_connections() {
  static const bool fixed = curl_version_info(CURLVERSION_NOW)->version_num >= 0x080000;
  return fixed;
}

/// Whether curl's "unsupported protocol" is in truth an answer that is no HTTP: curl takes such
/// bytes for HTTP/0.9, which it refuses with that code, after the request went out. Classed
/// as what it is (a garbled answer: outcome unknown), not as an unusable URL (permanent).
bool sent_then_garbled(CURL* easy, CURLcode code) {
  long request_bytes = 0;
  return code == CURLE_UNSUPPORTED_PROTOCOL &&
         curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &request_bytes) == CURLE_OK &&
         request_bytes > 0;
}

/// Sets up `easy` for the transfer `t`; throws when curl refuses.
void configure(CURL* easy, transfer& t, const std::string& user_agent) {
  const auto& request = t.request;
  auto set = [&](CURLoption option, auto value) {
    if (curl_easy_setopt(easy, option, value) != CURLE_OK)
      throw std::runtime_error("curl refused an option");
  };
  set(CURLOPT_URL, request.url.c_str());
  set(CURLOPT_NOSIGNAL, 1L);
  set(CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  set(CURLOPT_ERRORBUFFER, t.error);
  set(CURLOPT_WRITEFUNCTION, on_body);
  set(CURLOPT_WRITEDATA, &t);
  if (!request.basic_auth.empty())
    set(CURLOPT_USERPWD, request.basic_auth.c_str());
  if (request.smtp) {
    set(CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    set(CURLOPT_MAIL_FROM, ("<" + request.smtp->mail_from + ">").c_str());
    for (const auto& to : request.smtp->recipients)
      t.recipients.append("<" + to + ">");
    set(CURLOPT_MAIL_RCPT, t.recipients.list);
    // STARTTLS whenever the server offers it; required only when the config says so.
    set(CURLOPT_USE_SSL, request.smtp->require_tls ? static_cast<long>(CURLUSESSL_ALL)
                                                   : static_cast<long>(CURLUSESSL_TRY));
    set(CURLOPT_UPLOAD, 1L);
    set(CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    set(CURLOPT_READFUNCTION, on_upload);
    set(CURLOPT_READDATA, &t);
    set(CURLOPT_HEADERFUNCTION, on_smtp_reply);
    set(CURLOPT_HEADERDATA, &t);
    return;
  }
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  set(CURLOPT_USERAGENT, user_agent.c_str());
  set(CURLOPT_FOLLOWLOCATION, 0L);
  set(CURLOPT_TCP_KEEPALIVE, 1L);
  set(CURLOPT_HEADERFUNCTION, on_header);
  set(CURLOPT_HEADERDATA, &t);
  if (request.version == http_version::http2_prior_knowledge) {
    set(CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE));
    if (!reuses_h2c_connections()) {
      set(CURLOPT_FRESH_CONNECT, 1L);
      set(CURLOPT_FORBID_REUSE, 1L);
    }
  } else
    set(CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  if (request.method == "GET") {
    set(CURLOPT_HTTPGET, 1L);
  } else {
    if (request.method != "POST")
      set(CURLOPT_CUSTOMREQUEST, request.method.c_str());
    set(CURLOPT_POST, 1L);
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    set(CURLOPT_POSTFIELDS, request.body.data());
  }
  for (const auto& line : request.headers)
    t.headers.append(line);
  t.headers.append("Expect:"); // no 100-continue round trip for larger bodies
  set(CURLOPT_HTTPHEADER, t.headers.list);
}

} // namespace

std::string without_trailing_slash(std::string url) {
  while (!url.empty() && url.back() == '/')
    url.pop_back();
  return url;
}

std::string_view trim_http_whitespace(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' || text.back() == '\n'))
    text.remove_suffix(1);
  return text;
}

std::optional<std::string_view> outbound_answer::header(std::string_view name) const {
  for (auto it = headers.rbegin(); it != headers.rend(); ++it)
    if (it->first == name)
      return std::string_view{it->second};
  return std::nullopt;
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
  char* host = nullptr;
  const bool has_host = curl_url_get(parsed.handle, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
                        host != nullptr && *host != '\0';
  curl_free(host);
  if (!has_host)
    return what + " has no host: " + domain::mask_url(url);
  return {};
}

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

struct http_client::impl {
  http_client_options options;
  CURLM* multi = nullptr;

  std::mutex mutex;
  std::deque<pending_call> queue; ///< guarded by mutex
  bool stopping = false;          ///< guarded by mutex

  // Owned by the worker thread alone.
  std::vector<CURL*> idle; ///< easy handles kept for reuse (they carry TLS sessions, DNS cache)
  std::unordered_map<CURL*, std::unique_ptr<transfer>> active;

  std::thread worker;

  explicit impl(http_client_options o) : options(std::move(o)) {}

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
      // Sleeps until a socket is ready, curl's next timeout, or curl_multi_wakeup from call().
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
    if (idle.size() < options.max_connections)
      idle.push_back(easy);
    else
      curl_easy_cleanup(easy);
  }

  /// Hands one call to curl; a call that cannot even start is answered at once with curl's
  /// CURLE_FAILED_INIT (nothing left the process).
  void start(pending_call& call, finished_list& finished) {
    CURL* easy = nullptr;
    try {
      auto t = std::make_unique<transfer>();
      t->request = std::move(call.request);
      t->max_body = options.max_body;
      easy = acquire();
      if (easy == nullptr)
        throw std::runtime_error("curl_easy_init failed");
      configure(easy, *t, options.user_agent);
      auto* raw = t.get();
      active.emplace(easy, std::move(t));
      if (curl_multi_add_handle(multi, easy) != CURLM_OK) {
        active.erase(easy);
        throw std::runtime_error("curl_multi_add_handle failed");
      }
      raw->done = std::move(call.done);
    } catch (const std::exception& e) {
      if (easy != nullptr)
        curl_easy_cleanup(easy);
      outbound_answer answer;
      answer.code = CURLE_FAILED_INIT;
      answer.error = std::string{"call not started: "} + e.what();
      finished.emplace_back(std::move(call.done), std::move(answer));
    }
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
      auto& answer = t->answer;
      answer.code = sent_then_garbled(easy, code) ? CURLE_WEIRD_SERVER_REPLY : code;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &answer.status);
      if (code != CURLE_OK)
        answer.error = t->error; // may be empty: classifiers fall back to curl_easy_strerror
      if (code != CURLE_OK && t->request.smtp)
        end_connection(easy);
      curl_multi_remove_handle(multi, easy);
      release(easy);
      finished.emplace_back(std::move(t->done), std::move(answer));
    }
  }

  /// On stop: every call not yet answered is answered now, none is lost.
  void abandon(std::deque<pending_call>& incoming, finished_list& finished) {
    for (auto& [easy, t] : active) {
      curl_multi_remove_handle(multi, easy);
      curl_easy_cleanup(easy);
      finished.emplace_back(std::move(t->done), stopped_answer());
    }
    active.clear();
    for (auto& call : incoming)
      finished.emplace_back(std::move(call.done), stopped_answer());
  }
};

http_client::http_client(http_client_options options) {
  ensure_curl_global();
  impl_ = std::make_unique<impl>(std::move(options));
  impl_->multi = curl_multi_init();
  if (impl_->multi == nullptr)
    throw std::runtime_error("curl_multi_init failed");
  const auto connections =
      static_cast<long>(std::max<std::size_t>(impl_->options.max_connections, 1));
  curl_multi_setopt(impl_->multi, CURLMOPT_MAX_HOST_CONNECTIONS, connections);
  curl_multi_setopt(impl_->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, connections);
  curl_multi_setopt(impl_->multi, CURLMOPT_MAXCONNECTS, connections);
  // HTTP/2 calls to one host share a connection, as APNs and FCM expect.
  curl_multi_setopt(impl_->multi, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
  impl_->worker = std::thread([state = impl_.get()] { state->run(); });
}

http_client::~http_client() {
  {
    std::lock_guard<std::mutex> guard{impl_->mutex};
    impl_->stopping = true;
  }
  curl_multi_wakeup(impl_->multi);
  impl_->worker.join();
}

void http_client::call(outbound_call request, outbound_callback done) {
  if (!done)
    return; // nobody to answer; do not call the endpoint for nothing
  pending_call pending{std::move(request), std::move(done)};
  outbound_answer refusal = stopped_answer();
  try {
    bool queued = false;
    {
      std::lock_guard<std::mutex> guard{impl_->mutex};
      if (!impl_->stopping) {
        impl_->queue.push_back(std::move(pending)); // strong guarantee: intact if it throws
        queued = true;
      }
    }
    if (queued) {
      curl_multi_wakeup(impl_->multi);
      return;
    }
  } catch (const std::exception& e) {
    refusal = {};
    refusal.code = CURLE_FAILED_INIT;
    refusal.error = std::string{"call not queued: "} + e.what();
  }
  try {
    pending.done(std::move(refusal));
  } catch (...) {
    log::error("provider.callback_threw", {{"error", "exception from an inline answer"}});
  }
}

} // namespace herald::providers
