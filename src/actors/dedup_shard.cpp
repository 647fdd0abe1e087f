#include "actors/dedup_shard.hpp"

#include "actors/logging_handlers.hpp"

#include <algorithm>

#include <caf/sec.hpp>
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

// The claims of `message_id` if its front is still at the store under `request`: an answer
// that comes after its deadline has passed (and maybe after a new request for the same key)
// is not the answer that is awaited.
dedup_shard_state::key_claims* awaiting(self_pointer self, const std::string& message_id,
                                        std::uint64_t request) {
  auto entry = self->state.waiting.find(message_id);
  if (entry == self->state.waiting.end() || entry->second.at_store != request)
    return nullptr;
  return &entry->second;
}

// Forgets the deadlines at the front whose requests were answered, so the timer is armed for
// a request still waiting.
void forget_answered(self_pointer self) {
  self->state.deadlines.forget_front([self](const dedup_shard_state::store_request& request) {
    return awaiting(self, request.message_id, request.number) == nullptr;
  });
}

void arm_timer(self_pointer self) {
  auto& st = self->state;
  auto next = st.deadlines.next();
  if (st.timer_armed || !next)
    return;
  st.timer_armed = true;
  self->delayed_send(self, std::max<caf::timespan>(*next - self->clock().now(), caf::timespan{0}),
                     tick_atom_v);
}

void claim_front(self_pointer self, const std::string& message_id);

void on_claimed(self_pointer self, const std::string& message_id, std::uint64_t request,
                const persistence::claim_result& result) {
  auto* claims = awaiting(self, message_id, request);
  if (claims == nullptr)
    return;
  auto& queue = claims->waiters;
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
    self->state.waiting.erase(message_id);
  else
    claim_front(self, message_id); // it names a channel the first claim did not
  forget_answered(self);
}

void on_failed(self_pointer self, const std::string& message_id, std::uint64_t request,
               const caf::error& err) {
  auto* claims = awaiting(self, message_id, request);
  if (claims == nullptr)
    return;
  // Every waiter of this key would hit the same failure: answer them all.
  for (auto& waiter : claims->waiters)
    waiter.promise.deliver(err);
  self->state.waiting_claims -= claims->waiters.size();
  self->state.waiting.erase(message_id);
  forget_answered(self);
}

// Sends the front claim of `message_id` to the store. Its plan moves into the request: once
// sent, only the waiters behind it are compared with the answer.
void claim_front(self_pointer self, const std::string& message_id) {
  auto& st = self->state;
  auto& claims = st.waiting[message_id];
  auto request = ++st.requests_made;
  claims.at_store = request;
  st.deadlines.push(self->clock().now() + st.config.claim_timeout, {message_id, request});
  arm_timer(self);
  // No timeout of its own: the deadline above (one timer for all) bounds the wait.
  self->request(st.store, caf::infinite, claim_atom_v, std::move(claims.waiters.front().plan))
      .then(
          [self, message_id, request](persistence::claim_result& result) {
            on_claimed(self, message_id, request, result);
          },
          [self, message_id, request](caf::error& err) {
            on_failed(self, message_id, request, err);
          });
}

// Answers the requests whose deadline passed as timed out, then re-arms for the next one.
void expire(self_pointer self) {
  auto& st = self->state;
  st.timer_armed = false;
  st.deadlines.expire(self->clock().now(), [self](const dedup_shard_state::store_request& request) {
    on_failed(self, request.message_id, request.number, caf::make_error(caf::sec::request_timeout));
  });
  forget_answered(self);
  arm_timer(self);
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
        auto& queue = st.waiting[message_id].waiters;
        queue.push_back({std::move(plan), promise});
        if (queue.size() == 1)
          claim_front(self, message_id);
        return promise;
      },
      [self](tick_atom) { expire(self); },
  };
}

} // namespace herald::actors
