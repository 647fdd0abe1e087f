#include "app/actor_service.hpp"

#include "actors/logging_handlers.hpp"
#include "observability/log.hpp"

#include <mutex>
#include <tuple>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>

namespace herald::app {

namespace {

/// The HTTP error a failed actor request becomes.
api::service_error to_service_error(const caf::error& err) {
  if (err == caf::sec::request_timeout)
    return {503, "unavailable", "the database did not answer in time; retrying is safe", ""};
  if (actors::has_code(err, actors::errc::overloaded))
    return {503, "overloaded", "too many requests in flight; retry later", ""};
  return {503, "unavailable", "the service cannot take requests right now; retrying is safe", ""};
}

} // namespace

actor_service::actor_service(caf::actor_system& system, caf::timespan answer_timeout,
                             actors::ingest_actor ingest, actors::receipt_actor receipts,
                             domain::routing_rules rules, domain::id_secret id_secret,
                             std::shared_ptr<persistence::zoneinfo> zones,
                             actors::template_registry_actor templates,
                             std::shared_ptr<const actors::published_templates> catalog,
                             std::shared_ptr<const domain::clock> clock, node_cluster cluster)
    : system_(system), answer_timeout_(answer_timeout), ingest_(std::move(ingest)),
      receipts_(std::move(receipts)), rules_(std::move(rules)), id_secret_(std::move(id_secret)),
      zones_(std::move(zones)), templates_(std::move(templates)), catalog_(std::move(catalog)),
      clock_(std::move(clock)), cluster_(std::move(cluster)), asks_(std::make_shared<open_asks>()) {
  // Armed by the first ask after none was pending (a `tick` from the asker), then by itself
  // for the oldest open ask; a tick while armed changes nothing, as that deadline is earlier.
  deadline_keeper_ = system_.spawn([asks = asks_](caf::event_based_actor* self) {
    actors::install_logging_handlers(self);
    auto armed = std::make_shared<bool>(false);
    auto expire_and_rearm = [self, asks, armed] {
      if (auto next = asks->expire(self->clock().now())) {
        *armed = true;
        self->delayed_send(self, *next - self->clock().now(), actors::deadline_atom_v);
      }
    };
    return caf::behavior{
        [armed, expire_and_rearm](actors::tick_atom) {
          if (!*armed)
            expire_and_rearm();
        },
        [armed, expire_and_rearm](actors::deadline_atom) {
          *armed = false;
          expire_and_rearm();
        },
    };
  });
}

actor_service::~actor_service() {
  close();
}

void actor_service::close() {
  asks_->close();
  caf::anon_send_exit(deadline_keeper_, caf::exit_reason::user_shutdown);
}

actor_service::open_asks::entry actor_service::open_asks::enter(const caf::actor& asker,
                                                                caf::actor_clock& clock,
                                                                caf::timespan timeout) {
  std::unique_lock lock{mutex_};
  if (closed_)
    return entry::refused;
  askers_.emplace(asker.id(), asker);
  const bool first = deadlines_.empty();
  deadlines_.push(clock.now() + timeout, asker.id());
  return first ? entry::entered_first : entry::entered;
}

void actor_service::open_asks::leave(caf::actor_id asker) {
  std::unique_lock lock{mutex_};
  askers_.erase(asker);
  forget_answered();
}

void actor_service::open_asks::forget_answered() {
  deadlines_.forget_front([this](caf::actor_id asker) { return askers_.count(asker) == 0; });
}

std::optional<caf::actor_clock::time_point>
actor_service::open_asks::expire(caf::actor_clock::time_point now) {
  std::unique_lock lock{mutex_};
  deadlines_.expire(now, [this](caf::actor_id id) {
    auto asker = askers_.find(id);
    if (asker != askers_.end()) {
      // Answered by the asker itself, which stays open until then (leave forgets it).
      caf::anon_send<caf::message_priority::high>(
          asker->second,
          caf::exit_msg{asker->second.address(), caf::make_error(caf::sec::request_timeout)});
    }
  });
  forget_answered();
  return deadlines_.next();
}

void actor_service::open_asks::close() {
  std::unique_lock lock{mutex_};
  closed_ = true;
  for (auto& [id, asker] : askers_)
    caf::anon_send_exit(asker, caf::exit_reason::user_shutdown);
  askers_.clear();
  deadlines_.clear();
}

/// Asks `target` and calls `done` with its answer, or with the service error its failure
/// becomes. The request is made by a one-shot actor that ends with the answer, so the
/// callback never travels in a message, and a target that dies or never answers still gets
/// the caller an answer: an error after at most the answer timeout. Once the service closed,
/// nothing is called back (the HTTP layer may be gone) and the asker ends at once.
template <class... Answer, class Handle, class Done, class... Args>
void actor_service::ask(const char* what, Handle target, Done done, Args... args) const {
  system_.spawn([asks = asks_, keeper = deadline_keeper_, timeout = answer_timeout_, what, target,
                 done = std::move(done),
                 args = std::make_tuple(std::move(args)...)](caf::event_based_actor* self) mutable {
    const auto entry = asks->enter(caf::actor_cast<caf::actor>(self), self->clock(), timeout);
    if (entry == open_asks::entry::refused) {
      self->quit();
      return;
    }
    if (entry == open_asks::entry::entered_first)
      self->send(keeper, actors::tick_atom_v);
    auto answered = [asks, id = self->id(), done](auto&&... answer) {
      asks->leave(id);
      asks->unless_closed([&] { done(std::forward<decltype(answer)>(answer)...); });
    };
    // The deadline keeper ends an ask past its deadline with request_timeout; the service's
    // close ends the rest, answering nobody.
    self->set_exit_handler([answered, what](caf::scheduled_actor* asker, caf::exit_msg& msg) {
      if (msg.reason == caf::sec::request_timeout) {
        log::warn("service.request_failed",
                  {{"request", what}, {"error", actors::describe(msg.reason)}});
        answered(to_service_error(msg.reason));
      }
      asker->quit(msg.reason);
    });
    std::apply(
        [&](auto&... xs) {
          // No request timeout: the deadline above bounds the wait (open_asks).
          self->request(target, caf::infinite, std::move(xs)...)
              .then([answered](Answer&... answer) { answered(std::move(answer)...); },
                    [answered, what](caf::error& err) {
                      // The callee logged the errors it gave; only its absence is news here.
                      if (err == caf::sec::request_receiver_down)
                        log::warn("service.request_failed",
                                  {{"request", what}, {"error", actors::describe(err)}});
                      answered(to_service_error(err));
                    });
        },
        args);
  });
}

void actor_service::cluster(std::function<void(domain::cluster_view)> done) {
  if (cluster_.member) {
    // A member that does not answer shows as a cluster of this node alone, with no peer.
    auto alone = lone_view();
    ask<domain::cluster_view>(
        "cluster", cluster_.member,
        [done, alone](auto&& answer) {
          if constexpr (std::is_same_v<std::decay_t<decltype(answer)>, domain::cluster_view>)
            done(std::move(answer));
          else
            done(alone);
        },
        actors::cluster_atom_v);
    return;
  }
  done(lone_view());
}

domain::cluster_view actor_service::lone_view() const {
  domain::member_view alone;
  alone.node_id = cluster_.node_id;
  alone.self = true;
  alone.last_heartbeat = clock_->now();
  alone.partitions_owned = domain::partition_count;
  alone.in_flight = cluster_.share->in_flight();
  return {cluster_.node_id, domain::partition_count, {std::move(alone)}, {}};
}

void actor_service::submit(
    domain::message_plan plan,
    std::function<void(std::variant<persistence::claim_result, api::service_error>)> done) {
  ask<persistence::claim_result>("submit", ingest_, std::move(done), actors::submit_atom_v,
                                 std::move(plan));
}

void actor_service::submit_batch(
    std::vector<domain::message_plan> plans,
    std::function<void(std::variant<std::vector<persistence::claim_result>, api::service_error>)>
        done) {
  ask<std::vector<persistence::claim_result>>("submit_batch", ingest_, std::move(done),
                                              actors::submit_atom_v, std::move(plans));
}

void actor_service::find_message(
    std::string tenant, std::string message_id,
    std::function<void(std::variant<std::optional<persistence::message_view>, api::service_error>)>
        done) {
  ask<std::optional<persistence::message_view>>("find_message", ingest_, std::move(done),
                                                actors::find_atom_v, std::move(tenant),
                                                std::move(message_id));
}

void actor_service::list_dead_letters(
    std::string tenant, persistence::dead_letter_filter filter, std::string after_task_id,
    std::size_t limit,
    std::function<void(std::variant<std::vector<persistence::dead_letter>, api::service_error>)>
        done) {
  ask<std::vector<persistence::dead_letter>>(
      "list_dead_letters", ingest_, std::move(done), actors::letters_atom_v, std::move(tenant),
      std::move(filter), std::move(after_task_id), static_cast<std::uint64_t>(limit));
}

void actor_service::replay_dead_letter(
    std::string tenant, std::string task_id,
    std::function<void(std::variant<persistence::replay_result, api::service_error>)> done) {
  ask<persistence::replay_result>("replay_dead_letter", ingest_, std::move(done),
                                  actors::replay_atom_v, std::move(tenant), std::move(task_id));
}

void actor_service::record_receipt(
    persistence::receipt_input receipt,
    std::function<void(std::variant<persistence::receipt_outcome, api::service_error>)> done) {
  ask<persistence::receipt_outcome>("record_receipt", receipts_, std::move(done),
                                    actors::receipt_atom_v, std::move(receipt));
}

void actor_service::admit_push(domain::push_seal seal,
                               std::function<void(std::variant<bool, api::service_error>)> done) {
  ask<bool>("admit_push", receipts_, std::move(done), actors::seal_atom_v, std::move(seal));
}

void actor_service::stats(
    persistence::stats_query which,
    std::function<void(std::variant<persistence::stats_report, api::service_error>)> done) {
  ask<persistence::stats_report>("stats", ingest_, std::move(done), actors::stats_atom_v,
                                 std::move(which));
}

void actor_service::list_inbox(
    persistence::inbox_query which,
    std::function<void(std::variant<persistence::inbox_page, api::service_error>)> done) {
  ask<persistence::inbox_page>("list_inbox", ingest_, std::move(done), actors::inbox_atom_v,
                               std::move(which));
}

void actor_service::find_inbox_item(
    std::string tenant, std::string task_id,
    std::function<void(std::variant<std::optional<persistence::inbox_item>, api::service_error>)>
        done) {
  ask<std::optional<persistence::inbox_item>>("find_inbox_item", ingest_, std::move(done),
                                              actors::item_atom_v, std::move(tenant),
                                              std::move(task_id));
}

bool actor_service::known_time_zone(const std::string& name) const {
  return zones_->find(name) != nullptr;
}

void actor_service::find_user(
    std::string tenant, std::string user_id,
    std::function<void(std::variant<std::optional<domain::user_profile>, api::service_error>)>
        done) {
  ask<std::optional<domain::user_profile>>("find_user", ingest_, std::move(done),
                                           actors::user_atom_v, std::move(tenant),
                                           std::move(user_id));
}

void actor_service::update_user(
    std::string tenant, std::string user_id, domain::user_patch patch,
    std::function<void(std::variant<domain::user_profile, api::service_error>)> done) {
  ask<domain::user_profile>("update_user", ingest_, std::move(done), actors::update_atom_v,
                            std::move(tenant), std::move(user_id), std::move(patch));
}

std::shared_ptr<const domain::template_catalog> actor_service::stored_templates() const {
  return catalog_->current();
}

void actor_service::save_template(
    std::string tenant, std::string code, domain::template_definition definition,
    std::function<void(std::variant<domain::stored_template, api::service_error>)> done) {
  ask<domain::stored_template>("save_template", templates_, std::move(done), actors::put_atom_v,
                               std::move(tenant), std::move(code), std::move(definition),
                               clock_->now());
}

void actor_service::find_template(
    std::string tenant, std::string code, std::uint32_t version,
    std::function<void(std::variant<std::optional<domain::stored_template>, api::service_error>)>
        done) {
  ask<std::optional<domain::stored_template>>("find_template", templates_, std::move(done),
                                              actors::template_atom_v, std::move(tenant),
                                              std::move(code), version);
}

void actor_service::delete_template(
    std::string tenant, std::string code,
    std::function<void(std::variant<bool, api::service_error>)> done) {
  ask<bool>("delete_template", templates_, std::move(done), actors::delete_atom_v,
            std::move(tenant), std::move(code), clock_->now());
}

void actor_service::readiness(std::function<void(bool ready, std::string reason)> done) {
  ask<bool, std::string>(
      "readiness", ingest_,
      [done](auto&&... answer) {
        if constexpr (sizeof...(answer) == 2)
          done(std::forward<decltype(answer)>(answer)...);
        else
          done(false, "ingest did not answer");
      },
      actors::ready_atom_v);
}

} // namespace herald::app
