#include "providers/smtp_provider.hpp"

#include "domain/masking.hpp"
#include "providers/mime_message.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <curl/curl.h>

namespace herald::providers {
namespace {

/// The SMTP reply code of the last reply, by its class.
constexpr long reply_class(long status) {
  return status / 100;
}

/// Curl's status once the server said 354: the message is being (or was) sent.
constexpr long data_go_ahead = 354;

/// "SMTP 550 5.1.1 no such user" from the reply's lines (or the bare code), on one line, masked.
std::string reply_detail(const outbound_answer& answer) {
  std::string text;
  for (const char c : answer.body)
    if (c != '\r') // lines joined by one space
      text.push_back(c == '\n' ? ' ' : c);
  while (!text.empty() && text.back() == ' ')
    text.pop_back();
  if (text.empty())
    text = std::to_string(answer.status);
  return domain::mask_free_text("SMTP " + text);
}

std::string curl_detail(std::string_view what, const outbound_answer& answer) {
  const auto code = static_cast<CURLcode>(answer.code);
  std::string detail{what};
  detail += " (curl " + std::to_string(answer.code) + ": ";
  detail += answer.error.empty() ? std::string{curl_easy_strerror(code)} : answer.error;
  if (answer.status != 0)
    detail += "; last reply " + std::to_string(answer.status);
  detail += ")";
  return domain::mask_free_text(detail);
}

bool iequals_prefix(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char p, char c) {
           return p == (c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
         });
}

bool has_control_chars(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

/// The host of an smtp:// or smtps:// URL, without brackets; empty when there is none.
std::string host_of(const std::string& url) {
  std::string host;
  CURLU* parsed = curl_url();
  if (parsed == nullptr)
    return host;
  char* part = nullptr;
  if (curl_url_set(parsed, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
      curl_url_get(parsed, CURLUPART_HOST, &part, 0) == CURLUE_OK && part != nullptr)
    host = part;
  curl_free(part);
  curl_url_cleanup(parsed);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return host;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

} // namespace

std::string smtp_config::validate() const {
  const bool implicit_tls = iequals_prefix(url, "smtps://");
  if (!implicit_tls && !iequals_prefix(url, "smtp://"))
    return "smtp url must start with smtp:// or smtps://";
  try {
    ensure_curl_global();
  } catch (const std::exception& e) {
    return e.what();
  }
  const auto host = host_of(url);
  if (host.empty())
    return "smtp url has no host: " + domain::mask_url(url);
  if (!is_plausible_email_address(from))
    return "smtp from must be a plain email address (local@domain)";
  if (has_control_chars(from_name))
    return "smtp from_name must not contain control characters";
  if (username.find(':') != std::string::npos || has_control_chars(username))
    return "smtp username must not contain ':' or control characters";
  if (!username.empty() && password.empty())
    return "smtp password is required with a username (password_env names the variable holding "
           "it)";
  if (username.empty() && !password.empty())
    return "smtp password is set but username is not";
  // AUTH sends the password itself (PLAIN, LOGIN): only ever over TLS, but to a relay on this
  // machine.
  if (!username.empty() && !tls_required() && !implicit_tls && !is_loopback(host))
    return "smtp require_tls is false with a username: the password would cross the network in "
           "the clear (allowed only to a loopback host)";
  if (timeout.count() <= 0)
    return "smtp timeout must be positive";
  if (max_connections == 0)
    return "smtp max_connections must be at least 1";
  return {};
}

smtp_verdict classify_smtp(const outbound_answer& answer) {
  using outcome = call_outcome;
  const auto code = static_cast<CURLcode>(answer.code);
  if (answer.stopped)
    return {{outcome::timeout, "adapter stopped", std::nullopt}, false};
  if (code == CURLE_OK)
    return {{outcome::success, {}, std::nullopt}, false};
  switch (code) {
  case CURLE_LOGIN_DENIED:
    return {{outcome::retryable, curl_detail("SMTP AUTH refused", answer), std::nullopt}, true};
  case CURLE_USE_SSL_FAILED:
    return {
        {outcome::retryable, curl_detail("TLS required but not available", answer), std::nullopt},
        true};
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_CERTPROBLEM:
    return {{outcome::retryable, curl_detail("server certificate refused", answer), std::nullopt},
            true};
  default:
    break;
  }
  if (reply_class(answer.status) == 4)
    return {{outcome::retryable, reply_detail(answer), std::nullopt}, false};
  if (reply_class(answer.status) == 5)
    return {{outcome::permanent, reply_detail(answer), std::nullopt}, false};
  if (answer.status == data_go_ahead)
    return {{outcome::timeout, curl_detail("no reply to the message, outcome unknown", answer),
             std::nullopt},
            false};
  if (code == CURLE_URL_MALFORMAT || code == CURLE_UNSUPPORTED_PROTOCOL)
    return {{outcome::permanent, curl_detail("unusable SMTP URL", answer), std::nullopt}, true};
  return {{outcome::retryable, curl_detail("not delivered", answer), std::nullopt}, false};
}

std::string html_of_text(const std::string& text) {
  std::string html;
  html.reserve(text.size() + text.size() / 8);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (c) {
    case '&':
      html += "&amp;";
      break;
    case '<':
      html += "&lt;";
      break;
    case '>':
      html += "&gt;";
      break;
    case '"':
      html += "&quot;";
      break;
    case '\'':
      html += "&#39;";
      break;
    case '\r':
      if (i + 1 < text.size() && text[i + 1] == '\n')
        break; // the LF that follows makes the break
      html += "<br>\n";
      break;
    case '\n':
      html += "<br>\n";
      break;
    default:
      html.push_back(c);
    }
  }
  return html;
}

/// Callbacks hold this, never the adapter: the client answers calls in flight as stopped while
/// the adapter goes.
struct smtp_provider::context {
  std::string channel;
  smtp_config config;
  std::string message_id_domain; ///< the From address's domain: Message-IDs end in it
  std::shared_ptr<herald::metrics> counters;
};

smtp_provider::smtp_provider(std::string channel, smtp_config config,
                             std::shared_ptr<metrics> metrics)
    : context_([&] {
        if (auto problem = config.validate(); !problem.empty())
          throw std::invalid_argument(problem);
        auto domain = config.from.substr(config.from.rfind('@') + 1);
        return std::make_shared<const context>(
            context{std::move(channel), std::move(config), std::move(domain), std::move(metrics)});
      }()),
      client_(http_client_options{context_->config.max_connections, 1024, "herald-smtp/1"}) {}

void smtp_provider::send(provider_request request, provider_callback done) {
  if (!done)
    return;
  const auto& config = context_->config;
  email_message message;
  message.from = {config.from, config.from_name};
  message.to = request.recipient;
  message.subject = request.title;
  message.text_body = request.body;
  if (config.html)
    message.html_body = html_of_text(request.body);
  message.message_id = request.provider_request_id;
  message.date_unix = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::string problem;
  auto text = build_mime_message(message, &problem);
  if (!text) // a recipient that is no address, a title with a line break: no resend fixes it
    return done({call_outcome::permanent,
                 domain::mask_free_text("message cannot be sent: " + problem), std::nullopt});
  outbound_call call;
  call.url = config.url;
  call.body = std::move(*text);
  call.timeout = config.timeout;
  if (!config.username.empty())
    call.basic_auth = config.username + ":" + config.password;
  call.smtp = smtp_envelope{config.from, {request.recipient}, config.tls_required()};
  auto message_id = request.provider_request_id + "@" + context_->message_id_domain;
  client_.call(std::move(call), [context = context_, message_id = std::move(message_id),
                                 done = std::move(done)](outbound_answer answer) {
    auto verdict = classify_smtp(answer);
    if (verdict.config_error && context->counters)
      context->counters->provider_config_error(context->channel);
    if (verdict.result.outcome == call_outcome::success)
      verdict.result.detail = message_id;
    done(std::move(verdict.result));
  });
}

} // namespace herald::providers
