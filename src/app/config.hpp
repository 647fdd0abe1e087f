#pragma once

#include "actors/channel_actor.hpp"
#include "actors/cluster_member.hpp"
#include "actors/dedup_shard.hpp"
#include "actors/dispatcher.hpp"
#include "actors/ingest.hpp"
#include "actors/node_supervisor.hpp"
#include "actors/retry_timer.hpp"
#include "actors/store_writer.hpp"
#include "actors/template_registry.hpp"
#include "api/http_server.hpp"
#include "domain/policy.hpp"
#include "domain/validation.hpp"
#include "observability/log.hpp"
#include "persistence/faulty_task_store.hpp"
#include "providers/apns_provider.hpp"
#include "providers/fcm_provider.hpp"
#include "providers/inapp_provider.hpp"
#include "providers/simulated_provider.hpp"
#include "providers/smtp_provider.hpp"
#include "providers/twilio_sms_provider.hpp"
#include "providers/webhook_provider.hpp"
#include "providers/wechat_template_provider.hpp"

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace herald::app {

/// A configuration that cannot run; the message is one line naming the offending field.
class config_error : public std::runtime_error {
public:
  /// Control characters in `what` (a key may hold "\n") become '?', so it stays one line.
  explicit config_error(const std::string& what);
};

/// One configured channel: how it sends and which provider it calls.
struct channel_config {
  actors::channel_settings settings;
  /// simulated, webhook, wechat_template, sms_twilio, fcm, apns, smtp or inapp
  std::string type = "simulated";
  providers::simulated_profile simulated;
  providers::webhook_config webhook;
  providers::wechat_config wechat;
  providers::twilio_config twilio;
  providers::fcm_config fcm;
  providers::apns_config apns;
  providers::smtp_config smtp;
  providers::inapp_config inapp;
};

/// Who may call the API (docs/security.md).
struct auth_config {
  enum class auth_mode { none, api_keys };
  /// none: every request acts with every scope, for the tenant its body names; allowed on a
  /// loopback listen address only, unless allow_unauthenticated_on_network says otherwise.
  auth_mode mode = auth_mode::none;
  bool allow_unauthenticated_on_network = false;
  /// How often the key table is re-read: a created or revoked key counts within this time.
  std::chrono::milliseconds key_refresh{2000};
};

/// How receipts are taken and reconciled (docs/receipts.md).
struct receipts_config {
  /// How far a receipt's webhook-timestamp may be from herald's clock, either way.
  std::chrono::milliseconds timestamp_tolerance{300000};
  /// How often the reconciler looks for SENT tasks past their channel's receipt window.
  std::chrono::milliseconds reconcile_interval{10000};
  /// Tasks the reconciler settles per database read, at most.
  std::size_t reconcile_batch = 500;
};

/// Where status events go (docs/receipts.md): none when `url` is empty.
struct events_config {
  std::string url;                ///< http:// or https:// endpoint of the calling system
  std::string secret;             ///< Standard Webhooks secret, "whsec_<base64>"
  std::vector<std::string> types; ///< event types to send ("task.delivered", …); empty: all
  std::chrono::milliseconds timeout{5000};
  domain::retry_policy retry = domain::default_retry_policy(); ///< then an event dead letter
};

/// Everything `herald serve` runs with. Read from JSON (comments allowed), then checked as a
/// whole by validate() before anything starts.
struct config {
  api::http_options http;
  /// HOST:PORT of a listener serving only /metrics; empty: /metrics on the API listener.
  std::string metrics_listen;
  auth_config auth;
  std::string database = "sqlite:var/herald.db";
  /// `sqlite.synchronous`: FULL (a commit survives a power loss) unless NORMAL is chosen.
  persistence::database_url::sqlite_sync sqlite_synchronous =
      persistence::database_url::sqlite_sync::full;
  log::level log_level = log::level::info;
  std::size_t shards = 8;
  unsigned scheduler_threads = 2;
  std::chrono::milliseconds drain_timeout{15000};
  /// Lease owner name; empty: "<host>:<port>" at start. Stable across restarts, so a
  /// restarted node finds the leases it held and resumes those tasks at once.
  std::string node_id;
  actors::dispatcher_config dispatcher;
  actors::ingest_config ingest;
  actors::dedup_shard_config dedup; ///< claim_timeout defaults to 4/5 of ingest's
  actors::retry_timer_config retry_timer;
  actors::supervision_config supervision;
  actors::store_writer_config store;
  persistence::store_faults store_faults; ///< drills only: injected store-write failures
  std::vector<channel_config> channels;
  domain::routing_rules rules;
  domain::policy_rules policy;
  receipts_config receipts;
  events_config events;
  /// How often a node looks for templates other nodes stored (stored_templates.refresh_ms).
  actors::template_registry_config stored_templates;
  /// `cluster`: this node's place in a cluster; nullopt: a single node.
  std::optional<actors::cluster_config> cluster;
  /// `serve --test-clock`: herald's clock starts at this instant (tests and drills only).
  std::optional<domain::timestamp> test_clock_start;
};

/// The built-in configuration (config/herald.json, compiled in).
const std::string& embedded_config_text();

/// Parses a configuration document on top of the defaults of `config{}`: keys it names
/// replace, keys it omits keep their default. Unknown keys are errors (typos must not pass
/// silently). Throws config_error.
config parse_config(const std::string& text);

/// Reads and parses a file; throws config_error naming the file.
config load_config_file(const std::string& path);

/// Checks the whole configuration; throws config_error with the first problem.
void validate(const config& cfg);

/// validate(), with `source` (the file name, or "embedded config") first in the message.
void validate(const config& cfg, const std::string& source);

/// The configured database: `database` parsed, with the SQLite settings applied. Throws
/// std::invalid_argument with a one-line reason for a bad URL.
persistence::database_url database_url_of(const config& cfg);

/// Parses "HOST:PORT" into the HTTP options; throws config_error.
void apply_listen(const std::string& listen, api::http_options& http);

/// Whether `host` can only be reached from this machine: localhost, 127.0.0.0/8 or ::1.
bool is_loopback_host(const std::string& host);

} // namespace herald::app
