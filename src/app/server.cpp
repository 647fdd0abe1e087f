#include "app/server.hpp"

#include "actors/dedup_shard.hpp"
#include "actors/dispatcher.hpp"
#include "actors/events_actor.hpp"
#include "actors/ingest.hpp"
#include "actors/node_supervisor.hpp"
#include "actors/receipt_actor.hpp"
#include "actors/reconciler.hpp"
#include "actors/store_reader.hpp"
#include "actors/store_writer.hpp"
#include "actors/template_registry.hpp"
#include "api/http_server.hpp"
#include "api/routes.hpp"
#include "app/actor_service.hpp"
#include "app/api_access.hpp"
#include "app/service_manager.hpp"
#include "app/stop_signals.hpp"
#include "domain/keys.hpp"
#include "domain/masking.hpp"
#include "domain/shifted_clock.hpp"
#include "domain/status_event.hpp"
#include "observability/health_board.hpp"
#include "observability/log.hpp"
#include "observability/metrics.hpp"
#include "persistence/faulty_task_store.hpp"
#include "persistence/installation.hpp"
#include "persistence/node_lock.hpp"
#include "persistence/task_store.hpp"
#include "persistence/zoneinfo.hpp"
#include "providers/webhook_signature.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <random>
#include <unistd.h>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/spawn_options.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::app {

