#pragma once

#include "api/http_server.hpp"
#include "api/json_codec.hpp"
#include "api/service.hpp"
#include "domain/time.hpp"
#include "observability/metrics.hpp"

namespace herald::api {

/// Limits the routes apply to request bodies.
struct routes_options {
  unsigned max_json_depth = default_max_json_depth;
};

/// The HTTP API v1 (design.md §7): maps requests onto the service and its answers onto JSON.
/// Every error body is {"error":{"code","message","field"?}}; an unexpected exception becomes
/// the only 500 (internal_error), and is logged.
class routes {
public:
  /// All references must outlive the routes and every request still in flight.
  routes(service& service, metrics& metrics, const domain::clock& clock,
         routes_options options = {});

  /// Handles one request; never blocks, never throws; calls `respond` exactly once.
  void handle(http_request request, respond_fn respond);

  /// `handle` as the server's request_handler.
  request_handler handler();

private:
  service& service_;
  metrics& metrics_;
  const domain::clock& clock_;
  routes_options options_;
};

/// Whether a Content-Type header names application/json (parameters such as charset allowed).
bool is_json_content_type(std::string_view content_type);

} // namespace herald::api
