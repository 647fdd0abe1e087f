#include "api/routes.hpp"

#include "api/embedded_files.hpp"
#include "api/template_codec.hpp"
#include "api/trace_context.hpp"
#include "domain/masking.hpp"
#include "domain/user_validation.hpp"
#include "domain/utf8.hpp"
#include "domain/validation.hpp"
#include "observability/log.hpp"
#include "providers/webhook_signature.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

namespace herald::api {
namespace http = boost::beast::http;

namespace {

constexpr std::string_view messages_path = "/v1/messages";
constexpr std::string_view message_prefix = "/v1/messages/";
constexpr std::string_view dead_letters_path = "/v1/dead-letters";
constexpr std::string_view replay_suffix = "/replay";
constexpr std::string_view receipts_prefix = "/v1/receipts/";
constexpr std::string_view stats_path = "/v1/stats";
constexpr std::string_view cluster_path = "/v1/cluster";
constexpr std::string_view users_prefix = "/v1/users/";
constexpr std::string_view inbox_suffix = "/inbox";
constexpr std::string_view dnd_suffix = "/dnd";
constexpr std::string_view inbox_prefix = "/v1/inbox/";
constexpr std::string_view read_suffix = "/read";
constexpr std::string_view clicked_suffix = "/clicked";
constexpr std::string_view templates_prefix = "/v1/templates/";
constexpr std::string_view preview_suffix = "/preview";
constexpr std::string_view channels_path = "/v1/channels";
constexpr std::string_view openapi_path = "/v1/openapi.yaml";
constexpr std::string_view console_path = "/console";
constexpr std::string_view console_prefix = "/console/";
constexpr std::string_view metrics_path = "/metrics";
/// What the log shows as the path of a request no route matches: its path may hold anything.
constexpr std::string_view unmatched_in_log = "(unmatched)";
constexpr std::size_t default_inbox_page = 20;
constexpr std::size_t max_inbox_page = 100;
constexpr std::size_t max_dead_letter_page = 1000;

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

/// Message ids are derived from keys; anything else cannot name a message.
bool is_plausible_message_id(std::string_view id) {
  if (id.empty() || id.size() > 128)
    return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == ':';
  });
}

/// A status a service or validation error may carry; anything else is a bug, answered as 503.
http::status error_status(int status) {
  if (status < 400 || status > 599)
    return http::status::service_unavailable;
  return static_cast<http::status>(status);
}

} // namespace

/// One request's way back: builds the response, adds the trace id, logs the outcome, counts it
/// by route and status and, for a submission, records the ingest latency. Sends at most once.
class exchange {
public:
  /// `route` names the resource in herald_http_responses_total and `path_template` is the path
  /// logged (e.g. /v1/users/{user_id}, so no id reaches the log): both string literals.
  exchange(respond_fn respond, std::string trace_id, std::string method,
           std::string_view path_template, metrics& metrics, std::string_view route, bool ingest)
      : respond_(std::move(respond)), trace_id_(std::move(trace_id)), method_(std::move(method)),
        path_template_(path_template), metrics_(metrics), route_(route), ingest_(ingest),
        started_(std::chrono::steady_clock::now()) {}

  const std::string& trace_id() const { return trace_id_; }

  /// `level` overrides the log level the status would choose (e.g. an expected 503).
  void json(http::status status, std::string body, std::optional<log::level> level = {}) {
    text(status, "application/json", std::move(body), level);
  }

  void text(http::status status, std::string_view content_type, std::string body,
            std::optional<log::level> level = {}) {
    http_response response{status, 11};
    response.set(http::field::content_type, content_type);
    // Some bodies echo what a caller sent (WeChat's echostr): never to be sniffed as HTML.
    response.set("X-Content-Type-Options", "nosniff");
    response.body() = std::move(body);
    send(std::move(response), {}, true, level);
  }

  void error(http::status status, std::string_view code, std::string_view message,
             std::string_view field = {}) {
    error(status, domain::validation_error{static_cast<int>(status), std::string(code),
                                           std::string(message), std::string(field)});
  }

  /// The error body of `failure` (its position too, when it has one) with `status`.
  void error(http::status status, const domain::validation_error& failure) {
    http_response response{status, 11};
    response.set(http::field::content_type, "application/json");
    if (status == http::status::service_unavailable)
      response.set(http::field::retry_after, "1");
    response.body() = encode_error(failure);
    send(std::move(response), failure.code);
  }

  void error(const domain::validation_error& failure) {
    auto named = failure;
    if (named.code.empty())
      named.code = "invalid_request";
    error(error_status(failure.status), named);
  }

  /// 401 with the challenge RFC 6750 asks for.
  void unauthorized() {
    http_response response{http::status::unauthorized, 11};
    response.set(http::field::content_type, "application/json");
    response.set(http::field::www_authenticate, "Bearer");
    response.body() = encode_error("unauthorized", "a valid API key is required: "
                                                   "Authorization: Bearer <key>");
    send(std::move(response), "unauthorized");
  }

  void method_not_allowed(std::string_view allow) {
    http_response response{http::status::method_not_allowed, 11};
    response.set(http::field::content_type, "application/json");
    response.set(http::field::allow, allow);
    response.body() = encode_error(
        "method_not_allowed", method_ + " is not allowed here; allowed: " + std::string(allow));
    send(std::move(response), "method_not_allowed");
  }

  /// The only 500: something threw that should not have.
  void internal_error(std::string_view what) noexcept {
    try {
      log::error("http_internal_error", {{"trace_id", trace_id_},
                                         {"method", method_},
                                         {"path", std::string(path_template_)},
                                         {"error", domain::mask_free_text(what)}});
      http_response response{http::status::internal_server_error, 11};
      response.set(http::field::content_type, "application/json");
      response.body() = encode_error("internal_error", "internal error");
      send(std::move(response), "internal_error", false);
    } catch (...) {
      // Nothing left to try; the connection closes when the responder is dropped.
    }
  }

  void send(http_response response, std::string_view code = {}, bool log_outcome = true,
            std::optional<log::level> level = {}) {
    if (sent_.exchange(true))
      return;
    response.set("X-Trace-Id", trace_id_);
    auto status = response.result_int();
    auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_);
    metrics_.http_response(route_, status);
    if (ingest_)
      metrics_.ingest_latency(elapsed.count());
    if (log_outcome) {
      auto micros = std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
      std::initializer_list<log::field> fields{{"trace_id", trace_id_},
                                               {"method", method_},
                                               {"path", std::string(path_template_)},
                                               {"status", std::to_string(status)},
                                               {"code", std::string(code)},
                                               {"duration_us", std::to_string(micros)}};
      if (!level)
        level = status >= 500   ? log::level::warn
                : status >= 400 ? log::level::info
                                : log::level::debug;
      log::write(*level, "http_request", fields);
    }
    respond_(std::move(response));
  }

private:
  respond_fn respond_;
  std::string trace_id_;
  std::string method_;
  std::string_view path_template_;
  metrics& metrics_;
  std::string_view route_;
  bool ingest_;
  std::chrono::steady_clock::time_point started_;
  std::atomic<bool> sent_{false};
};

using exchange_ptr = std::shared_ptr<exchange>;

namespace {

/// Wraps a service callback so nothing it throws escapes into a service thread: an
/// exception becomes the exchange's one 500.
template <class Body> auto guarded(exchange_ptr ex, Body body) {
  return [ex, body = std::move(body)](auto result) {
    try {
      body(ex, result);
    } catch (const std::exception& e) {
      ex->internal_error(e.what());
    } catch (...) {
      ex->internal_error("unknown exception");
    }
  };
}

/// The value of `key` in a query string ("a=1&b=2"); ids and channel names need no decoding,
/// so anything percent-encoded is refused by the callers' own checks.
std::optional<std::string_view> query_value(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    auto pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    auto eq = pair.find('=');
    if (pair.substr(0, eq) == key)
      return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
  }
  return std::nullopt;
}

/// `text` with %XX escapes decoded ("+" stays: RFC 3339 offsets use it); nullopt when an
/// escape is malformed. Times arrive encoded from URLSearchParams and urlencode ("%3A").
std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    unsigned value = 0;
    if (i + 2 >= text.size())
      return std::nullopt;
    auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
    if (ec != std::errc{} || end != text.data() + i + 3)
      return std::nullopt;
    out.push_back(static_cast<char>(value));
    i += 2;
  }
  return out;
}