namespace {

// Names this process as a lease owner: unique per process, readable in the database.
// The node's name: `node_id`, or "<host>:<port>" (the same after a restart). On an ephemeral
// port (0) the name cannot come back, so the process id keeps it apart.
std::string node_name(const config& cfg, std::uint16_t port) {
  if (!cfg.node_id.empty())
    return cfg.node_id;
  char host[256] = "herald";
  gethostname(host, sizeof(host) - 1);
  auto name = std::string{host} + ":" + std::to_string(port);
  return port == 0 ? name + "/" + std::to_string(getpid()) : name;
}

// What this process writes as lease owner: the node's name and a value drawn at start, so two
// processes never hold a lease under the same owner — not even the same node restarted while
// its predecessor still drains calls.
std::string lease_owner_of(const std::string& name) {
  static_assert(persistence::lease_incarnation_length == 16, "two 32-bit draws in hex");
  std::random_device entropy;
  char incarnation[persistence::lease_incarnation_length + 1];
  std::snprintf(incarnation, sizeof(incarnation), "%08x%08x", entropy(), entropy());
  return name + "/" + incarnation;
}

// After a crash, the node's earlier processes left SENDING tasks under their leases; ending
// those leases now lets the first recovery pass resend them (same provider request id)
// instead of waiting out lease and sweep. Only when no earlier process of this name can be
// alive: the port is bound (checked by the caller) and the node-name lock is ours.
void resume_own_leases(const persistence::database_url& url, const std::string& name,
                       const persistence::node_lock& lock, const domain::clock& clock) {
  if (!lock.held()) {
    log::warn("herald.leases_left_to_sweep",
              {{"node", name},
               {"lock", lock.where()},
               {"reason", "another process of this node name may still be running"}});
    return;
  }
  try {
    auto released = persistence::open_task_store(url, false)->release_leases(name, clock.now());
    if (released > 0)
      log::warn("herald.leases_resumed", {{"node", name}, {"tasks", std::to_string(released)}});
  } catch (const std::exception& e) {
    // Not fatal: the sweep takes these tasks once their leases run out.
    log::error("herald.leases_not_resumed",
               {{"node", name}, {"error", domain::mask_free_text(e.what())}});
  }
}

/// The inapp channels' connections, by channel: each writes its inbox on a thread of its own.
using inbox_stores = std::map<std::string, std::shared_ptr<persistence::task_store>>;

inbox_stores open_inbox_stores(const config& cfg, const persistence::database_url& url) {
  inbox_stores stores;
  for (auto& ch : cfg.channels)
    if (ch.type == "inapp")
      stores[ch.settings.name] = persistence::open_task_store(url, false);
  return stores;
}

/// Unix seconds of herald's clock, for the webhook-timestamp (and body timestamp) of what herald
/// signs: with --test-clock they follow it, as every other time herald writes does.
std::function<std::int64_t()> unix_seconds_of(std::shared_ptr<const domain::clock> clock) {
  return [clock = std::move(clock)] {
    return std::chrono::duration_cast<std::chrono::seconds>(clock->now().time_since_epoch())
        .count();
  };
}

std::vector<actors::channel_spec>
make_channel_specs(const config& cfg, const std::string& node_id,
                   const std::shared_ptr<providers::delay_scheduler>& delays,
                   const std::shared_ptr<metrics>& counters, const inbox_stores& inboxes,
                   const std::shared_ptr<const domain::clock>& clock) {
  std::vector<actors::channel_spec> specs;
  // Channels of one WeChat appid share one account: one access token, one connection pool.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<providers::wechat_account>>
      wechat_accounts;
  // Channels of one FCM service account share its access token; of one APNs key, its provider
  // token (APNs refuses tokens replaced more often than every 20 minutes).
  std::map<std::string, std::shared_ptr<providers::fcm_account>> fcm_accounts;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<providers::apns_account>>
      apns_accounts;
  const auto wall_clock = std::make_shared<const domain::system_clock>();
  for (auto& ch : cfg.channels) {
    auto settings = ch.settings;
    settings.node_id = node_id;
    std::shared_ptr<providers::provider_adapter> provider;
    if (ch.type == "webhook") {
      provider = std::make_shared<providers::webhook_provider>(ch.webhook, unix_seconds_of(clock));
    } else if (ch.type == "wechat_template") {
      auto wechat = ch.wechat;
      wechat.push_tolerance =
          std::chrono::duration_cast<std::chrono::seconds>(cfg.receipts.timestamp_tolerance);
      auto& account = wechat_accounts[{wechat.api_base(), wechat.appid}];
      if (!account)
        account = std::make_shared<providers::wechat_account>(wechat, counters);
      provider = std::make_shared<providers::wechat_template_provider>(settings.name, wechat,
                                                                       account, counters);
    } else if (ch.type == "sms_twilio") {
      provider =
          std::make_shared<providers::twilio_sms_provider>(settings.name, ch.twilio, counters);
    } else if (ch.type == "fcm") {
      auto& account = fcm_accounts[ch.fcm.service_account_json];
      if (!account)
        account = std::make_shared<providers::fcm_account>(ch.fcm, counters);
      provider =
          std::make_shared<providers::fcm_provider>(settings.name, ch.fcm, account, counters);
    } else if (ch.type == "apns") {
      auto& account = apns_accounts[{ch.apns.team_id, ch.apns.key_id}];
      if (!account)
        account = std::make_shared<providers::apns_account>(ch.apns, counters, wall_clock);
      provider =
          std::make_shared<providers::apns_provider>(settings.name, ch.apns, account, counters);
    } else if (ch.type == "smtp") {
      provider = std::make_shared<providers::smtp_provider>(settings.name, ch.smtp, counters);
    } else if (ch.type == "inapp") {
      provider = std::make_shared<providers::inapp_provider>(
          ch.inapp, [store = inboxes.at(ch.settings.name), clock](const auto& task_ids) {
            return store->deliver_to_inbox(task_ids, clock->now());
          });
    } else {
      provider = std::make_shared<providers::simulated_provider>(ch.simulated, delays);
    }
    specs.push_back({std::move(settings), std::move(provider)});
  }
  return specs;
}

api::routes_options routes_options_of(const config& cfg,
                                      const std::vector<actors::channel_spec>& specs) {
  api::routes_options options;
  options.max_json_depth = cfg.http.max_json_depth;
  options.metrics_on_api_listener = cfg.metrics_listen.empty();
  options.receipt_timestamp_tolerance =
      std::chrono::duration_cast<std::chrono::seconds>(cfg.receipts.timestamp_tolerance);
  for (auto& ch : cfg.channels)
    if (!ch.webhook.receipt_secret.empty())
      if (auto key = providers::decode_webhook_secret(ch.webhook.receipt_secret))
        options.receipt_keys[ch.settings.name] = *key;
  for (const auto& spec : specs)
    if (spec.provider->takes_callbacks())
      options.callback_adapters[spec.settings.name] = spec.provider;
  return options;
}

// The events actor as the supervisor runs it, posting through its own signed poster.
actors::supervised_component start_events(caf::actor_system& sys, const events_config& events,
                                          std::shared_ptr<persistence::task_store> store,
                                          std::shared_ptr<metrics> metrics,
                                          std::shared_ptr<const domain::clock> clock,
                                          std::shared_ptr<const actors::cluster_share> share,
                                          const std::string& lease_owner) {
  actors::events_actor_config config;
  config.retry = events.retry;
  config.owner = lease_owner;
  // A post ends within its timeout; its outcome is written by the next poll at the latest.
  config.claim = 2 * events.timeout + config.poll_interval;
  auto poster = std::make_shared<providers::signed_poster>(
      providers::poster_config{events.url, *providers::decode_webhook_secret(events.secret),
                               events.timeout, config.max_in_flight, "herald-events/1"},
      unix_seconds_of(clock));
  actors::event_poster post = [poster](providers::signed_post p, providers::post_callback done) {
    poster->post(std::move(p), std::move(done));
  };
  return actors::start_events(sys, std::move(store), std::move(post), std::move(metrics),
                              std::move(clock), std::move(share), config);
}

/// Where a task an UNDELIVERED receipt ends fails over to: its channel's fallback, as a
/// permanent failure does.
persistence::fallback_routes fallback_routes_of(const config& cfg,
                                                const domain::id_secret& secret) {
  persistence::fallback_routes failover{{}, secret};
  for (auto& ch : cfg.channels)
    if (!ch.settings.fallback.empty())
      failover.fallback_of[ch.settings.name] = ch.settings.fallback;
  return failover;
}

/// Whether any channel takes receipts (callbacks, a window the reconciler settles, or the
/// inbox's reads, which may come before the SENT commit: the item is written first).
bool takes_receipts(const config& cfg) {
  return std::any_of(cfg.channels.begin(), cfg.channels.end(), [](const channel_config& ch) {
    return !ch.webhook.receipt_secret.empty() || !ch.wechat.callback_token.empty() ||
           !ch.twilio.status_callback_url.empty() || ch.settings.receipt_window.count() > 0 ||
           ch.type == "inapp";
  });
}

/// What the rest of the process talks to: the HTTP entry, the dispatcher (drain) and the
/// supervisor that owns every actor of the node.
struct node {
  /// The cluster port's middleman; null without a cluster. Ends before the actor system.
  std::unique_ptr<actors::cluster_transport> transport;
  actors::cluster_member_actor cluster; ///< null without a cluster
  std::shared_ptr<actors::cluster_share> share;
  actors::ingest_actor ingest;
  actors::template_registry_actor templates;
  actors::receipt_actor receipts;
  actors::dispatcher_actor dispatcher;
  actors::node_supervisor_actor supervisor;
};

// Spawns the actors in dependency order and hands them all to the supervisor.
node spawn_node(caf::actor_system& sys, const config& cfg,
                std::shared_ptr<persistence::task_store> writer_store,
                std::shared_ptr<persistence::task_store> claims_store,
                std::shared_ptr<persistence::task_store> reader_store,
                std::shared_ptr<persistence::task_store> events_store,
                std::shared_ptr<persistence::template_store> template_store,
                std::shared_ptr<actors::published_templates> published_templates,
                std::vector<actors::channel_spec> specs, std::shared_ptr<metrics> metrics,
                std::shared_ptr<const domain::clock> clock, std::shared_ptr<health_board> health,
                const persistence::fallback_routes& fallback_routes,
                const std::optional<actors::cluster_config>& cluster,
                const std::string& lease_owner) {
  using actors::shutdown_stage;
  std::vector<actors::supervised_component> components;
  // Blocking database work runs on threads of its own, never on the scheduler's. The store
  // actors are not restartable: every other actor holds their handles, and a new connection
  // would not fix what killed the old one. Their death is reported on the health board.
  auto writer_config = cfg.store;
  writer_config.fallbacks = fallback_routes;
  // A single node's channels offer claims places for new tasks that may go at once: those are
  // inserted taken (SENDING under the channel's lease), a write and a commit fewer each. Not
  // in a cluster: a new task's partition may be another node's, which sends it.
  std::map<std::string, std::shared_ptr<domain::claim_places>> places;
  if (!cluster)
    for (const auto& spec : specs)
      places.emplace(spec.settings.name, std::make_shared<domain::claim_places>(
                                             spec.settings.node_id, spec.settings.lease));
  auto claims_config = writer_config;
  claims_config.places = places;
  claims_config.clock = clock;
  auto writer = sys.spawn<caf::detached>(actors::store_writer, std::move(writer_store), metrics,
                                         claims_store ? writer_config : claims_config);
  components.push_back(
      {"store_writer", shutdown_stage::writer, caf::actor_cast<caf::actor>(writer), {}});
  // With a connection of their own, claims commit while state changes commit (and the other
  // way round) instead of waiting for each other's COMMIT; without one, one writer does both.
  auto claims_writer = writer;
  if (claims_store) {
    claims_writer = sys.spawn<caf::detached>(actors::store_writer, std::move(claims_store), metrics,
                                             claims_config);
    components.push_back(
        {"claims_writer", shutdown_stage::writer, caf::actor_cast<caf::actor>(claims_writer), {}});
  }
  auto reader = sys.spawn<caf::detached>(actors::store_reader, std::move(reader_store));
  components.push_back(
      {"store_reader", shutdown_stage::reader, caf::actor_cast<caf::actor>(reader), {}});
  std::vector<actors::channel_settings> channels;
  std::vector<actors::reconciled_channel> with_receipts;
  for (auto& spec : specs) {
    channels.push_back(spec.settings);
    if (spec.settings.receipt_window.count() > 0)
      with_receipts.push_back({spec.settings, spec.provider});
  }
  node n;
  n.share = std::make_shared<actors::cluster_share>();
  if (cluster) // nothing is its own before its member has heard its peers
    n.share->set_owned_partitions(actors::partition_list{});
  auto dispatcher_config = cfg.dispatcher;
  dispatcher_config.clustered = cluster.has_value();
  n.dispatcher =
      sys.spawn(actors::dispatcher, std::move(channels), reader, clock, dispatcher_config);
  components.push_back(
      {"dispatcher", shutdown_stage::dispatch, caf::actor_cast<caf::actor>(n.dispatcher), {}});
  // The writers hand what their commits create to the dispatcher (spawned after them: it reads
  // through the reader).
  caf::anon_send(writer, actors::attach_atom_v, n.dispatcher);
  if (claims_writer != writer)
    caf::anon_send(claims_writer, actors::attach_atom_v, n.dispatcher);
  components.push_back(
      actors::start_retry_timer(sys, n.dispatcher, metrics, clock, cfg.retry_timer));
  if (events_store) // only with an events url
    components.push_back(start_events(sys, cfg.events, std::move(events_store), metrics, clock,
                                      n.share, lease_owner));
  if (!with_receipts.empty()) {
    actors::reconciler_config reconcile;
    reconcile.interval = cfg.receipts.reconcile_interval;
    reconcile.batch = cfg.receipts.reconcile_batch;
    components.push_back(actors::start_reconciler(
        sys, std::move(with_receipts),
        actors::reconciler_peers{writer, reader, metrics, clock, n.share}, reconcile));
  }
  if (cluster) {
    n.transport = std::make_unique<actors::cluster_transport>(sys, cluster->tls,
                                                              cluster->port_limits, metrics);
    n.cluster =
        sys.spawn(actors::cluster_member, *cluster,
                  actors::cluster_member_peers{n.dispatcher, reader, n.transport->middleman(),
                                               n.share, metrics, clock});
    caf::anon_send(n.dispatcher, actors::attach_atom_v, n.cluster);
    components.push_back(
        {"cluster_member", shutdown_stage::ingest, caf::actor_cast<caf::actor>(n.cluster), {}});
  } else {
    metrics->cluster_members(1);
    metrics->partitions_owned(static_cast<double>(domain::partition_count));
  }
  for (auto& spec : specs) {
    auto channel_places =
        places.count(spec.settings.name) != 0 ? places.at(spec.settings.name) : nullptr;
    components.push_back(
        actors::start_channel(sys, std::move(spec),
                              actors::channel_peers{writer, n.dispatcher, metrics, clock, health,
                                                    n.share, std::move(channel_places)}));
  }
  std::vector<actors::dedup_shard_actor> shards;
  for (std::size_t i = 0; i < cfg.shards; ++i) {
    shards.push_back(sys.spawn(actors::dedup_shard, claims_writer, metrics, cfg.dedup));
    components.push_back({"dedup_shard " + std::to_string(i),
                          shutdown_stage::shards,
                          caf::actor_cast<caf::actor>(shards.back()),
                          {}});
  }
  n.ingest = sys.spawn(
      actors::ingest, std::move(shards),
      actors::ingest_peers{writer, claims_writer, reader, n.dispatcher, clock, health}, cfg.ingest);
  components.push_back(
      {"ingest", shutdown_stage::ingest, caf::actor_cast<caf::actor>(n.ingest), {}});
  n.templates = sys.spawn<caf::detached>(actors::template_registry, std::move(template_store),
                                         std::move(published_templates), cfg.stored_templates);
  components.push_back(
      {"template_registry", shutdown_stage::ingest, caf::actor_cast<caf::actor>(n.templates), {}});
  n.receipts = sys.spawn(actors::receipts, actors::receipt_peers{writer, metrics, clock},
                         actors::receipt_config{});
  components.push_back(
      {"receipts", shutdown_stage::ingest, caf::actor_cast<caf::actor>(n.receipts), {}});
  n.supervisor = sys.spawn(actors::node_supervisor, std::move(components), std::move(health),
                           std::move(clock), cfg.supervision);
  return n;
}

// Makes this node's cluster member reachable at `cluster.listen`; throws std::system_error
// when the address cannot be bound (reported like an HTTP listener that cannot be).
void publish_cluster_member(caf::actor_system& sys, const node& n,
                            const actors::cluster_config& cluster) {
  api::http_options address;
  apply_listen(cluster.listen, address);
  const actors::cluster_peer_actor member = n.cluster;
  auto published = n.transport->publish(caf::actor_cast<caf::strong_actor_ptr>(member),
                                        sys.message_types(member), address.port, address.host);
  if (!published)
    throw std::system_error(std::make_error_code(std::errc::address_in_use),
                            "cannot listen for cluster peers on " + cluster.listen + ": " +
                                sys.render(published.error()));
  log::info("cluster.listening", {{"listen", cluster.listen},
                                  {"node_id", cluster.node_id},
                                  {"transport", cluster.tls.enabled() ? "tls" : "plaintext"}});
}

// Stops every actor in order through the supervisor; bounded by its grace and kill periods.
void stop(node& n, caf::actor_system& sys, const actors::supervision_config& config) {
  constexpr auto stages = static_cast<int>(actors::shutdown_stage::reader) + 1;
  auto bound =
      (config.shutdown_grace + config.shutdown_kill_timeout) * stages + std::chrono::seconds{1};
  caf::scoped_actor self{sys};
  self->request(n.supervisor, bound, actors::shutdown_atom_v)
      .receive([](bool) {},
               [](caf::error& err) {
                 log::warn("herald.stop_incomplete", {{"error", actors::describe(err)}});
               });
}

void drain(node& n, caf::actor_system& sys, api::http_server& server,
           std::chrono::milliseconds timeout) {
  // One budget for the whole drain: HTTP requests first, then provider calls.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  server.stop_accepting();
  if (!server.wait_idle(timeout))
    log::warn("herald.drain_http_timeout", {{"in_flight", std::to_string(server.in_flight())}});
  auto left =
      std::max(std::chrono::milliseconds{1}, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 deadline - std::chrono::steady_clock::now()));
  caf::scoped_actor self{sys};
  self->request(n.dispatcher, left, actors::drain_atom_v)
      .receive([](bool) { log::info("herald.drained"); },
               [](caf::error& err) {
                 // Whatever did not finish stays in the database and is resumed at next start.
                 log::warn("herald.drain_incomplete", {{"error", actors::describe(err)}});
               });
  server.stop();
}

} // namespace

