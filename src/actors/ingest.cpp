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

namespace {

caf::error too_busy() {
  return caf::make_error(errc::overloaded, "too many requests in flight; retry later");
}

} // namespace

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
  init.config = config;
  return {
      [self](submit_atom, domain::message_plan& plan) {
        auto& st = self->state;
        auto answer = self->make_response_promise<persistence::claim_result>();
        if (st.in_flight >= st.config.max_in_flight) {
          answer.deliver(too_busy());
          return answer;
        }
        auto& shard = st.shards[domain::shard_of(plan.message.key, st.shards.size())];
        auto trace_id = plan.message.trace_id;
        ++st.in_flight;
        // No timeout of its own: the shard bounds each store request by dedup.claim_timeout
        // (shorter than ingest's). A claim queued behind others of its key (a resubmission
        // naming another channel) waits for them first, and a shard that died holding claims
        // (a bug; /readyz names it, and their in_flight places stay taken until the node
        // restarts) never answers: the HTTP layer's answer timeout bounds both.
        self->request(shard, caf::infinite, claim_atom_v, std::move(plan))
            .then(
                [self, answer](persistence::claim_result& result) mutable {
                  --self->state.in_flight;
                  answer.deliver(std::move(result));
                },
                [self, answer, trace_id](caf::error& err) mutable {
                  --self->state.in_flight;
                  log::warn("ingest.claim_failed",
                            {{"trace_id", trace_id}, {"error", describe(err)}});
                  answer.deliver(std::move(err));
                });
        return answer;
      },
      // A batch goes to the store writer in one message, so that all its plans land in one
      // claim() transaction, instead of through the shards (a request per plan, each waiting
      // for a flush). As safe as the shards: uniqueness lives in the database and claim() (the
      // same key twice in one call: the first creates it, later ones are duplicates; a key
      // committed before, by a shard, another batch or another node: a duplicate; a key being
      // inserted by another open transaction: the unique index makes this insert wait for its
      // outcome), so a batch and a shard's claim of one key can never both create it. What the
      // shards add — resubmissions of a key in flight share one round trip — a batch does not need.
      // The writer counts and dispatches what the claim created, as for a shard's.
      [self](submit_atom, message_plans& plans) {
        auto& st = self->state;
        auto answer = self->make_response_promise<claim_results>();
        const auto items = plans.size();
        if (items == 0) {
          answer.deliver(claim_results{});
          return answer;
        }
        // Counted by message, so a batch weighs what as many single submissions weigh.
        if (items > st.config.max_in_flight || st.in_flight > st.config.max_in_flight - items) {
          answer.deliver(too_busy());
          return answer;
        }
        st.in_flight += items;
        auto trace_id = plans.front().message.trace_id;
        self->request(st.claims_writer, st.config.claim_timeout, claim_atom_v, std::move(plans))
            .then(
                [self, answer, items](claim_results& results) mutable {
                  self->state.in_flight -= items;
                  answer.deliver(std::move(results));
                },
                [self, answer, trace_id, items](caf::error& err) mutable {
                  self->state.in_flight -= items;
                  log::warn("ingest.batch_claim_failed", {{"trace_id", trace_id},
                                                          {"messages", std::to_string(items)},
                                                          {"error", describe(err)}});
                  answer.deliver(std::move(err));
                });
        return answer;
      },
      // Reads go to the reader as they are; its answer (or error) goes straight to the caller.
      [self](find_atom, std::string& tenant, std::string& message_id) {
        return self->delegate(self->state.reader, find_atom_v, std::move(tenant),
                              std::move(message_id));
      },
      [self](letters_atom, std::string& tenant, persistence::dead_letter_filter& filter,
             std::string& after, std::uint64_t limit) {
        return self->delegate(self->state.reader, letters_atom_v, std::move(tenant),
                              std::move(filter), std::move(after), limit);
      },
      [self](stats_atom, persistence::stats_query& which) {
        return self->delegate(self->state.reader, stats_atom_v, std::move(which));
      },
      [self](inbox_atom, persistence::inbox_query& which) {
        return self->delegate(self->state.reader, inbox_atom_v, std::move(which));
      },
      [self](item_atom, std::string& tenant, std::string& task_id) {
        return self->delegate(self->state.reader, item_atom_v, std::move(tenant),
                              std::move(task_id));
      },
      [self](user_atom, std::string& tenant, std::string& user_id) {
        return self->delegate(self->state.reader, user_atom_v, std::move(tenant),
                              std::move(user_id));
      },
      // Through the writer, as replays: a user's changes are serialised with the group commits.
      [self](update_atom, std::string& tenant, std::string& user_id, domain::user_patch& patch) {
        auto& st = self->state;
        return self->delegate(st.writer, update_atom_v, std::move(tenant), std::move(user_id),
                              std::move(patch), st.clock->now());
      },
      // Through the writer, which dispatches the replayed task once committed.
      [self](replay_atom, std::string& tenant, std::string& task_id) {
        auto& st = self->state;
        auto answer = self->make_response_promise<persistence::replay_result>();
        self->request(st.writer, st.config.claim_timeout, replay_atom_v, std::move(tenant), task_id,
                      st.clock->now())
            .then(
                [answer, task_id](persistence::replay_result& result) mutable {
                  if (result.task) // the writer dispatched it
                    log::info("ingest.replayed",
                              {{"task_id", task_id},
                               {"trace_id", result.task->trace_id},
                               {"attempts", std::to_string(result.task->attempts)}});
                  answer.deliver(std::move(result));
                },
                [answer, task_id](caf::error& err) mutable {
                  log::warn("ingest.replay_failed",
                            {{"task_id", task_id}, {"error", describe(err)}});
                  answer.deliver(std::move(err));
                });
        return answer;
      },
      [self](ready_atom) {
        auto answer = self->make_response_promise<bool, std::string>();
        // A component the supervisor could not keep running, or a channel that stopped
        // taking tasks, makes the node unready whatever the database says.
        if (auto problems = self->state.health->problems(); !problems.empty()) {
          answer.deliver(false, std::move(problems));
          return answer;
        }
        auto timeout = self->state.config.probe_timeout;
        auto unready = [answer](std::string reason) mutable {
          answer.deliver(false, std::move(reason));
        };
        self->request(self->state.reader, timeout, ping_atom_v)
            .then(
                [self, answer, unready, timeout](bool) {
                  self->request(self->state.dispatcher, timeout, ping_atom_v)
                      .then([answer](bool) mutable { answer.deliver(true, std::string{}); },
                            [unready](caf::error& err) mutable {
                              unready("dispatcher: " + describe(err));
                            });
                },
                [unready](caf::error& err) mutable { unready("database: " + describe(err)); });
        return answer;
      },
  };
}

} // namespace herald::actors