/// A user id or tenant as POST /v1/messages accepts them (with the default limits): 1-128 bytes
/// of UTF-8 without control characters.
bool is_acceptable_id(std::string_view id) {
  return !id.empty() && id.size() <= 128 && domain::is_valid_utf8(id) &&
         !domain::has_control_chars(id);
}

/// A query value in form encoding, as URLSearchParams, urlencode and Java's URLEncoder send it:
/// "+" is a space, then %XX escapes (so "%2B" is a plus).
std::optional<std::string> form_decoded(std::string_view text) {
  std::string spaced(text);
  std::replace(spaced.begin(), spaced.end(), '+', ' ');
  return percent_decoded(spaced);
}

/// The `400` for a query string whose keys a proxy could read otherwise than herald, if it has
/// one: a key given twice (a proxy may act on one value, herald would on another, so neither
/// is chosen) or an escaped key (`te%6Eant` is `tenant` to a proxy that decodes keys; herald
/// matches keys as sent). The key is named as sent unless it is not UTF-8, which a JSON answer
/// cannot carry.
std::optional<domain::validation_error> query_keys_error(std::string_view query) {
  std::unordered_set<std::string_view> seen; // a target of 16 KiB may hold thousands of keys
  while (!query.empty()) {
    auto pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    if (pair.empty()) // "a=1&&b=2": nothing named, as URLSearchParams reads it
      continue;
    auto key = pair.substr(0, pair.find('='));
    if (key.find_first_of("%+") != std::string_view::npos)
      return domain::validation_error{400, "invalid_request",
                                      "query parameter names are not escaped (no % or +)", ""};
    if (seen.insert(key).second)
      continue;
    if (!domain::is_valid_utf8(key))
      return domain::validation_error{400, "invalid_request",
                                      "a query parameter (its name not UTF-8) is given twice", ""};
    return domain::validation_error{400, "invalid_request",
                                    "query parameter '" + std::string(key) + "' given twice",
                                    std::string(key)};
  }
  return std::nullopt;
}

/// The tenant a request names: a key's tenant; without keys (auth mode none) the `tenant` query
/// parameter's, or nullopt when it names none. A parameter naming another tenant than the key's
/// is refused. `query` without its fragment.
std::variant<std::optional<std::string>, domain::validation_error>
named_tenant(std::string_view query, const caller& who) {
  if (auto refused = query_keys_error(query))
    return *refused;
  std::optional<std::string> tenant;
  if (auto text = query_value(query, "tenant")) {
    tenant = form_decoded(*text);
    if (!tenant || !is_acceptable_id(*tenant))
      return domain::validation_error{
          400, "invalid_request",
          "tenant must be 1-128 bytes of UTF-8 without control characters, form-encoded", "tenant"};
  }
  if (!who.tenant.empty() && tenant && *tenant != who.tenant)
    return domain::validation_error{403, "forbidden", "tenant is not the tenant of this API key",
                                    "tenant"};
  if (!who.tenant.empty())
    return std::optional<std::string>{who.tenant};
  return tenant;
}

/// The tenant a tenant-scoped resource request (users, templates) acts for: named_tenant(),
/// "default" when none is named.
std::variant<std::string, domain::validation_error> tenant_of(std::string_view query,
                                                              const caller& who) {
  auto named = named_tenant(query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&named))
    return *failure;
  return std::get<std::optional<std::string>>(named).value_or("default");
}

std::string status_body(std::string_view status) {
  return std::string(R"({"status":")") + std::string(status) + "\"}";
}

/// A 500 built without anything that could throw again.
http_response bare_internal_error() {
  http_response response{http::status::internal_server_error, 11};
  response.set(http::field::content_type, "application/json");
  response.body() = R"({"error":{"code":"internal_error","message":"internal error"}})";
  return response;
}

} // namespace

bool is_json_content_type(std::string_view content_type) {
  auto media_type = trim(content_type.substr(0, content_type.find(';')));
  return iequals(media_type, "application/json");
}

routes::routes(service& service, metrics& metrics, const domain::clock& clock,
               const authenticator& auth, routes_options options)
    : service_(service), metrics_(metrics), clock_(clock), auth_(auth), options_(options) {}

request_handler routes::handler() {
  return [this](http_request request, respond_fn respond) {
    handle(std::move(request), std::move(respond));
  };
}

namespace {

/// A request target without its query and fragment.
std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find_first_of("?#"));
}

/// A request target's query without the fragment: clients send none (RFC 9112's targets have
/// none), but one that comes is not read as the query, nor as part of it.
std::string_view query_of(std::string_view target) {
  target = target.substr(0, target.find('#'));
  const auto mark = target.find('?');
  return mark == std::string_view::npos ? std::string_view{} : target.substr(mark + 1);
}

exchange_ptr start_exchange(const http_request& request, respond_fn respond,
                            std::string_view path_template, metrics& metrics,
                            std::string_view route, bool ingest = false) {
  return std::make_shared<exchange>(
      std::move(respond), choose_trace_id(request["traceparent"], request["X-Request-Id"]),
      std::string(request.method_string()), path_template, metrics, route, ingest);
}

} // namespace

request_handler routes::metrics_handler() {
  return [this](http_request request, respond_fn respond) {
    const bool is_metrics = path_of(request.target()) == metrics_path;
    auto ex = start_exchange(request, std::move(respond),
                             is_metrics ? metrics_path : unmatched_in_log, metrics_, "metrics");
    if (!is_metrics)
      return ex->error(http::status::not_found, "not_found", "no such resource");
    if (request.method() != http::verb::get)
      return ex->method_not_allowed("GET");
    try {
      serve_metrics(ex);
    } catch (const std::exception& e) {
      ex->internal_error(e.what());
    }
  };
}