int serve(const config& cfg) {
  persistence::database_url url;
  try {
    url = database_url_of(cfg);
  } catch (const std::invalid_argument& e) {
    std::cerr << "herald: " << e.what() << "\n";
    return 2;
  }
  // The ports first: one in use stops herald with its one line, before anything opened or logged.
  std::optional<api::bound_listener> api_listener;
  std::optional<api::bound_listener> metrics_listener;
  try {
    api_listener.emplace(cfg.http.host, cfg.http.port);
    if (!cfg.metrics_listen.empty()) {
      api::http_options metrics_http;
      apply_listen(cfg.metrics_listen, metrics_http);
      metrics_listener.emplace(metrics_http.host, metrics_http.port);
    }
  } catch (const std::system_error& e) {
    std::cerr << "herald: " << e.what() << "\n";
    return 1;
  }
  std::shared_ptr<persistence::task_store> writer_store;
  std::shared_ptr<persistence::task_store> claims_store; // none: the writer claims too
  std::shared_ptr<persistence::task_store> reader_store;
  std::shared_ptr<persistence::task_store> events_store; // none: no events url
  std::shared_ptr<persistence::template_store> template_store;
  auto published_templates = std::make_shared<actors::published_templates>();
  inbox_stores inboxes;
  // One tz database for the process: zones load from disk once, whoever asks first.
  const auto zones = std::make_shared<persistence::zoneinfo>();
  domain::id_secret id_secret;
  std::unique_ptr<api_access> access;
  auto metrics_registry = std::make_shared<metrics>();
  try {
    // The writer puts the enabled events into the outbox with the changes they report.
    // The writer puts the receipts that came before a SENT commit into that commit, failing
    // over as configured: it needs the installation's secret, so the schema comes first.
    persistence::migrate(url);
    id_secret = persistence::installation_secret(url);
    persistence::store_options writer_options;
    if (!cfg.events.url.empty())
      writer_options.event_states = domain::event_states_for(cfg.events.types);
    writer_options.takes_receipts = takes_receipts(cfg);
    writer_options.fallbacks = fallback_routes_of(cfg, id_secret);
    writer_options.plans_once = true; // batches keyed by ids: planned once, not at every run
    // Claims apply the policy (docs/policy.md) to the tasks they create.
    persistence::store_options claim_options;
    claim_options.event_states = writer_options.event_states; // task.suppressed by policy
    claim_options.policy = std::make_shared<const persistence::claim_policy>(
        persistence::claim_policy{cfg.policy, zones});
    claim_options.plans_once = true;
    // SQLite takes one writer at a time: a second writing connection would only wait.
    if (url.backend == persistence::database_url::kind::postgresql)
      claims_store = persistence::open_task_store(url, false, claim_options);
    writer_options.policy = claim_options.policy; // failovers judge their fallback tasks too
    writer_store = persistence::open_task_store(url, false, writer_options);
    if (cfg.store_faults.write_failure_rate > 0) {
      log::warn("herald.store_faults_injected",
                {{"write_failure_rate", std::to_string(cfg.store_faults.write_failure_rate)}});
      writer_store =
          std::make_shared<persistence::faulty_task_store>(writer_store, cfg.store_faults);
      if (claims_store)
        claims_store =
            std::make_shared<persistence::faulty_task_store>(claims_store, cfg.store_faults);
    }
    reader_store = persistence::open_task_store(url, false);
    if (!cfg.events.url.empty())
      events_store = persistence::open_task_store(url, false);
    inboxes = open_inbox_stores(cfg, url);
    // Stored templates are in the catalog before the listener opens: the first request
    // already renders them.
    template_store = std::make_shared<persistence::template_store>(url);
    actors::load_published_templates(*template_store, *published_templates);
    access = std::make_unique<api_access>(cfg.auth, url);
  } catch (const std::exception& e) {
    // The driver's words may quote the user, host or values: masked like provider text.
    const auto why = domain::mask_free_text(e.what());
    log::error("herald.database_unavailable", {{"database", url.text}, {"error", why}});
    std::cerr << "herald: cannot open database " << url.text << ": " << why << "\n";
    return 1;
  }

  caf::actor_system_config caf_cfg;
  caf_cfg.set("scheduler.max-threads", static_cast<std::size_t>(cfg.scheduler_threads));
  // Work stealing's default "moderate" phase sleeps 50 us between 500 polls of an empty queue:
  // under load a worker wakes ~20,000 times a second for nothing, a quarter of herald's CPU in
  // kernel context switches (docs/benchmarks.md). Without that phase an idle worker spins
  // briefly and then waits on its condition variable, which an enqueue from outside notifies.
  caf_cfg.set("work-stealing.moderate-poll-attempts", std::size_t{0});
  actors::register_types(caf_cfg);
  if (cfg.cluster) {
    caf_cfg.load<caf::io::middleman>();
    // Without these a hung peer's connection is never given up (caf-0.17.md).
    caf_cfg.set("middleman.heartbeat-interval", caf::timespan{cfg.cluster->heartbeat});
    caf_cfg.set("middleman.connection-timeout", caf::timespan{cfg.cluster->timeout});
    actors::configure_cluster_tls(caf_cfg, cfg.cluster->tls);
  }
  std::shared_ptr<const domain::clock> clock = std::make_shared<domain::system_clock>();
  if (cfg.test_clock_start) {
    log::warn("herald.test_clock", {{"starts_at", domain::format_rfc3339(*cfg.test_clock_start)},
                                    {"use", "tests and drills only"}});
    clock = std::make_shared<domain::shifted_clock>(*cfg.test_clock_start);
  }
  auto delays = std::make_shared<providers::delay_scheduler>();
  int exit_code = 0;
  const auto name = node_name(cfg, cfg.http.port);
  // Outlives the actor system below: released only once no actor of this process can still
  // be calling a provider, so a successor never resumes a lease still in use.
  const auto name_lock = persistence::try_lock_node_name(url, name);
  std::optional<actors::cluster_config> cluster = cfg.cluster;
  if (cluster) {
    // Two processes under one name would be one member to the others, and share its leases.
    if (!name_lock->held()) {
      std::cerr << "herald: cluster.node_id " << name << " is in use by another running node ("
                << name_lock->where() << ")\n";
      return 2;
    }
    cluster->cluster_id = domain::cluster_id_for(id_secret);
  }
  {
    caf::actor_system sys{caf_cfg};
    const auto node_id = lease_owner_of(name);
    auto specs = make_channel_specs(cfg, node_id, delays, metrics_registry, inboxes, clock);
    inboxes.clear(); // the adapters own their connections now
    auto options = routes_options_of(cfg, specs);
    auto n = spawn_node(sys, cfg, writer_store, claims_store, reader_store, std::move(events_store),
                        std::move(template_store), published_templates, std::move(specs),
                        metrics_registry, clock, std::make_shared<health_board>(),
                        fallback_routes_of(cfg, id_secret), cluster, node_id);
    writer_store.reset(); // the actors own the connections now
    claims_store.reset();
    reader_store.reset();

    // Only for a callee that never answers: longer than every callee's own bound (ingest's claim
    // timeout; a receipt's look-ups, up to six store round trips), so those answer first.
    const caf::timespan answer_timeout =
        std::max<caf::timespan>(cfg.ingest.claim_timeout * 5 / 4, std::chrono::seconds{90});
    actor_service service{sys,
                          answer_timeout,
                          n.ingest,
                          n.receipts,
                          cfg.rules,
                          id_secret,
                          zones,
                          n.templates,
                          published_templates,
                          clock,
                          {n.cluster, n.share, name}};
    api::routes routes{service, *metrics_registry, *clock, access->authenticator(),
                       std::move(options)};
    auto http = cfg.http;
    http.on_refusal = [&counted = *metrics_registry](unsigned status) {
      counted.http_response("server", status);
    };
    http.check_header = routes.check_header();
    // Without keys, a browser page whose name an attacker points at 127.0.0.1 (DNS rebinding)
    // could read what any local process can: only requests addressed to loopback are served.
    const bool loopback_hosts_only =
        cfg.auth.mode == auth_config::auth_mode::none && !cfg.auth.allow_unauthenticated_on_network;
    http.loopback_hosts_only = loopback_hosts_only;
    api::http_server server{std::move(http), routes.handler()};
    std::unique_ptr<api::http_server> metrics_server;
    if (!cfg.metrics_listen.empty()) {
      api::http_options metrics_http;
      apply_listen(cfg.metrics_listen, metrics_http);
      metrics_http.io_threads = 1;
      metrics_http.loopback_hosts_only = loopback_hosts_only;
      metrics_server = std::make_unique<api::http_server>(metrics_http, routes.metrics_handler());
    }
    try {
      // The cluster port, then metrics, then the API: once /healthz answers, the others do too.
      if (n.cluster) {
        publish_cluster_member(sys, n, *cfg.cluster);
        // Dialing waits for the middleman; published first, a peer dialing here finds us. Sent
        // from an actor of this node: the member takes no dial without a local sender.
        caf::scoped_actor starter{sys};
        for (const auto& peer : cfg.cluster->peers)
          starter->send(n.cluster, actors::dial_atom_v, peer);
      }
      if (metrics_server)
        metrics_server->start(std::move(*metrics_listener));
      server.start(std::move(*api_listener));
      resume_own_leases(url, name, *name_lock, *clock);
      caf::anon_send(n.dispatcher, actors::recover_atom_v, std::string{}); // every channel
      log::info("herald.started",
                {{"version", HERALD_VERSION},
                 {"listen", cfg.http.host + ":" + std::to_string(server.port())},
                 {"lease_owner", node_id},
                 {"database", url.text},
                 {"auth", cfg.auth.mode == auth_config::auth_mode::api_keys ? "api_keys" : "none"},
                 {"metrics_listen", metrics_server ? cfg.metrics_listen : "api"},
                 {"channels", std::to_string(cfg.channels.size())},
                 {"scheduler_threads", std::to_string(cfg.scheduler_threads)},
                 {"http_io_threads", std::to_string(cfg.http.io_threads)}});
      // Keys keep tenants apart, but /metrics needs none: on the API listener it shows any
      // caller every tenant's provider calls (the figures GET /v1/channels keeps to `ops`).
      if (cfg.auth.mode == auth_config::auth_mode::api_keys && !metrics_server)
        log::warn("herald.metrics_open",
                  {{"reason", "metrics_listen is not set: /metrics answers on the API listener "
                              "without a key; set metrics_listen to serve it on an address of "
                              "its own (docs/security.md)"}});
      // Said once at start: anyone who reaches the listener may submit, read and replay.
      if (cfg.auth.mode == auth_config::auth_mode::none &&
          cfg.auth.allow_unauthenticated_on_network)
        log::warn("herald.unauthenticated_on_network",
                  {{"listen", cfg.http.host + ":" + std::to_string(server.port())},
                   {"reason", "auth.mode is none and auth.allow_unauthenticated_on_network is "
                              "set: every client that reaches this address may submit and read "
                              "messages without a key (docs/security.md)"}});
      notify_service_manager("READY=1");
      auto signal = wait_for_stop_signal();
      log::info("herald.stopping", {{"signal", std::to_string(signal)}});
      notify_service_manager("STOPPING=1");
      drain(n, sys, server, cfg.drain_timeout);
    } catch (const std::system_error& e) {
      log::error("herald.listen_failed", {{"error", e.what()}});
      std::cerr << "herald: " << e.what() << "\n";
      exit_code = 1;
      server.stop();
    }
    if (metrics_server)
      metrics_server->stop();
    service.close(); // the HTTP server is stopped: nothing may be called back any more
    stop(n, sys, cfg.supervision);
  } // the actor system waits for every actor here
  log::info("herald.stopped", {{"exit_code", std::to_string(exit_code)}});
  return exit_code;
}

int migrate(const config& cfg) {
  try {
    auto url = database_url_of(cfg);
    auto version = persistence::migrate(url);
    persistence::installation_secret(url); // created once, here, before any node plans an id
    std::cout << "schema at version " << version << " (" << url.text << ")\n";
    return 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "herald: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "herald: migration failed: " << e.what() << "\n";
    return 1;
  }
}

} // namespace herald::app
