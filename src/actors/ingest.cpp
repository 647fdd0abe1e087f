#include "actors/ingest.hpp"

#include "actors/dedup_shard.hpp"
#include "actors/logging_handlers.hpp"
#include "domain/keys.hpp"
#include "observability/log.hpp"

#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

std::string ingest_config::validate() const {
  if (max_in_flight == 0)
    return "ingest.max_in_flight must be at least 1";
  if (claim_timeout.count() <= 0)
    return "ingest.claim_timeout_ms must be > 0";
  return "";
}

api::service_error to_service_error(const caf::error& err) {
  if (err == caf::sec::request_timeout)
    return {503, "unavailable", "the database did not answer in time; retrying is safe", ""};
  if (has_code(err, errc::overloaded))
    return {503, "overloaded", "too many requests waiting for the database; retry later", ""};
  return {503, "unavailable", "the service cannot take requests right now; retrying is safe", ""};
}

ingest_actor::behavior_type ingest(ingest_actor::stateful_pointer<ingest_state> self,
                                   std::vector<dedup_shard_actor> shards, ingest_peers peers,
                                   ingest_config config) {
  install_logging_handlers(self);
  auto& init = self->state;
  init.shards = std::move(shards);
  init.writer = std::move(peers.writer);
  init.claims_writer = std::move(peers.claims_writer);
  init.reader = std::move(peers.reader);
  init.dispatcher = std::move(peers.dispatcher);
  init.clock = std::move(peers.clock);
  init.health = std::move(peers.health);
  init.metrics = std::move(peers.metrics);
  init.config = config;
  return {
      [self](submit_atom, domain::message_plan& plan, submit_callback& done) {
        auto& st = self->state;
        if (st.in_flight >= st.config.max_in_flight) {
          done(api::service_error{503, "overloaded", "too many requests in flight; retry later",
                                  ""});
          return;
        }
        auto& shard = st.shards[domain::shard_of(plan.message.key, st.shards.size())];
        auto trace_id = plan.message.trace_id;
        ++st.in_flight;
        self->request(shard, st.config.claim_timeout, claim_atom_v, std::move(plan))
            .then(
                [self, done](persistence::claim_result& result) {
                  --self->state.in_flight;
                  done(std::move(result));
                },
                [self, done, trace_id](caf::error& err) {
                  --self->state.in_flight;
                  log::warn("ingest.claim_failed",
                            {{"trace_id", trace_id}, {"error", describe(err)}});
                  done(to_service_error(err));
                });
      },
      // A batch goes to the store writer in one message, so that all its plans land in one
      // claim() transaction, instead of through the shards (a request per plan, each waiting
      // for a flush). As safe as the shards: uniqueness lives in the database and claim() (the
      // same key twice in one call: the first creates it, later ones are duplicates; a key
      // committed before, by a shard, another batch or another node: a duplicate; a key being
      // inserted by another open transaction: the unique index makes this insert wait for its
      // outcome), so a batch and a shard's claim of one key can never both create it. What the
      // shards add — resubmissions of a key in flight share one round trip — a batch does not need.
      // Created tasks are counted and dispatched as a shard does it (collect_created).
      [self](submit_atom, message_plans& plans, batch_callback& done) {
        auto& st = self->state;
        const auto items = plans.size();
        if (items == 0) {
          done(claim_results{});
          return;
        }
        // Counted by message, so a batch weighs what as many single submissions weigh.
        if (items > st.config.max_in_flight || st.in_flight > st.config.max_in_flight - items) {
          done(api::service_error{503, "overloaded", "too many requests in flight; retry later",
                                  ""});
          return;
        }
        st.in_flight += items;
        auto trace_id = plans.front().message.trace_id;
        // The planned tasks (not the content: the results carry the message as stored) are what
        // collect_created needs to dispatch what the claim created.
        auto planned = std::make_shared<std::vector<std::vector<domain::task_record>>>();
        planned->reserve(items);
        for (const auto& plan : plans)
          planned->push_back(plan.tasks);
        self->request(st.claims_writer, st.config.claim_timeout, claim_atom_v, std::move(plans))
            .then(
                [self, done, planned](claim_results& results) {
                  auto& state = self->state;
                  state.in_flight -= planned->size();
                  deliveries created;
                  for (std::size_t i = 0; i < results.size() && i < planned->size(); ++i)
                    collect_created(results[i], (*planned)[i], *state.metrics, created);
                  if (!created.empty())
                    self->send(state.dispatcher, dispatch_atom_v, std::move(created));
                  done(std::move(results));
                },
                [self, done, trace_id, items](caf::error& err) {
                  self->state.in_flight -= items;
                  log::warn("ingest.batch_claim_failed", {{"trace_id", trace_id},
                                                          {"messages", std::to_string(items)},
                                                          {"error", describe(err)}});
                  done(to_service_error(err));
                });
      },
      [self](find_atom, std::string& tenant, std::string& message_id, find_callback& done) {
        self->request(self->state.reader, self->state.config.claim_timeout, find_atom_v,
                      std::move(tenant), std::move(message_id))
            .then([done](maybe_message_view& view) { done(std::move(view)); },
                  [done](caf::error& err) {
                    log::warn("ingest.find_failed", {{"error", describe(err)}});
                    done(to_service_error(err));
                  });
      },
      [self](letters_atom, std::string& tenant, persistence::dead_letter_filter& filter,
             std::string& after, std::uint64_t limit, letters_callback& done) {
        self->request(self->state.reader, self->state.config.claim_timeout, letters_atom_v,
                      std::move(tenant), std::move(filter), std::move(after), limit)
            .then([done](dead_letters& letters) { done(std::move(letters)); },
                  [done](caf::error& err) {
                    log::warn("ingest.dead_letters_failed", {{"error", describe(err)}});
                    done(to_service_error(err));
                  });
      },
      [self](replay_atom, std::string& tenant, std::string& task_id, replay_callback& done) {
        auto& st = self->state;
        self->request(st.writer, st.config.claim_timeout, replay_atom_v, std::move(tenant), task_id,
                      st.clock->now())
            .then(
                [self, done, task_id](persistence::replay_result& result) {
                  if (result.task) {
                    log::info("ingest.replayed",
                              {{"task_id", task_id},
                               {"trace_id", result.task->trace_id},
                               {"attempts", std::to_string(result.task->attempts)}});
                    self->send(self->state.dispatcher, dispatch_atom_v, deliveries{*result.task});
                  }
                  done(std::move(result));
                },
                [done, task_id](caf::error& err) {
                  log::warn("ingest.replay_failed",
                            {{"task_id", task_id}, {"error", describe(err)}});
                  done(to_service_error(err));
                });
      },
      [self](stats_atom, persistence::stats_query& which, stats_callback& done) {
        self->request(self->state.reader, self->state.config.claim_timeout, stats_atom_v,
                      std::move(which))
            .then([done](stats_report& stats) { done(std::move(stats)); },
                  [done](caf::error& err) {
                    log::warn("ingest.stats_failed", {{"error", describe(err)}});
                    done(to_service_error(err));
                  });
      },
      [self](inbox_atom, persistence::inbox_query& which, inbox_callback& done) {
        self->request(self->state.reader, self->state.config.claim_timeout, inbox_atom_v,
                      std::move(which))
            .then([done](persistence::inbox_page& page) { done(std::move(page)); },
                  [done](caf::error& err) {
                    log::warn("ingest.inbox_failed", {{"error", describe(err)}});
                    done(to_service_error(err));
                  });
      },
      [self](item_atom, std::string& tenant, std::string& task_id, item_callback& done) {
        self->request(self->state.reader, self->state.config.claim_timeout, item_atom_v,
                      std::move(tenant), std::move(task_id))
            .then([done](maybe_inbox_item& item) { done(std::move(item)); },
                  [done](caf::error& err) {
                    log::warn("ingest.inbox_item_failed", {{"error", describe(err)}});
                    done(to_service_error(err));
                  });
      },
      [self](user_atom, std::string& tenant, std::string& user_id, user_callback& done) {
        self->request(self->state.reader, self->state.config.claim_timeout, user_atom_v,
                      std::move(tenant), std::move(user_id))
            .then([done](maybe_user_profile& user) { done(std::move(user)); },
                  [done](caf::error& err) {
                    log::warn("ingest.user_find_failed", {{"error", describe(err)}});
                    done(to_service_error(err));
                  });
      },
      // Through the writer, as replays: a user's changes are serialised with the group commits.
      [self](update_atom, std::string& tenant, std::string& user_id, domain::user_patch& patch,
             profile_callback& done) {
        auto& st = self->state;
        self->request(st.writer, st.config.claim_timeout, update_atom_v, std::move(tenant),
                      std::move(user_id), std::move(patch), st.clock->now())
            .then([done](domain::user_profile& user) { done(std::move(user)); },
                  [done](caf::error& err) {
                    log::warn("ingest.user_update_failed", {{"error", describe(err)}});
                    done(to_service_error(err));
                  });
      },
      [self](ready_atom, ready_callback& done) {
        // A component the supervisor could not keep running, or a channel that stopped
        // taking tasks, makes the node unready whatever the database says.
        if (auto problems = self->state.health->problems(); !problems.empty()) {
          done(false, problems);
          return;
        }
        auto timeout = self->state.config.probe_timeout;
        self->request(self->state.reader, timeout, ping_atom_v)
            .then(
                [self, done, timeout](bool) {
                  self->request(self->state.dispatcher, timeout, ping_atom_v)
                      .then(
                          [done](bool) { done(true, ""); },
                          [done](caf::error& err) { done(false, "dispatcher: " + describe(err)); });
                },
                [done](caf::error& err) { done(false, "database: " + describe(err)); });
      },
  };
}

} // namespace herald::actors