namespace {

/// The resources of API v1, each with the one method it answers.
enum class route_kind {
  submit_message,
  find_message_by_key,
  submit_batch,
  get_message,
  list_dead_letters,
  replay_dead_letter,
  record_receipt,
  stats,
  cluster,
  channels,
  list_inbox,
  get_user,
  replace_user,
  patch_user,
  set_dnd,
  lift_dnd,
  mark_read,
  mark_clicked,
  get_template,
  put_template,
  delete_template,
  preview_template,
  embedded_file,
  healthz,
  readyz,
  metrics
};

/// A route's label in herald_http_responses_total.
std::string_view route_name(route_kind kind) {
  switch (kind) {
  case route_kind::submit_message:
    return "submit_message";
  case route_kind::find_message_by_key:
    return "find_message_by_key";
  case route_kind::submit_batch:
    return "submit_batch";
  case route_kind::get_message:
    return "get_message";
  case route_kind::list_dead_letters:
    return "list_dead_letters";
  case route_kind::replay_dead_letter:
    return "replay_dead_letter";
  case route_kind::record_receipt:
    return "record_receipt";
  case route_kind::stats:
    return "stats";
  case route_kind::cluster:
    return "cluster";
  case route_kind::channels:
    return "channels";
  case route_kind::list_inbox:
    return "list_inbox";
  case route_kind::get_user:
    return "get_user";
  case route_kind::replace_user:
    return "replace_user";
  case route_kind::patch_user:
    return "patch_user";
  case route_kind::set_dnd:
    return "set_dnd";
  case route_kind::lift_dnd:
    return "lift_dnd";
  case route_kind::mark_read:
    return "mark_read";
  case route_kind::mark_clicked:
    return "mark_clicked";
  case route_kind::get_template:
    return "get_template";
  case route_kind::put_template:
    return "put_template";
  case route_kind::delete_template:
    return "delete_template";
  case route_kind::preview_template:
    return "preview_template";
  case route_kind::embedded_file:
    return "embedded_file";
  case route_kind::healthz:
    return "healthz";
  case route_kind::readyz:
    return "readyz";
  case route_kind::metrics:
    return "metrics";
  }
  return "unmatched";
}

struct matched_route {
  route_kind kind;
  http::verb method;
  std::string_view path_template;     ///< what is logged for the path: ids never reach a log
  std::string_view id;                ///< the {id} the path names, for routes that have one
  std::optional<domain::scope> needs; ///< the scope a caller must hold; none: open
  std::string_view allow{};           ///< the Allow header of a path with several methods
};

/// One method of a path that answers several.
struct method_route {
  http::verb method;
  route_kind kind;
  domain::scope needs;
};

/// The route of `method` among those of one path; the first when none matches (answered 405
/// with `allow`, which names them all).
matched_route choose_method(http::verb method, std::string_view path_template, std::string_view id,
                            std::initializer_list<method_route> choices, std::string_view allow) {
  const method_route* chosen = choices.begin();
  for (const auto& choice : choices)
    if (choice.method == method)
      chosen = &choice;
  return matched_route{chosen->kind, chosen->method, path_template, id, chosen->needs, allow};
}

/// The one path segment between `prefix` and `suffix`; nullopt when `path` is not of that form.
std::optional<std::string_view> segment_between(std::string_view path, std::string_view prefix,
                                                std::string_view suffix) {
  if (path.size() <= prefix.size() + suffix.size() || path.substr(0, prefix.size()) != prefix ||
      path.substr(path.size() - suffix.size()) != suffix)
    return std::nullopt;
  auto segment = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
  if (segment.find('/') != std::string_view::npos)
    return std::nullopt;
  return segment;
}

std::optional<matched_route> match_route(std::string_view path, http::verb method) {
  if (path == messages_path)
    return choose_method(method, messages_path, {},
                         {{http::verb::post, route_kind::submit_message, domain::scope::submit},
                          {http::verb::get, route_kind::find_message_by_key, domain::scope::read}},
                         "GET, POST");
  // Before the look-up: "batch" can never be a message id (those are msg_ + hex).
  if (path == batch_path)
    return matched_route{
        route_kind::submit_batch, http::verb::post, batch_path, {}, domain::scope::submit};
  if (path.substr(0, message_prefix.size()) == message_prefix)
    return matched_route{route_kind::get_message, http::verb::get, "/v1/messages/{message_id}",
                         path.substr(message_prefix.size()), domain::scope::read};
  if (path == dead_letters_path)
    return matched_route{
        route_kind::list_dead_letters, http::verb::get, dead_letters_path, {}, domain::scope::read};
  if (path.size() > dead_letters_path.size() + replay_suffix.size() &&
      path.substr(0, dead_letters_path.size()) == dead_letters_path &&
      path[dead_letters_path.size()] == '/' &&
      path.substr(path.size() - replay_suffix.size()) == replay_suffix)
    return matched_route{
        route_kind::replay_dead_letter, http::verb::post, "/v1/dead-letters/{task_id}/replay",
        path.substr(dead_letters_path.size() + 1,
                    path.size() - dead_letters_path.size() - 1 - replay_suffix.size()),
        domain::scope::admin};
  // A provider's callback: no API key, the channel's signature instead (checked by the route).
  if (path.substr(0, receipts_prefix.size()) == receipts_prefix)
    return matched_route{route_kind::record_receipt, http::verb::post, "/v1/receipts/{channel}",
                         path.substr(receipts_prefix.size()), std::nullopt};
  if (path == stats_path)
    return matched_route{route_kind::stats, http::verb::get, stats_path, {}, domain::scope::read};
  // Node-wide, not one tenant's: the cluster's members, and every tenant's provider calls and
  // circuits (the `/metrics` data, which `metrics_listen` may keep off the API listener).
  if (path == cluster_path)
    return matched_route{
        route_kind::cluster, http::verb::get, cluster_path, {}, domain::scope::ops};
  if (path == channels_path)
    return matched_route{
        route_kind::channels, http::verb::get, channels_path, {}, domain::scope::ops};
  // The API's description and the console's files are public: they hold no tenant's data, and
  // the console asks for a key before it reads any.
  if (path == openapi_path)
    return matched_route{route_kind::embedded_file, http::verb::get, openapi_path, "openapi.yaml",
                         std::nullopt};
  if (path == console_path || path == console_prefix)
    return matched_route{route_kind::embedded_file, http::verb::get, console_path,
                         "console/index.html", std::nullopt};
  if (segment_between(path, console_prefix, ""))
    return matched_route{route_kind::embedded_file, http::verb::get, "/console/{asset}",
                         path.substr(1), std::nullopt};
  // The inbox: reading it and recording what its user did both need `read` (docs/api.md).
  if (auto user = segment_between(path, users_prefix, inbox_suffix))
    return matched_route{route_kind::list_inbox, http::verb::get, "/v1/users/{user_id}/inbox",
                         *user, domain::scope::read};
  // A user's profile is read with `read`, and changed with `submit`: the scope of the
  // application backend that sends the user messages.
  if (auto user = segment_between(path, users_prefix, dnd_suffix))
    return choose_method(method, "/v1/users/{user_id}/dnd", *user,
                         {{http::verb::put, route_kind::set_dnd, domain::scope::submit},
                          {http::verb::delete_, route_kind::lift_dnd, domain::scope::submit}},
                         "PUT, DELETE");
  if (auto user = segment_between(path, users_prefix, ""))
    return choose_method(method, "/v1/users/{user_id}", *user,
                         {{http::verb::get, route_kind::get_user, domain::scope::read},
                          {http::verb::put, route_kind::replace_user, domain::scope::submit},
                          {http::verb::patch, route_kind::patch_user, domain::scope::submit}},
                         "GET, PUT, PATCH");
  // Templates are read (and previewed) with `read`, and changed with `admin`: a template's
  // text reaches every user the tenant messages.
  if (auto code = segment_between(path, templates_prefix, preview_suffix))
    return matched_route{route_kind::preview_template, http::verb::post,
                         "/v1/templates/{code}/preview", *code, domain::scope::read};
  if (auto code = segment_between(path, templates_prefix, ""))
    return choose_method(method, "/v1/templates/{code}", *code,
                         {{http::verb::get, route_kind::get_template, domain::scope::read},
                          {http::verb::put, route_kind::put_template, domain::scope::admin},
                          {http::verb::delete_, route_kind::delete_template, domain::scope::admin}},
                         "GET, PUT, DELETE");
  if (auto task = segment_between(path, inbox_prefix, read_suffix))
    return matched_route{route_kind::mark_read, http::verb::post, "/v1/inbox/{task_id}/read", *task,
                         domain::scope::read};
  if (auto task = segment_between(path, inbox_prefix, clicked_suffix))
    return matched_route{route_kind::mark_clicked, http::verb::post, "/v1/inbox/{task_id}/clicked",
                         *task, domain::scope::read};
  if (path == "/healthz")
    return matched_route{route_kind::healthz, http::verb::get, "/healthz", {}, std::nullopt};
  if (path == "/readyz")
    return matched_route{route_kind::readyz, http::verb::get, "/readyz", {}, std::nullopt};
  if (path == "/metrics")
    return matched_route{route_kind::metrics, http::verb::get, metrics_path, {}, std::nullopt};
  return std::nullopt;
}

/// A request's route and caller, once its header passed every check made before a handler.
struct admission {
  matched_route route;
  std::optional<caller> who; ///< for routes that need a key
};

/// What needs only the header: the route, its method, the caller and the caller's scope. The
/// admission, or nullopt when `ex` (started here in either case) has answered the request.
std::optional<admission> admit(const http_request& request, const respond_fn& respond,
                               metrics& metrics, const authenticator& auth,
                               const routes_options& options, exchange_ptr& ex) {
  auto route = match_route(path_of(request.target()), request.method());
  const bool ingest =
      route &&
      (route->kind == route_kind::submit_message || route->kind == route_kind::submit_batch) &&
      request.method() == http::verb::post;
  ex = start_exchange(request, respond, route ? route->path_template : unmatched_in_log, metrics,
                      route ? route_name(route->kind) : "unmatched", ingest);
  if (!route || (route->kind == route_kind::metrics && !options.metrics_on_api_listener)) {
    ex->error(http::status::not_found, "not_found", "no such resource");
    return std::nullopt;
  }
  // Providers' own callbacks also come as GET (WeChat's URL handshake).
  const bool takes_callback_get = route->kind == route_kind::record_receipt &&
                                  options.callback_adapters.count(std::string(route->id)) != 0;
  const bool callback_get = takes_callback_get && request.method() == http::verb::get;
  if (request.method() != route->method && !callback_get) {
    ex->method_not_allowed(!route->allow.empty()               ? route->allow
                           : takes_callback_get                ? "GET, POST"
                           : route->method == http::verb::post ? "POST"
                                                               : "GET");
    return std::nullopt;
  }
  std::optional<caller> who;
  if (route->needs) {
    who = auth.authenticate(request[http::field::authorization]);
    if (!who) {
      ex->unauthorized();
      return std::nullopt;
    }
    if (!who->scopes.contains(*route->needs)) {
      ex->error(http::status::forbidden, "forbidden",
                "this key lacks the '" + std::string(domain::to_string(*route->needs)) + "' scope");
      return std::nullopt;
    }
  }
  return admission{*route, std::move(who)};
}

} // namespace

