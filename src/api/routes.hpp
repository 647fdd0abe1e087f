#pragma once

#include "api/authenticator.hpp"
#include "api/http_server.hpp"
#include "api/json_codec.hpp"
#include "api/service.hpp"
#include "api/user_codec.hpp"
#include "domain/time.hpp"
#include "observability/metrics.hpp"
#include "providers/provider.hpp"

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace herald::api {

class exchange;

/// POST /v1/messages/batch: up to max_batch_items events in one request.
inline constexpr std::string_view batch_path = "/v1/messages/batch";

/// The body limit of batch_path unless configured (http.max_batch_body_bytes): 1000 events
/// of 4 KiB each.
inline constexpr std::size_t default_max_batch_body_bytes = 4 * 1024 * 1024;

/// Limits the routes apply to request bodies, and where /metrics is served.
struct routes_options {
  unsigned max_json_depth = default_max_json_depth;
  /// false when /metrics has a listener of its own (metrics_listen): then the API listener
  /// answers /metrics with 404.
  bool metrics_on_api_listener = true;
  /// Channel -> key bytes of its receipt_secret: the channels that take receipt callbacks.
  std::map<std::string, std::string> receipt_keys;
  /// How far a receipt's webhook-timestamp may be from now, either way (replay window).
  std::chrono::seconds receipt_timestamp_tolerance{300};
  /// Channel -> its adapter, for channels whose provider calls back in a format of its own
  /// (WeChat, Twilio): GET and POST /v1/receipts/{channel} go to its read_callback().
  std::map<std::string, std::shared_ptr<const providers::provider_adapter>> callback_adapters;
};

/// The HTTP API v1 (design.md §7): maps requests onto the service and its answers onto JSON.
/// Every error body is {"error":{"code","message","field"?}}; an unexpected exception becomes
/// the only 500 (internal_error), and is logged. Every /v1 route needs a caller the
/// authenticator accepts (else 401) holding the route's scope (else 403), and sees only the
/// caller's tenant — except /v1/receipts/{channel}, which a provider calls and proves by the
/// channel's signature (Standard Webhooks, or the provider's own scheme); /healthz, /readyz,
/// GET /v1/openapi.yaml and the console's files are open.
class routes {
public:
  /// All references must outlive the routes and every request still in flight.
  routes(service& service, metrics& metrics, const domain::clock& clock, const authenticator& auth,
         routes_options options = {});

  /// Handles one request; never blocks, never throws; calls `respond` exactly once.
  void handle(http_request request, respond_fn respond);

  /// `handle` as the server's request_handler.
  request_handler handler();

  /// For a request with a body still to come (http_options::check_header): the answer
  /// `handle` would give it from its header alone (404, 405, 401, 403), so that no body is
  /// read for a request refused anyway; else whether a key vouched for the caller.
  header_check check_header();

  /// The handler of the metrics listener (metrics_listen): GET /metrics, 404 for the rest.
  request_handler metrics_handler();

private:
  using exchange_ptr = std::shared_ptr<exchange>;

  // One handler per route; `handle` matches the path and method, then calls one of them.
  void submit_message(const http_request& request, const caller& who, const exchange_ptr& ex);
  /// POST /v1/messages/batch: every valid item claimed in one group commit, one answer each.
  void submit_batch(const http_request& request, const caller& who, const exchange_ptr& ex);
  void get_message(std::string_view id, const caller& who, const exchange_ptr& ex);
  /// GET /v1/messages?biz_type=&biz_id=&user_id=: the message of a business key.
  void find_message_by_key(std::string_view query, const caller& who, const exchange_ptr& ex);
  void answer_message(const caller& who, std::string message_id, const exchange_ptr& ex);
  void list_dead_letters(std::string_view query, const caller& who, const exchange_ptr& ex);
  void replay_dead_letter(std::string_view id, const caller& who, const exchange_ptr& ex);
  void record_receipt(std::string_view channel, const http_request& request,
                      const exchange_ptr& ex);
  void read_provider_callback(const std::string& channel,
                              const providers::provider_adapter& adapter,
                              const http_request& request, const exchange_ptr& ex);
  /// Acts on a verified reading whose seal, if it has one, the store admitted: answers its reply,
  /// or records its receipt.
  void act_on_reading(const std::string& channel, providers::callback_reading reading,
                      const exchange_ptr& ex);
  /// Records a read receipt; answers after COMMIT (the reading's reply, or herald's JSON).
  void record_reading(const std::string& channel, providers::callback_reading reading,
                      const exchange_ptr& ex);
  void stats(std::string_view query, const caller& who, const exchange_ptr& ex);
  /// GET /v1/cluster: this node's view of its cluster.
  void cluster(const exchange_ptr& ex);
  /// GET /v1/channels: this node's channels (circuit, provider calls) and retry queue.
  void channels(const exchange_ptr& ex);
  /// GET /v1/openapi.yaml and the console's files (api/embedded_files.hpp).
  void serve_embedded(std::string_view name, const exchange_ptr& ex);
  void list_inbox(std::string_view user, std::string_view query, const caller& who,
                  const exchange_ptr& ex);
  /// Records the inbox's READ or CLICKED receipt for an item of the caller's tenant.
  void mark_inbox_item(std::string_view task_id, domain::receipt_status status, const caller& who,
                       const exchange_ptr& ex);
  /// GET /v1/users/{user_id}: the stored profile; 404 user_not_found when none.
  void get_user(std::string_view user, std::string_view query, const caller& who,
                const exchange_ptr& ex);
  /// PUT (replace) or PATCH (merge) /v1/users/{user_id}.
  void update_profile(std::string_view user, std::string_view query, profile_change change,
                      const http_request& request, const caller& who, const exchange_ptr& ex);
  /// PUT /v1/users/{user_id}/dnd.
  void set_dnd(std::string_view user, std::string_view query, const http_request& request,
               const caller& who, const exchange_ptr& ex);
  /// DELETE /v1/users/{user_id}/dnd.
  void lift_dnd(std::string_view user, std::string_view query, const caller& who,
                const exchange_ptr& ex);
  /// Checks `patch` against the installation (422, nothing written), then applies it to the
  /// user and answers the profile after COMMIT.
  void update_user(std::string tenant, std::string user_id, const domain::user_patch& patch,
                   const exchange_ptr& ex);
  /// GET /v1/templates/{code}[?version=N]: the tenant's stored template; 404
  /// template_not_found when none.
  void get_template(std::string_view code, std::string_view query, const caller& who,
                    const exchange_ptr& ex);
  /// PUT /v1/templates/{code}: checks the definition (422 invalid_template, nothing written),
  /// saves it as the next version; 201 for version 1, else 200.
  void put_template(std::string_view code, std::string_view query, const http_request& request,
                    const caller& who, const exchange_ptr& ex);
  /// DELETE /v1/templates/{code}: every version; messages already accepted keep their text.
  void delete_template(std::string_view code, std::string_view query, const caller& who,
                       const exchange_ptr& ex);
  /// POST /v1/templates/{code}/preview: renders every locale (or the one asked) for every
  /// channel, as acceptance would, without sending anything.
  void preview_template(std::string_view code, std::string_view query, const http_request& request,
                        const caller& who, const exchange_ptr& ex);
  void readyz(const exchange_ptr& ex);
  void serve_metrics(const exchange_ptr& ex);

  service& service_;
  metrics& metrics_;
  const domain::clock& clock_;
  const authenticator& auth_;
  routes_options options_;
};

/// Whether a Content-Type header names application/json (parameters such as charset allowed).
bool is_json_content_type(std::string_view content_type);

} // namespace herald::api
