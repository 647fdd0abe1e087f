#include "app/actor_service.hpp"

#include <algorithm>

#include <caf/send.hpp>

namespace herald::app {

actor_service::actor_service(actors::ingest_actor ingest, actors::receipt_actor receipts,
                             domain::routing_rules rules, domain::id_secret id_secret,
                             std::shared_ptr<persistence::zoneinfo> zones,
                             actors::template_registry_actor templates,
                             std::shared_ptr<const actors::published_templates> catalog,
                             std::shared_ptr<const domain::clock> clock, node_cluster cluster)
    : ingest_(std::move(ingest)), receipts_(std::move(receipts)), rules_(std::move(rules)),
      id_secret_(std::move(id_secret)), zones_(std::move(zones)), templates_(std::move(templates)),
      catalog_(std::move(catalog)), clock_(std::move(clock)), cluster_(std::move(cluster)) {}

void actor_service::cluster(std::function<void(domain::cluster_view)> done) {
  if (cluster_.member) {
    caf::anon_send(cluster_.member, actors::cluster_atom_v,
                   actors::cluster_callback{std::move(done)});
    return;
  }
  domain::member_view alone;
  alone.node_id = cluster_.node_id;
  alone.self = true;
  alone.last_heartbeat = clock_->now();
  alone.partitions_owned = domain::partition_count;
  alone.in_flight = cluster_.share->in_flight();
  done({cluster_.node_id, domain::partition_count, {std::move(alone)}, {}});
}

void actor_service::submit(
    domain::message_plan plan,
    std::function<void(std::variant<persistence::claim_result, api::service_error>)> done) {
  caf::anon_send(ingest_, actors::submit_atom_v, std::move(plan),
                 actors::submit_callback{std::move(done)});
}

void actor_service::submit_batch(
    std::vector<domain::message_plan> plans,
    std::function<void(std::variant<std::vector<persistence::claim_result>, api::service_error>)>
        done) {
  caf::anon_send(ingest_, actors::submit_atom_v, std::move(plans),
                 actors::batch_callback{std::move(done)});
}

void actor_service::find_message(
    std::string tenant, std::string message_id,
    std::function<void(std::variant<std::optional<persistence::message_view>, api::service_error>)>
        done) {
  caf::anon_send(ingest_, actors::find_atom_v, std::move(tenant), std::move(message_id),
                 actors::find_callback{std::move(done)});
}

void actor_service::list_dead_letters(
    std::string tenant, persistence::dead_letter_filter filter, std::string after_task_id,
    std::size_t limit,
    std::function<void(std::variant<std::vector<persistence::dead_letter>, api::service_error>)>
        done) {
  caf::anon_send(ingest_, actors::letters_atom_v, std::move(tenant), std::move(filter),
                 std::move(after_task_id), static_cast<std::uint64_t>(limit),
                 actors::letters_callback{std::move(done)});
}

void actor_service::replay_dead_letter(
    std::string tenant, std::string task_id,
    std::function<void(std::variant<persistence::replay_result, api::service_error>)> done) {
  caf::anon_send(ingest_, actors::replay_atom_v, std::move(tenant), std::move(task_id),
                 actors::replay_callback{std::move(done)});
}

void actor_service::record_receipt(
    persistence::receipt_input receipt,
    std::function<void(std::variant<persistence::receipt_outcome, api::service_error>)> done) {
  caf::anon_send(receipts_, actors::receipt_atom_v, std::move(receipt),
                 actors::receipt_callback{std::move(done)});
}

void actor_service::admit_push(domain::push_seal seal,
                               std::function<void(std::variant<bool, api::service_error>)> done) {
  caf::anon_send(receipts_, actors::seal_atom_v, std::move(seal),
                 actors::admit_callback{std::move(done)});
}

void actor_service::stats(
    persistence::stats_query which,
    std::function<void(std::variant<persistence::stats_report, api::service_error>)> done) {
  caf::anon_send(ingest_, actors::stats_atom_v, std::move(which),
                 actors::stats_callback{std::move(done)});
}

void actor_service::list_inbox(
    persistence::inbox_query which,
    std::function<void(std::variant<persistence::inbox_page, api::service_error>)> done) {
  caf::anon_send(ingest_, actors::inbox_atom_v, std::move(which),
                 actors::inbox_callback{std::move(done)});
}

void actor_service::find_inbox_item(
    std::string tenant, std::string task_id,
    std::function<void(std::variant<std::optional<persistence::inbox_item>, api::service_error>)>
        done) {
  caf::anon_send(ingest_, actors::item_atom_v, std::move(tenant), std::move(task_id),
                 actors::item_callback{std::move(done)});
}

bool actor_service::known_time_zone(const std::string& name) const {
  return zones_->find(name) != nullptr;
}

void actor_service::find_user(
    std::string tenant, std::string user_id,
    std::function<void(std::variant<std::optional<domain::user_profile>, api::service_error>)>
        done) {
  caf::anon_send(ingest_, actors::user_atom_v, std::move(tenant), std::move(user_id),
                 actors::user_callback{std::move(done)});
}

void actor_service::update_user(
    std::string tenant, std::string user_id, domain::user_patch patch,
    std::function<void(std::variant<domain::user_profile, api::service_error>)> done) {
  caf::anon_send(ingest_, actors::update_atom_v, std::move(tenant), std::move(user_id),
                 std::move(patch), actors::profile_callback{std::move(done)});
}

std::shared_ptr<const domain::template_catalog> actor_service::stored_templates() const {
  return catalog_->current();
}

void actor_service::save_template(
    std::string tenant, std::string code, domain::template_definition definition,
    std::function<void(std::variant<domain::stored_template, api::service_error>)> done) {
  caf::anon_send(templates_, actors::put_atom_v, std::move(tenant), std::move(code),
                 std::move(definition), clock_->now(),
                 actors::stored_template_callback{std::move(done)});
}

void actor_service::find_template(
    std::string tenant, std::string code, std::uint32_t version,
    std::function<void(std::variant<std::optional<domain::stored_template>, api::service_error>)>
        done) {
  caf::anon_send(templates_, actors::template_atom_v, std::move(tenant), std::move(code), version,
                 actors::template_callback{std::move(done)});
}

void actor_service::delete_template(
    std::string tenant, std::string code,
    std::function<void(std::variant<bool, api::service_error>)> done) {
  caf::anon_send(templates_, actors::delete_atom_v, std::move(tenant), std::move(code),
                 clock_->now(), actors::removed_callback{std::move(done)});
}

void actor_service::readiness(std::function<void(bool ready, std::string reason)> done) {
  caf::anon_send(ingest_, actors::ready_atom_v, actors::ready_callback{std::move(done)});
}

} // namespace herald::app