header_check routes::check_header() {
  return [this](const http_request& request) {
    header_verdict verdict;
    exchange_ptr ex;
    auto admitted = admit(
        request, [&verdict](http_response response) { verdict.refusal = std::move(response); },
        metrics_, auth_, options_, ex);
    verdict.authenticated = admitted && admitted->who;
    return verdict;
  };
}

void routes::handle(http_request request, respond_fn respond) {
  exchange_ptr ex;
  try {
    auto admitted = admit(request, respond, metrics_, auth_, options_, ex);
    if (!admitted)
      return;
    const auto& route = admitted->route;
    const auto& who = admitted->who;
    const auto query = query_of(request.target());
    switch (route.kind) {
    case route_kind::submit_message:
      return submit_message(request, *who, ex);
    case route_kind::submit_batch:
      return submit_batch(request, *who, ex);
    case route_kind::get_message:
      return get_message(route.id, *who, ex);
    case route_kind::find_message_by_key:
      return find_message_by_key(query, *who, ex);
    case route_kind::list_dead_letters:
      return list_dead_letters(query, *who, ex);
    case route_kind::replay_dead_letter:
      return replay_dead_letter(route.id, *who, ex);
    case route_kind::record_receipt:
      return record_receipt(route.id, request, ex);
    case route_kind::stats:
      return stats(query, *who, ex);
    case route_kind::cluster:
      return cluster(ex);
    case route_kind::channels:
      return channels(ex);
    case route_kind::embedded_file:
      return serve_embedded(route.id, ex);
    case route_kind::list_inbox:
      return list_inbox(route.id, query, *who, ex);
    case route_kind::get_user:
      return get_user(route.id, query, *who, ex);
    case route_kind::replace_user:
      return update_profile(route.id, query, profile_change::replace, request, *who, ex);
    case route_kind::patch_user:
      return update_profile(route.id, query, profile_change::merge, request, *who, ex);
    case route_kind::set_dnd:
      return set_dnd(route.id, query, request, *who, ex);
    case route_kind::lift_dnd:
      return lift_dnd(route.id, query, *who, ex);
    case route_kind::mark_read:
      return mark_inbox_item(route.id, domain::receipt_status::read, *who, ex);
    case route_kind::mark_clicked:
      return mark_inbox_item(route.id, domain::receipt_status::clicked, *who, ex);
    case route_kind::get_template:
      return get_template(route.id, query, *who, ex);
    case route_kind::put_template:
      return put_template(route.id, query, request, *who, ex);
    case route_kind::delete_template:
      return delete_template(route.id, query, *who, ex);
    case route_kind::preview_template:
      return preview_template(route.id, query, request, *who, ex);
    case route_kind::healthz:
      return ex->json(http::status::ok, status_body("ok"));
    case route_kind::readyz:
      return readyz(ex);
    case route_kind::metrics:
      return serve_metrics(ex);
    }
  } catch (const std::exception& e) {
    if (ex)
      return ex->internal_error(e.what());
    log::error("http_internal_error", {{"error", domain::mask_free_text(e.what())}});
    respond(bare_internal_error());
  } catch (...) {
    if (ex)
      return ex->internal_error("unknown exception");
    log::error("http_internal_error", {{"error", "unknown exception"}});
    respond(bare_internal_error());
  }
}

namespace {

/// Plans one submitted event for the caller: a key's tenant is the event's tenant (naming
/// another is 403), then the business rules.
std::variant<domain::message_plan, domain::validation_error>
plan_for_caller(domain::message_request& message, const caller& who, const service& service,
                domain::timestamp now, const std::string& trace_id) {
  if (!who.tenant.empty()) { // the key decides the tenant
    if (message.tenant_named && message.tenant != who.tenant)
      return domain::validation_error{403, "forbidden", "tenant is not the tenant of this API key",
                                      "tenant"};
    message.tenant = who.tenant;
  }
  const auto stored = service.stored_templates();
  return domain::plan_message(message, service.rules(), service.id_secret(), now, trace_id,
                              stored.get());
}

bool refuse_unless_json(const http_request& request, const exchange_ptr& ex) {
  if (is_json_content_type(request[http::field::content_type]))
    return false;
  ex->error(http::status::unsupported_media_type, "unsupported_media_type",
            "Content-Type must be application/json");
  return true;
}

} // namespace

void routes::submit_message(const http_request& request, const caller& who,
                            const exchange_ptr& ex) {
  if (refuse_unless_json(request, ex))
    return;
  auto decoded = decode_message_request(request.body(), options_.max_json_depth);
  if (auto* failure = std::get_if<domain::validation_error>(&decoded))
    return ex->error(*failure);
  auto planned = plan_for_caller(std::get<domain::message_request>(decoded), who, service_,
                                 clock_.now(), ex->trace_id());
  if (auto* failure = std::get_if<domain::validation_error>(&planned))
    return ex->error(*failure);
  metrics_.message_received();
  service_.submit(std::move(std::get<domain::message_plan>(planned)),
                  guarded(ex, [](const exchange_ptr& exchange,
                                 std::variant<persistence::claim_result, service_error>& result) {
                    if (auto* failure = std::get_if<service_error>(&result))
                      return exchange->error(*failure);
                    const auto& claim = std::get<persistence::claim_result>(result);
                    exchange->json(static_cast<http::status>(claim_status(claim)),
                                   encode_claim_result(claim, exchange->trace_id()));
                  }));
}

void routes::submit_batch(const http_request& request, const caller& who, const exchange_ptr& ex) {
  if (refuse_unless_json(request, ex))
    return;
  auto decoded = decode_batch_request(request.body(), options_.max_json_depth);
  if (auto* failure = std::get_if<domain::validation_error>(&decoded))
    return ex->error(*failure);
  auto& items = std::get<std::vector<batch_item>>(decoded);
  // Each item is planned as a single POST would be; a refused one only answers its error.
  std::vector<batch_answer> answers(items.size());
  std::vector<domain::message_plan> plans;
  std::vector<std::size_t> slots; // the item each plan came from
  const auto now = clock_.now();
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (auto* failure = std::get_if<domain::validation_error>(&items[i])) {
      answers[i] = std::move(*failure);
      continue;
    }
    auto planned = plan_for_caller(std::get<domain::message_request>(items[i]), who, service_, now,
                                   ex->trace_id());
    if (auto* failure = std::get_if<domain::validation_error>(&planned)) {
      answers[i] = batch_item_error(i, std::move(*failure));
      continue;
    }
    plans.push_back(std::move(std::get<domain::message_plan>(planned)));
    slots.push_back(i);
  }
  auto answer = [](const exchange_ptr& exchange, const std::vector<batch_answer>& all) {
    http_response response{http::status::ok, 11};
    response.set(http::field::content_type, "application/json");
    // Items the database could not take may be sent again as they are.
    if (std::any_of(all.begin(), all.end(), [](const batch_answer& a) {
          auto* failure = std::get_if<domain::validation_error>(&a);
          return failure != nullptr && failure->status == 503;
        }))
      response.set(http::field::retry_after, "1");
    response.body() = encode_batch_answers(all, exchange->trace_id());
    exchange->send(std::move(response));
  };
  if (plans.empty())
    return answer(ex, answers);
  metrics_.message_received(plans.size());
  service_.submit_batch(
      std::move(plans),
      guarded(ex, [answers = std::move(answers), slots = std::move(slots), answer](
                      const exchange_ptr& exchange,
                      std::variant<std::vector<persistence::claim_result>, service_error>& result) {
        auto all = answers;
        if (auto* failure = std::get_if<service_error>(&result)) {
          // Over capacity refuses the request as a whole; a failed or late commit answers
          // each item that was to be written with 503 (a late one may still commit: sending
          // the items again is safe).
          if (failure->code == "overloaded")
            return exchange->error(*failure);
          for (auto slot : slots)
            all[slot] = *failure;
          return answer(exchange, all);
        }
        auto& claims = std::get<std::vector<persistence::claim_result>>(result);
        if (claims.size() != slots.size())
          throw std::logic_error("batch claim answered " + std::to_string(claims.size()) +
                                 " results for " + std::to_string(slots.size()) + " messages");
        for (std::size_t k = 0; k < slots.size(); ++k)
          all[slots[k]] = std::move(claims[k]);
        answer(exchange, all);
      }));
}

