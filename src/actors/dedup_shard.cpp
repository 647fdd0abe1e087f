#include "actors/dedup_shard.hpp"

#include "actors/logging_handlers.hpp"

#include <algorithm>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

std::string dedup_shard_config::validate() const {
  if (max_waiting == 0)
    return "dedup.max_waiting must be at least 1";
  if (claim_timeout.count() <= 0)
    return "dedup.claim_timeout_ms must be > 0";
  return "";
}

namespace {

using self_pointer = dedup_shard_actor::stateful_pointer<dedup_shard_state>;

// Whether `result` already answers every task of `plan`, so a waiter can be answered from it.
bool answers(const persistence::claim_result& result, const domain::message_plan& plan) {
  return std::all_of(plan.tasks.begin(), plan.tasks.end(), [&](const domain::task_record& task) {
    return std::any_of(result.tasks.begin(), result.tasks.end(),
                       [&](const persistence::claim_outcome& o) { return o.task_id == task.id; });
  });
}

// The answer a waiter whose claim was covered by an earlier one gets: its tasks, all existing.
persistence::claim_result as_duplicate(const persistence::claim_result& result,
                                       const domain::message_plan& plan) {
  persistence::claim_result answer{result.message_id, {}, result.message};
  for (auto& task : plan.tasks)
    for (auto& outcome : result.tasks)
      if (outcome.task_id == task.id)
        answer.tasks.push_back(
            {outcome.task_id, outcome.channel, outcome.state, false, outcome.policy_reason, ""});
  return answer;
}

// The store writer counted and dispatched what the claim created.
void answer(self_pointer self, dedup_shard_state::waiter& waiter,
            persistence::claim_result result) {
  --self->state.waiting_claims;
  waiter.promise.deliver(std::move(result));
}

void claim_front(self_pointer self, const std::string& message_id);

void on_claimed(self_pointer self, const std::string& message_id,
                const persistence::claim_result& result) {
  auto entry = self->state.waiting.find(message_id);
  if (entry == self->state.waiting.end())
    return;
  auto& queue = entry->second;
  answer(self, queue.front(), result);
  queue.pop_front();
  // What the database just said also answers the resubmissions that arrived meanwhile.
  while (!queue.empty() && answers(result, queue.front().plan)) {
    auto duplicate = as_duplicate(result, queue.front().plan);
    for (const auto& outcome : duplicate.tasks) // never reached the writer, which counts the rest
      self->state.metrics->task_duplicate(outcome.channel);
    answer(self, queue.front(), std::move(duplicate));
    queue.pop_front();
  }
  if (queue.empty())
    self->state.waiting.erase(entry);
  else
    claim_front(self, message_id); // it names a channel the first claim did not
}

void on_failed(self_pointer self, const std::string& message_id, const caf::error& err) {
  auto entry = self->state.waiting.find(message_id);
  if (entry == self->state.waiting.end())
    return;
  // Every waiter of this key would hit the same failure: answer them all.
  for (auto& waiter : entry->second)
    waiter.promise.deliver(err);
  self->state.waiting_claims -= entry->second.size();
  self->state.waiting.erase(entry);
}

void claim_front(self_pointer self, const std::string& message_id) {
  auto& st = self->state;
  auto& plan = st.waiting[message_id].front().plan;
  self->request(st.store, st.config.claim_timeout, claim_atom_v, plan)
      .then([self, message_id](
                persistence::claim_result& result) { on_claimed(self, message_id, result); },
            [self, message_id](caf::error& err) { on_failed(self, message_id, err); });
}

} // namespace

dedup_shard_actor::behavior_type
dedup_shard(dedup_shard_actor::stateful_pointer<dedup_shard_state> self, store_writer_actor store,
            std::shared_ptr<herald::metrics> metrics, dedup_shard_config config) {
  install_logging_handlers(self);
  auto& init = self->state;
  init.store = std::move(store);
  init.metrics = std::move(metrics);
  init.config = config;
  return {
      [self](claim_atom, domain::message_plan& plan) -> caf::result<persistence::claim_result> {
        auto& st = self->state;
        if (st.waiting_claims >= st.config.max_waiting)
          return caf::make_error(errc::overloaded,
                                 "dedup shard: " + std::to_string(st.waiting_claims) +
                                     " claims waiting for the database");
        auto promise = self->make_response_promise<persistence::claim_result>();
        auto message_id = plan.message.id;
        ++st.waiting_claims;
        auto& queue = st.waiting[message_id];
        queue.push_back({std::move(plan), promise});
        if (queue.size() == 1)
          claim_front(self, message_id);
        return promise;
      },
  };
}

} // namespace herald::actors
