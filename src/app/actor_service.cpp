#include "app/actor_service.hpp"

#include <caf/send.hpp>

namespace herald::app {

actor_service::actor_service(actors::ingest_actor ingest, domain::routing_rules rules)
    : ingest_(std::move(ingest)), rules_(std::move(rules)) {}

void actor_service::submit(
    domain::message_plan plan,
    std::function<void(std::variant<persistence::claim_result, api::service_error>)> done) {
  caf::anon_send(ingest_, actors::submit_atom_v, std::move(plan),
                 actors::submit_callback{std::move(done)});
}

void actor_service::find_message(
    std::string message_id,
    std::function<void(std::variant<std::optional<persistence::message_view>, api::service_error>)>
        done) {
  caf::anon_send(ingest_, actors::find_atom_v, std::move(message_id),
                 actors::find_callback{std::move(done)});
}

void actor_service::readiness(std::function<void(bool ready, std::string reason)> done) {
  caf::anon_send(ingest_, actors::ready_atom_v, actors::ready_callback{std::move(done)});
}

} // namespace herald::app