void routes::get_message(std::string_view id, const caller& who, const exchange_ptr& ex) {
  if (!is_plausible_message_id(id))
    return ex->error(http::status::not_found, "not_found", "no such message");
  answer_message(who, std::string(id), ex);
}

void routes::find_message_by_key(std::string_view query, const caller& who,
                                 const exchange_ptr& ex) {
  auto tenant = tenant_of(query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&tenant))
    return ex->error(*failure);
  domain::message_key key{std::move(std::get<std::string>(tenant)), {}, {}, {}};
  const std::pair<std::string_view, std::string*> fields[] = {
      {"biz_type", &key.biz_type}, {"biz_id", &key.biz_id}, {"user_id", &key.user_id}};
  for (auto [name, field] : fields) {
    auto text = query_value(query, name);
    if (!text || text->empty())
      return ex->error(http::status::bad_request, "invalid_request",
                       "query parameter '" + std::string(name) +
                           "' is required (or find the message by its id)",
                       name);
    auto decoded = form_decoded(*text);
    if (!decoded)
      return ex->error(http::status::bad_request, "invalid_request",
                       "query parameter '" + std::string(name) + "' has a malformed %-escape",
                       name);
    *field = std::move(*decoded);
  }
  answer_message(who, domain::message_id_for(key, service_.id_secret()), ex);
}

void routes::answer_message(const caller& who, std::string message_id, const exchange_ptr& ex) {
  service_.find_message(
      who.tenant, std::move(message_id),
      guarded(ex,
              [](const exchange_ptr& exchange,
                 std::variant<std::optional<persistence::message_view>, service_error>& result) {
                if (auto* failure = std::get_if<service_error>(&result))
                  return exchange->error(*failure);
                const auto& view = std::get<std::optional<persistence::message_view>>(result);
                if (!view)
                  return exchange->error(http::status::not_found, "not_found", "no such message");
                exchange->json(http::status::ok, encode_message_view(*view));
              }));
}

void routes::list_dead_letters(std::string_view query, const caller& who, const exchange_ptr& ex) {
  // One tenant's dead letters, or (without keys and without `tenant=`) every tenant's.
  auto tenant = named_tenant(query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&tenant))
    return ex->error(*failure);
  auto channel = query_value(query, "channel").value_or("");
  auto after = query_value(query, "after").value_or("");
  persistence::dead_letter_filter filter;
  filter.channel = std::string(channel);
  if (auto coverage = query_value(query, "coverage")) {
    filter.coverage = domain::parse_coverage(*coverage);
    if (!filter.coverage)
      return ex->error(http::status::bad_request, "invalid_request",
                       "coverage must be covered, pending, unknown or none", "coverage");
  }
  std::size_t limit = 100;
  if (auto text = query_value(query, "limit")) {
    auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), limit);
    if (ec != std::errc{} || end != text->data() + text->size() || limit == 0 ||
        limit > max_dead_letter_page)
      return ex->error(http::status::bad_request, "invalid_request",
                       "limit must be an integer from 1 to 1000", "limit");
  }
  for (auto [name, value] : {std::pair{"channel", channel}, std::pair{"after", after}})
    if (!value.empty() && !is_plausible_message_id(value))
      return ex->error(http::status::bad_request, "invalid_request",
                       std::string(name) + " must be a plain name or id", name);
  service_.list_dead_letters(
      std::get<std::optional<std::string>>(tenant).value_or(""), std::move(filter),
      std::string(after), limit,
      guarded(ex,
              [limit](const exchange_ptr& exchange,
                      std::variant<std::vector<persistence::dead_letter>, service_error>& result) {
                if (auto* failure = std::get_if<service_error>(&result))
                  return exchange->error(*failure);
                exchange->json(http::status::ok,
                               encode_dead_letters(
                                   std::get<std::vector<persistence::dead_letter>>(result), limit));
              }));
}

void routes::replay_dead_letter(std::string_view id, const caller& who, const exchange_ptr& ex) {
  if (!is_plausible_message_id(id))
    return ex->error(http::status::not_found, "not_found", "no such task");
  service_.replay_dead_letter(
      who.tenant, std::string(id),
      guarded(ex, [id = std::string(id)](
                      const exchange_ptr& exchange,
                      std::variant<persistence::replay_result, service_error>& result) {
        if (auto* failure = std::get_if<service_error>(&result))
          return exchange->error(*failure);
        const auto& replay = std::get<persistence::replay_result>(result);
        using outcome = persistence::replay_result::outcome;
        if (replay.result == outcome::not_found)
          return exchange->error(http::status::not_found, "not_found", "no such task");
        if (replay.result == outcome::not_replayable)
          return exchange->error(http::status::conflict, "not_replayable",
                                 "task is " + std::string(domain::to_string(replay.state)) +
                                     ", not DEAD, FAILED or SUPPRESSED: nothing was replayed");
        exchange->json(http::status::accepted, encode_replay(replay, id));
      }));
}

namespace {

/// webhook-timestamp: unix seconds, digits only (at most 12: year 33658).
std::optional<std::int64_t> parse_webhook_timestamp(std::string_view text) {
  std::int64_t seconds = 0;
  if (text.empty() || text.size() > 12)
    return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc{} || end != text.data() + text.size())
    return std::nullopt;
  return seconds;
}

} // namespace

void routes::record_receipt(std::string_view channel, const http_request& request,
                            const exchange_ptr& ex) {
  if (auto adapter = options_.callback_adapters.find(std::string(channel));
      adapter != options_.callback_adapters.end())
    return read_provider_callback(adapter->first, *adapter->second, request, ex);
  auto key = options_.receipt_keys.find(std::string(channel));
  // Unknown names are not counted: a metric label per name a caller invents would grow without
  // bound.
  if (key == options_.receipt_keys.end())
    return ex->error(http::status::not_found, "not_found",
                     "no channel of that name takes receipt callbacks");
  const std::string channel_name = key->first;
  auto reject = [&](http::status status, std::string_view reason, std::string_view message,
                    std::string_view field = {}) {
    metrics_.receipt_rejected(channel_name, reason);
    ex->error(status, reason, message, field);
  };
  auto id = request["webhook-id"];
  auto timestamp_text = request["webhook-timestamp"];
  auto signature = request["webhook-signature"];
  if (id.empty() || timestamp_text.empty() || signature.empty())
    return reject(http::status::unauthorized, "missing_signature",
                  "webhook-id, webhook-timestamp and webhook-signature are required");
  auto timestamp = parse_webhook_timestamp(timestamp_text);
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(clock_.now().time_since_epoch()).count();
  // A signed request replayed later, or a clock far off, is refused before anything is read.
  if (!timestamp || *timestamp < now - options_.receipt_timestamp_tolerance.count() ||
      *timestamp > now + options_.receipt_timestamp_tolerance.count())
    return reject(http::status::unauthorized, "stale_timestamp",
                  "webhook-timestamp is missing or too far from the current time");
  if (!providers::verify_webhook(key->second, id, *timestamp, request.body(), signature))
    return reject(http::status::unauthorized, "invalid_signature",
                  "webhook-signature does not match this channel's receipt_secret");
  if (!is_json_content_type(request[http::field::content_type]))
    return reject(http::status::unsupported_media_type, "unsupported_media_type",
                  "Content-Type must be application/json");
  auto decoded = decode_receipt(request.body(), options_.max_json_depth);
  if (auto* failure = std::get_if<domain::validation_error>(&decoded)) {
    metrics_.receipt_rejected(channel_name, "malformed");
    return ex->error(*failure);
  }
  auto& body = std::get<receipt_callback_body>(decoded);
  providers::callback_reading reading;
  reading.result = providers::callback_reading::kind::receipt;
  reading.provider_request_id = std::move(body.provider_request_id);
  reading.provider_message_id = std::move(body.provider_message_id);
  reading.status = body.status;
  reading.occurred_at = body.occurred_at;
  reading.detail = std::move(body.detail);
  record_reading(channel_name, std::move(reading), ex);
}

