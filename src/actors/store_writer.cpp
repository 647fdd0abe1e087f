#include "actors/store_writer.hpp"

#include "actors/logging_handlers.hpp"
#include "observability/log.hpp"

#include <algorithm>
#include <unordered_set>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

std::string store_writer_config::validate() const {
  return batch_max == 0 ? "store.batch_max must be at least 1" : "";
}

namespace {

using self_pointer = store_writer_actor::stateful_pointer<store_writer_state>;

void commit_claims(store_writer_state& st) {
  auto batch = std::move(st.claims);
  st.claims.clear();
  std::vector<domain::message_plan> plans;
  plans.reserve(batch.size());
  for (auto& pending : batch)
    plans.push_back(std::move(pending.plan));
  try {
    auto results = st.store->claim(plans);
    for (std::size_t i = 0; i < batch.size(); ++i)
      batch[i].promise.deliver(std::move(results[i]));
  } catch (const std::exception& e) {
    log::error("store.claim_failed",
               {{"messages", std::to_string(batch.size())}, {"error", e.what()}});
    for (auto& pending : batch)
      pending.promise.deliver(make_error(errc::store_unavailable, e.what()));
  }
}

void commit_applies(store_writer_state& st) {
  auto batch = std::move(st.applies);
  st.applies.clear();
  state_changes changes;
  attempt_records attempts;
  for (auto& pending : batch) {
    changes.insert(changes.end(), pending.changes.begin(), pending.changes.end());
    attempts.insert(attempts.end(), pending.attempts.begin(), pending.attempts.end());
  }
  try {
    auto applied_list = st.store->apply(changes, attempts);
    std::unordered_set<std::string> applied(applied_list.begin(), applied_list.end());
    for (auto& pending : batch) {
      task_ids mine;
      for (auto& change : pending.changes)
        if (applied.count(change.task_id) != 0)
          mine.push_back(change.task_id);
      pending.promise.deliver(std::move(mine));
    }
  } catch (const std::exception& e) {
    log::error("store.apply_failed",
               {{"changes", std::to_string(changes.size())}, {"error", e.what()}});
    for (auto& pending : batch)
      pending.promise.deliver(make_error(errc::store_unavailable, e.what()));
  }
}

void flush(store_writer_state& st) {
  st.flush_queued = false;
  if (!st.claims.empty())
    commit_claims(st);
  if (!st.applies.empty())
    commit_applies(st);
}

// Queues a flush behind everything already in the mailbox, or commits right away when the
// batch is full.
void schedule_flush(self_pointer self) {
  auto& st = self->state;
  if (st.claims.size() + st.applies.size() >= st.config.batch_max) {
    flush(st);
  } else if (!st.flush_queued) {
    st.flush_queued = true;
    self->send(self, flush_atom_v);
  }
}

} // namespace

store_writer_actor::behavior_type
store_writer(store_writer_actor::stateful_pointer<store_writer_state> self,
             std::shared_ptr<persistence::task_store> store, store_writer_config config) {
  install_logging_handlers(self);
  self->state.store = std::move(store);
  self->state.config = config;
  return {
      [self](claim_atom, domain::message_plan& plan) -> caf::result<persistence::claim_result> {
        auto promise = self->make_response_promise<persistence::claim_result>();
        self->state.claims.push_back({std::move(plan), promise});
        schedule_flush(self);
        return promise;
      },
      [self](apply_atom, state_changes& changes,
             attempt_records& attempts) -> caf::result<task_ids> {
        auto promise = self->make_response_promise<task_ids>();
        self->state.applies.push_back({std::move(changes), std::move(attempts), promise});
        schedule_flush(self);
        return promise;
      },
      [self](flush_atom) { flush(self->state); },
  };
}

} // namespace herald::actors