void routes::read_provider_callback(const std::string& channel,
                                    const providers::provider_adapter& adapter,
                                    const http_request& request, const exchange_ptr& ex) {
  providers::callback_request callback;
  callback.method = request.method() == http::verb::get ? "GET" : "POST";
  const std::string_view target = request.target();
  if (auto mark = target.find('?'); mark != std::string_view::npos)
    callback.query = std::string{target.substr(mark + 1)};
  for (const auto& field : request) {
    std::string name{field.name_string()};
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    callback.headers.emplace_back(std::move(name), std::string{field.value()});
  }
  callback.body = request.body();
  callback.now = clock_.now();
  auto reading = adapter.read_callback(callback);
  using kind = providers::callback_reading::kind;
  if (reading.result == kind::refused) {
    metrics_.receipt_rejected(channel, reading.error);
    // Only GET and POST reach an adapter, and a callback it refuses by method is a GET.
    if (reading.http_status == 405)
      return ex->method_not_allowed("POST");
    return ex->error(error_status(static_cast<int>(reading.http_status)), reading.error,
                     reading.message);
  }
  if (!reading.seal)
    return act_on_reading(channel, std::move(reading), ex);
  auto seal = std::move(*reading.seal);
  reading.seal.reset();
  service_.admit_push(
      std::move(seal),
      guarded(ex, [this, channel, reading = std::move(reading)](
                      const exchange_ptr& exchange, std::variant<bool, service_error>& admitted) {
        if (auto* failure = std::get_if<service_error>(&admitted))
          return exchange->error(*failure);
        if (!std::get<bool>(admitted)) {
          metrics_.receipt_rejected(channel, "replayed_signature");
          return exchange->error(http::status::unauthorized, "replayed_signature",
                                 "this signature came before with another request");
        }
        act_on_reading(channel, reading, exchange);
      }));
}

void routes::act_on_reading(const std::string& channel, providers::callback_reading reading,
                            const exchange_ptr& ex) {
  if (reading.result == providers::callback_reading::kind::reply)
    return ex->text(http::status::ok, reading.reply_content_type, std::move(reading.reply_body));
  record_reading(channel, std::move(reading), ex);
}

void routes::record_reading(const std::string& channel, providers::callback_reading reading,
                            const exchange_ptr& ex) {
  persistence::receipt_input input;
  input.channel = channel;
  input.provider_request_id = std::move(reading.provider_request_id);
  input.provider_message_id = std::move(reading.provider_message_id);
  input.receipt.status = reading.status;
  input.receipt.source = domain::receipt_source::callback;
  input.receipt.occurred_at = reading.occurred_at;
  input.receipt.detail = std::move(reading.detail);
  service_.record_receipt(
      std::move(input),
      guarded(ex, [content_type = std::move(reading.reply_content_type),
                   reply = std::move(reading.reply_body),
                   acknowledge_unknown = reading.acknowledge_unknown](
                      const exchange_ptr& exchange,
                      std::variant<persistence::receipt_outcome, service_error>& result) {
        if (auto* failure = std::get_if<service_error>(&result))
          return exchange->error(*failure);
        const auto& outcome = std::get<persistence::receipt_outcome>(result);
        const bool unknown = outcome.result == persistence::receipt_outcome::outcome::unknown_task;
        if (unknown && !acknowledge_unknown)
          return exchange->json(
              http::status::not_found,
              encode_error("unknown_task", "no task of this channel has that id"),
              log::level::debug); // counted in herald_receipts_rejected_total, not logged
        if (!reply.empty())
          return exchange->text(http::status::ok, content_type, reply);
        exchange->json(http::status::ok, encode_receipt_outcome(outcome));
      }));
}

void routes::cluster(const exchange_ptr& ex) {
  service_.cluster(guarded(ex, [](const exchange_ptr& exchange, domain::cluster_view& view) {
    exchange->json(http::status::ok, encode_cluster(view));
  }));
}

void routes::stats(std::string_view query, const caller& who, const exchange_ptr& ex) {
  // Figures of one tenant, or (without keys and without `tenant=`) of every tenant.
  auto tenant = named_tenant(query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&tenant))
    return ex->error(*failure);
  persistence::stats_query which;
  which.tenant = std::get<std::optional<std::string>>(tenant).value_or("");
  which.channel = std::string(query_value(query, "channel").value_or(""));
  if (!which.channel.empty() && !is_plausible_message_id(which.channel))
    return ex->error(http::status::bad_request, "invalid_request", "channel must be a plain name",
                     "channel");
  for (auto [name, bound] : {std::pair{"from", &which.from}, std::pair{"to", &which.to}}) {
    auto text = query_value(query, name);
    if (!text)
      continue;
    auto decoded = percent_decoded(*text);
    *bound = decoded ? domain::parse_rfc3339(*decoded) : std::nullopt;
    if (!*bound)
      return ex->error(http::status::bad_request, "invalid_request",
                       std::string(name) + " must be an RFC 3339 time, e.g. 2026-12-03T00:00:00Z",
                       name);
  }
  if (which.from && which.to && *which.to < *which.from)
    return ex->error(http::status::bad_request, "invalid_request", "to is before from", "to");
  service_.stats(
      which, guarded(ex, [which](const exchange_ptr& exchange,
                                 std::variant<persistence::stats_report, service_error>& result) {
        if (auto* failure = std::get_if<service_error>(&result))
          return exchange->error(*failure);
        exchange->json(http::status::ok,
                       encode_stats(std::get<persistence::stats_report>(result), which));
      }));
}

namespace {

/// A user id from the path, percent-decoded: 1-128 bytes of UTF-8 without control characters,
/// as POST /v1/messages accepts them.
std::optional<std::string> user_id_of(std::string_view segment) {
  auto user = percent_decoded(segment);
  if (!user || !is_acceptable_id(*user))
    return std::nullopt;
  return user;
}

/// A user of a tenant, as /v1/users/{user_id}/... names it.
struct user_key {
  std::string tenant;
  std::string user_id;
};

/// The user a /v1/users/{user_id}/... request names, and the tenant it acts for (tenant_of).
std::variant<user_key, domain::validation_error>
user_key_of(std::string_view segment, std::string_view query, const caller& who) {
  auto tenant = tenant_of(query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&tenant))
    return std::move(*failure);
  auto user_id = user_id_of(segment);
  if (!user_id)
    return domain::validation_error{400, "invalid_request",
                                    "user_id must be 1-128 bytes of UTF-8 without control "
                                    "characters (percent-encoded in the path)",
                                    "user_id"};
  return user_key{std::move(std::get<std::string>(tenant)), std::move(*user_id)};
}

/// A stored template a /v1/templates/{code}... request names, and the tenant it acts for.
struct template_key {
  std::string tenant;
  std::string code;
};

std::variant<template_key, domain::validation_error>
template_key_of(std::string_view code, std::string_view query, const caller& who) {
  auto tenant = tenant_of(query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&tenant))
    return std::move(*failure);
  if (!domain::is_template_code(code))
    return domain::validation_error{400, "invalid_request",
                                    "a template code is 1-" +
                                        std::to_string(domain::max_template_code_length) +
                                        " characters of A-Z a-z 0-9 _ . -",
                                    "code"};
  return template_key{std::move(std::get<std::string>(tenant)), std::string(code)};
}

/// The `version` query parameter: a positive integer; 0 when absent (the latest).
std::variant<std::uint32_t, domain::validation_error> version_of(std::string_view query) {
  auto text = query_value(query, "version");
  if (!text)
    return std::uint32_t{0};
  std::uint32_t version = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), version);
  // Stored as a 32-bit INTEGER: a larger number names no version (and PostgreSQL would
  // refuse the cast rather than find nothing).
  if (ec != std::errc{} || end != text->data() + text->size() || version == 0 ||
      version > static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max()))
    return domain::validation_error{400, "invalid_request", "version must be a positive integer",
                                    "version"};
  return version;
}

/// The template a PUT or POST under /v1/templates/{code} names and its JSON body as `decode`
/// reads it; nullopt once `ex` has answered why not (400, 403, 415).
template <class Decoded, class Decode>
std::optional<std::pair<template_key, Decoded>>
template_request(std::string_view code, std::string_view query, const http_request& request,
                 const caller& who, const exchange_ptr& ex, Decode decode) {
  auto key = template_key_of(code, query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&key)) {
    ex->error(*failure);
    return std::nullopt;
  }
  if (refuse_unless_json(request, ex))
    return std::nullopt;
  auto decoded = decode(request.body());
  if (auto* failure = std::get_if<domain::validation_error>(&decoded)) {
    ex->error(*failure);
    return std::nullopt;
  }
  return std::pair{std::move(std::get<template_key>(key)), std::move(std::get<Decoded>(decoded))};
}

domain::validation_error unknown_template(const std::string& code) {
  return domain::validation_error{404, "template_not_found",
                                  "no stored template '" + code + "' for this tenant", "code"};
}

} // namespace

void routes::list_inbox(std::string_view user, std::string_view query, const caller& who,
                        const exchange_ptr& ex) {
  auto key = user_key_of(user, query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&key))
    return ex->error(*failure);
  persistence::inbox_query which;
  which.tenant = std::move(std::get<user_key>(key).tenant);
  which.user_id = std::move(std::get<user_key>(key).user_id);
  if (auto unread = query_value(query, "unread")) {
    if (*unread != "true" && *unread != "false")
      return ex->error(http::status::bad_request, "invalid_request", "unread must be true or false",
                       "unread");
    which.unread_only = *unread == "true";
  }
  if (auto after = query_value(query, "after")) {
    which.after = parse_inbox_cursor(*after);
    if (!which.after)
      return ex->error(http::status::bad_request, "invalid_request",
                       "after must be a next_after value of an earlier page", "after");
  }
  which.limit = default_inbox_page;
  if (auto text = query_value(query, "limit")) {
    auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), which.limit);
    if (ec != std::errc{} || end != text->data() + text->size() || which.limit == 0 ||
        which.limit > max_inbox_page)
      return ex->error(http::status::bad_request, "invalid_request",
                       "limit must be an integer from 1 to " + std::to_string(max_inbox_page),
                       "limit");
  }
  const auto user_text = which.user_id;
  const auto limit = which.limit;
  service_.list_inbox(
      std::move(which),
      guarded(ex, [user_text, limit](const exchange_ptr& exchange,
                                     std::variant<persistence::inbox_page, service_error>& result) {
        if (auto* failure = std::get_if<service_error>(&result))
          return exchange->error(*failure);
        exchange->json(
            http::status::ok,
            encode_inbox_page(user_text, std::get<persistence::inbox_page>(result), limit));
      }));
}

void routes::get_user(std::string_view user, std::string_view query, const caller& who,
                      const exchange_ptr& ex) {
  auto key = user_key_of(user, query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&key))
    return ex->error(*failure);
  auto& [tenant, user_id] = std::get<user_key>(key);
  service_.find_user(
      std::move(tenant), std::move(user_id),
      guarded(ex, [](const exchange_ptr& exchange,
                     std::variant<std::optional<domain::user_profile>, service_error>& result) {
        if (auto* failure = std::get_if<service_error>(&result))
          return exchange->error(*failure);
        const auto& found = std::get<std::optional<domain::user_profile>>(result);
        if (!found)
          return exchange->error(http::status::not_found, "user_not_found",
                                 "no profile was stored for this user");
        exchange->json(http::status::ok, encode_user_profile(*found));
      }));
}

void routes::update_profile(std::string_view user, std::string_view query, profile_change change,
                            const http_request& request, const caller& who,
                            const exchange_ptr& ex) {
  auto key = user_key_of(user, query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&key))
    return ex->error(*failure);
  if (refuse_unless_json(request, ex))
    return;
  auto decoded = decode_user_profile(request.body(), change, options_.max_json_depth);
  if (auto* failure = std::get_if<domain::validation_error>(&decoded))
    return ex->error(*failure);
  auto& [tenant, user_id] = std::get<user_key>(key);
  update_user(std::move(tenant), std::move(user_id), std::get<domain::user_patch>(decoded), ex);
}

void routes::set_dnd(std::string_view user, std::string_view query, const http_request& request,
                     const caller& who, const exchange_ptr& ex) {
  auto key = user_key_of(user, query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&key))
    return ex->error(*failure);
  // No body is `{}`: do not disturb until lifted.
  if (!request.body().empty() && refuse_unless_json(request, ex))
    return;
  auto decoded = decode_dnd(request.body(), options_.max_json_depth);
  if (auto* failure = std::get_if<domain::validation_error>(&decoded))
    return ex->error(*failure);
  auto& [tenant, user_id] = std::get<user_key>(key);
  update_user(std::move(tenant), std::move(user_id), std::get<domain::user_patch>(decoded), ex);
}

void routes::lift_dnd(std::string_view user, std::string_view query, const caller& who,
                      const exchange_ptr& ex) {
  auto key = user_key_of(user, query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&key))
    return ex->error(*failure);
  domain::user_patch lift;
  lift.dnd = domain::user_patch::dnd_change::lift;
  auto& [tenant, user_id] = std::get<user_key>(key);
  update_user(std::move(tenant), std::move(user_id), lift, ex);
}

void routes::update_user(std::string tenant, std::string user_id, const domain::user_patch& patch,
                         const exchange_ptr& ex) {
  auto known_time_zone = [this](const std::string& name) { return service_.known_time_zone(name); };
  if (auto failure =
          domain::check_user_patch(patch, service_.rules(), known_time_zone, clock_.now()))
    return ex->error(*failure);
  service_.update_user(std::move(tenant), std::move(user_id), patch,
                       guarded(ex, [](const exchange_ptr& exchange,
                                      std::variant<domain::user_profile, service_error>& result) {
                         if (auto* failure = std::get_if<service_error>(&result))
                           return exchange->error(*failure);
                         exchange->json(
                             http::status::ok,
                             encode_user_profile(std::get<domain::user_profile>(result)));
                       }));
}

void routes::mark_inbox_item(std::string_view task_id, domain::receipt_status status,
                             const caller& who, const exchange_ptr& ex) {
  if (!is_plausible_message_id(task_id))
    return ex->error(http::status::not_found, "not_found", "no such inbox item");
  const auto at = clock_.now();
  // The item names the task's channel (and proves the task is the tenant's); the receipt then
  // goes through the receipt actor like a provider's, answered after COMMIT.
  service_.find_inbox_item(
      who.tenant, std::string(task_id),
      guarded(ex, [service = &service_, status,
                   at](const exchange_ptr& exchange,
                       std::variant<std::optional<persistence::inbox_item>, service_error>& found) {
        if (auto* failure = std::get_if<service_error>(&found))
          return exchange->error(*failure);
        const auto& item = std::get<std::optional<persistence::inbox_item>>(found);
        if (!item)
          return exchange->error(http::status::not_found, "not_found", "no such inbox item");
        persistence::receipt_input input;
        input.channel = item->channel;
        input.task_id = item->task_id;
        input.receipt.status = status;
        input.receipt.source = domain::receipt_source::inbox;
        input.receipt.occurred_at = at;
        service->record_receipt(
            std::move(input),
            guarded(exchange,
                    [](const exchange_ptr& answering,
                       std::variant<persistence::receipt_outcome, service_error>& result) {
                      if (auto* failure = std::get_if<service_error>(&result))
                        return answering->error(*failure);
                      const auto& outcome = std::get<persistence::receipt_outcome>(result);
                      if (outcome.result == persistence::receipt_outcome::outcome::unknown_task)
                        return answering->error(http::status::not_found, "not_found",
                                                "no such inbox item");
                      answering->json(http::status::ok, encode_receipt_outcome(outcome));
                    }));
      }));
}

void routes::readyz(const exchange_ptr& ex) {
  service_.readiness([ex](bool ready, std::string reason) {
    guarded(ex, [ready](const exchange_ptr& exchange, const std::string& readiness_reason) {
      if (ready)
        return exchange->json(http::status::ok, status_body("ready"));
      boost::json::object body{{"status", "not_ready"}, {"reason", readiness_reason}};
      // Not ready is a state, not a failure: probes poll it while starting.
      exchange->json(http::status::service_unavailable, boost::json::serialize(body),
                     log::level::info);
    })(std::move(reason));
  });
}

namespace {

/// "closed", "open" or "half_open" for a herald_circuit_state value (metrics::circuit_state).
std::string_view circuit_name(double state) {
  return state == 1 ? "open" : state == 2 ? "half_open" : "closed";
}

/// GET /v1/channels from this process's metrics: each channel's circuit (every channel sets it
/// when it starts, so all are listed) and its provider calls by outcome, and the retry queue.
std::string encode_channels(const std::vector<prometheus::MetricFamily>& families) {
  boost::json::object channels_by_name;
  // The channel a metric is labelled with, its entry made on first sight with every outcome at
  // 0; nullptr for a metric without a channel label.
  auto entry_for = [&](const prometheus::ClientMetric& metric) -> boost::json::object* {
    for (const auto& label : metric.label)
      if (label.name == "channel") {
        auto& entry = channels_by_name[label.value];
        if (!entry.is_object()) {
          boost::json::object calls;
          for (auto outcome :
               {call_outcome::success, call_outcome::retryable, call_outcome::permanent,
                call_outcome::timeout, call_outcome::throttled})
            calls[to_string(outcome)] = 0;
          entry = {{"channel", label.value}, {"circuit", "closed"}, {"provider_calls", calls}};
        }
        return &entry.as_object();
      }
    return nullptr;
  };
  double retry_queue_depth = 0;
  for (const auto& family : families) {
    for (const auto& metric : family.metric) {
      if (family.name == "herald_retry_queue_depth") {
        retry_queue_depth = metric.gauge.value;
      } else if (family.name == "herald_circuit_state") {
        if (auto* channel = entry_for(metric))
          (*channel)["circuit"] = circuit_name(metric.gauge.value);
      } else if (family.name == "herald_provider_calls_total") {
        auto* channel = entry_for(metric);
        for (const auto& label : metric.label)
          if (channel && label.name == "outcome")
            channel->at("provider_calls").as_object()[label.value] =
                static_cast<std::uint64_t>(metric.counter.value);
      }
    }
  }
  boost::json::array list;
  for (auto& [name, channel] : channels_by_name)
    list.push_back(std::move(channel));
  std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
    return a.at("channel").as_string() < b.at("channel").as_string();
  });
  return boost::json::serialize(boost::json::object{
      {"retry_queue_depth", static_cast<std::uint64_t>(retry_queue_depth)}, {"channels", list}});
}

/// The media type of an embedded file, by its extension.
std::string_view content_type_of(std::string_view name) {
  auto ends_with = [&](std::string_view suffix) {
    return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  };
  if (ends_with(".html"))
    return "text/html; charset=utf-8";
  if (ends_with(".css"))
    return "text/css; charset=utf-8";
  if (ends_with(".js"))
    return "text/javascript; charset=utf-8";
  if (ends_with(".yaml"))
    return "application/yaml";
  return "application/octet-stream";
}

/// What the console's pages may load and run: only their own files and the API of their own
/// origin, so a message body shown on a page can never run as script.
constexpr std::string_view console_security_policy =
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

} // namespace

void routes::channels(const exchange_ptr& ex) {
  ex->json(http::status::ok, encode_channels(metrics_.registry().Collect()));
}

void routes::serve_embedded(std::string_view name, const exchange_ptr& ex) {
  const auto& files = embedded_files();
  auto file = std::find_if(files.begin(), files.end(),
                           [&](const embedded_file& candidate) { return candidate.name == name; });
  if (file == files.end())
    return ex->error(http::status::not_found, "not_found", "no such resource");
  http_response response{http::status::ok, 11};
  response.set(http::field::content_type, content_type_of(name));
  // Built into the binary: a new version comes with a restart, so browsers revalidate.
  response.set(http::field::cache_control, "no-cache");
  response.set("X-Content-Type-Options", "nosniff");
  response.set("Content-Security-Policy", console_security_policy);
  response.set("Referrer-Policy", "no-referrer");
  response.body() = std::string(file->bytes);
  ex->send(std::move(response));
}

void routes::serve_metrics(const exchange_ptr& ex) {
  http_response response{http::status::ok, 11};
  response.set(http::field::content_type, "text/plain; version=0.0.4");
  response.body() = metrics_.render();
  ex->send(std::move(response));
}

void routes::get_template(std::string_view code, std::string_view query, const caller& who,
                          const exchange_ptr& ex) {
  auto key = template_key_of(code, query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&key))
    return ex->error(*failure);
  auto version = version_of(query);
  if (auto* failure = std::get_if<domain::validation_error>(&version))
    return ex->error(*failure);
  auto& [tenant, name] = std::get<template_key>(key);
  service_.find_template(
      std::move(tenant), name, std::get<std::uint32_t>(version),
      guarded(ex,
              [name](const exchange_ptr& exchange,
                     std::variant<std::optional<domain::stored_template>, service_error>& result) {
                if (auto* failure = std::get_if<service_error>(&result))
                  return exchange->error(*failure);
                const auto& found = std::get<std::optional<domain::stored_template>>(result);
                if (!found)
                  return exchange->error(unknown_template(name));
                exchange->json(http::status::ok, encode_stored_template(*found));
              }));
}

void routes::put_template(std::string_view code, std::string_view query,
                          const http_request& request, const caller& who, const exchange_ptr& ex) {
  auto parsed = template_request<domain::template_definition>(
      code, query, request, who, ex, [this](std::string_view body) {
        return decode_template_definition(body, options_.max_json_depth);
      });
  if (!parsed)
    return;
  auto& [key, definition] = *parsed;
  const auto& rules = service_.rules();
  if (auto failure = domain::check_definition(definition, rules.channels, rules.limits))
    return ex->error(*failure);
  auto& [tenant, name] = key;
  service_.save_template(
      std::move(tenant), std::move(name), std::move(definition),
      guarded(ex, [](const exchange_ptr& exchange,
                     std::variant<domain::stored_template, service_error>& result) {
        if (auto* failure = std::get_if<service_error>(&result))
          return exchange->error(*failure);
        const auto& stored = std::get<domain::stored_template>(result);
        exchange->json(stored.version == 1 ? http::status::created : http::status::ok,
                       encode_stored_template(stored));
      }));
}

void routes::delete_template(std::string_view code, std::string_view query, const caller& who,
                             const exchange_ptr& ex) {
  auto key = template_key_of(code, query, who);
  if (auto* failure = std::get_if<domain::validation_error>(&key))
    return ex->error(*failure);
  auto& [tenant, name] = std::get<template_key>(key);
  service_.delete_template(
      std::move(tenant), name,
      guarded(ex, [name](const exchange_ptr& exchange, std::variant<bool, service_error>& result) {
        if (auto* failure = std::get_if<service_error>(&result))
          return exchange->error(*failure);
        if (!std::get<bool>(result))
          return exchange->error(unknown_template(name));
        boost::json::object body{{"code", name}, {"deleted", true}};
        exchange->json(http::status::ok, boost::json::serialize(body));
      }));
}

void routes::preview_template(std::string_view code, std::string_view query,
                              const http_request& request, const caller& who,
                              const exchange_ptr& ex) {
  auto parsed = template_request<preview_request>(
      code, query, request, who, ex, [this](std::string_view body) {
        return decode_preview_request(body, options_.max_json_depth);
      });
  if (!parsed)
    return;
  auto& [tenant, name] = parsed->first;
  auto preview = std::move(parsed->second);
  const auto version = preview.version.value_or(0);
  service_.find_template(
      std::move(tenant), name, version,
      guarded(ex, [name, preview = std::move(preview), service = &service_](
                      const exchange_ptr& exchange,
                      std::variant<std::optional<domain::stored_template>, service_error>& result) {
        if (auto* failure = std::get_if<service_error>(&result))
          return exchange->error(*failure);
        const auto& found = std::get<std::optional<domain::stored_template>>(result);
        if (!found)
          return exchange->error(unknown_template(name));
        const auto& rules = service->rules();
        auto rendered = domain::preview_definition(
            found->definition, preview.locale, rules.channels, preview.params, rules.limits, name);
        if (auto* failure = std::get_if<domain::validation_error>(&rendered))
          return exchange->error(*failure);
        exchange->json(http::status::ok,
                       encode_template_preview(
                           *found, std::get<std::vector<domain::locale_preview>>(rendered)));
      }));
}

} // namespace herald::api
