#include "actors/store_writer.hpp"

#include "actors/logging_handlers.hpp"
#include "domain/masking.hpp"
#include "observability/log.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <random>
#include <unordered_set>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

std::string store_writer_config::validate() const {
  return batch_max == 0 ? "store.batch_max must be at least 1" : "";
}

namespace {

using self_pointer = store_writer_actor::stateful_pointer<store_writer_state>;

// What a claim took of its channels' offers: the places, whose epoch each channel's were, and
// the tasks the claim created taken (handed over after its commit).
struct taken_places {
  persistence::claim_takes takes;
  std::map<std::string, std::uint64_t> epochs;
  std::map<std::string, std::vector<domain::ready_call>> calls;
};

// Counts a committed claim's created and duplicate tasks, and keeps the created ones that are
// to be sent now (of a plan with `planned` tasks) for the next dispatch; those it created taken
// (in places of `taken`) for their channels.
void created_by_claim(store_writer_state& st, const persistence::claim_result& result,
                      const std::vector<domain::task_record>& planned,
                      taken_places* taken = nullptr) {
  for (const auto& outcome : result.tasks) {
    if (!outcome.created) {
      st.metrics->task_duplicate(outcome.channel);
      continue;
    }
    st.metrics->task_created(outcome.channel);
    if (outcome.policy_reason) {
      // Suppressed: nothing to send. Deferred: the sweep reads it with its own send time.
      if (outcome.state == domain::task_state::suppressed)
        st.metrics->task_suppressed(outcome.channel, domain::to_string(*outcome.policy_reason));
      else
        st.metrics->task_deferred(domain::to_string(*outcome.policy_reason));
      continue;
    }
    auto task = std::find_if(planned.begin(), planned.end(),
                             [&](auto& t) { return t.id == outcome.task_id; });
    // An escalation step too: its time is in the database (policy may have moved it), and
    // the sweep reads it from there before it is due.
    if (task == planned.end() || task->escalation)
      continue;
    auto delivery = domain::make_delivery(result.message, *task);
    delivery.recipient = outcome.recipient;       // the request's, or the user's stored contact
    if (outcome.take_token && taken != nullptr) { // SENDING: to its channel, for the call
      taken->calls[outcome.channel].push_back(
          {std::move(delivery), *outcome.take_token,
           taken->takes.by_channel.at(outcome.channel).lease_until});
      continue;
    }
    st.created.push_back(std::move(delivery));
  }
}

// A committed failover: counts each hop along the chain from `from` and what each claimed.
void created_by_failover(store_writer_state& st, std::string from,
                         const std::vector<persistence::fallback_link>& chain) {
  for (const auto& link : chain) {
    const auto& first = link.claim.tasks.front();
    st.metrics->failover(from, first.channel);
    created_by_claim(st, link.claim, link.plan.tasks);
    from = first.channel;
  }
}

// Receipts that made their tasks UNDELIVERED and failed them over in the same commit. Every
// outcome naming one task carries its fallback (several receipts of one task in one commit):
// counted and dispatched once.
void created_by_receipts(store_writer_state& st, const receipt_inputs& inputs,
                         const receipt_outcomes& outcomes) {
  std::unordered_set<std::string> seen;
  for (std::size_t i = 0; i < outcomes.size() && i < inputs.size(); ++i) {
    const auto& fallback = outcomes[i].fallback;
    if (!fallback || !seen.insert(fallback->task_id).second)
      continue;
    st.metrics->failover(inputs[i].channel, fallback->channel);
    st.metrics->task_created(fallback->channel);
    st.created.push_back(*fallback);
  }
}

// Hands what the commits since the last call created to the dispatcher, in one message.
void dispatch_created(self_pointer self) {
  auto& st = self->state;
  if (st.created.empty())
    return;
  if (st.dispatcher)
    self->send(st.dispatcher, dispatch_atom_v, std::move(st.created));
  st.created.clear(); // without a dispatcher (tests of the store alone) the sweep finds them
}

// Places for the plans' tasks from their channels' offers: as many as each channel has tasks
// here (only new ones that may go at once will use them; the rest go back after the commit).
taken_places take_places(store_writer_state& st, const std::vector<domain::message_plan>& plans) {
  taken_places taken;
  auto& takes = taken.takes;
  if (st.config.places.empty() || !st.config.clock || !st.dispatcher) // no one to hand them to
    return taken;
  std::map<std::string, std::size_t> wanted;
  for (const auto& plan : plans)
    for (const auto& task : plan.tasks)
      if (!task.escalation && st.config.places.count(task.channel) != 0)
        ++wanted[task.channel];
  takes.now = st.config.clock->now();
  takes.token_prefix = st.take_prefix;
  for (const auto& [channel, count] : wanted) {
    auto& places = *st.config.places.at(channel);
    const auto got = places.take(count);
    if (got.places == 0)
      continue;
    takes.by_channel.emplace(
        channel, persistence::claim_takes::channel_places{got.places, places.lease_owner(),
                                                          takes.now + places.lease()});
    taken.epochs.emplace(channel, got.epoch);
  }
  return taken;
}

// Gives each channel whose places a claim took the tasks it created taken, and the number of
// places it left unused (all of them when the claim failed).
void hand_over_taken(self_pointer self, taken_places& taken) {
  for (const auto& [channel, places] : taken.takes.by_channel) {
    taken_in_claim word{channel, std::move(taken.calls[channel]), 0, taken.epochs.at(channel)};
    word.unused = places.places - std::min(places.places, word.calls.size());
    self->send(self->state.dispatcher, taken_atom_v, std::move(word));
  }
}

// A claim that failed may have committed all the same (its answer lost): a task it inserted
// taken would then wait out its lease uncalled and be recovered as a call in doubt. Every task
// it may have taken goes back to wait as a retry due now, guarded by its take's token (only a
// row this claim inserted taken, and still SENDING, has it); if the store fails again, the
// lease runs out as for any SENDING task.
void release_taken(store_writer_state& st, const std::vector<domain::message_plan>& plans,
                   const persistence::claim_takes& takes) {
  state_changes back;
  for (const auto& plan : plans)
    for (const auto& task : plan.tasks) {
      if (takes.by_channel.count(task.channel) == 0)
        continue;
      persistence::state_change change;
      change.task_id = task.id;
      change.from = domain::task_state::sending;
      change.to = domain::task_state::retry_wait;
      change.at = takes.now;
      change.next_attempt_at = takes.now;
      change.last_error = "taken in a claim whose answer was lost: not sent";
      change.lease_token = takes.token_prefix + task.id;
      back.push_back(std::move(change));
    }
  if (back.empty())
    return;
  try {
    const auto released = st.store->apply(back, {});
    if (!released.empty())
      log::warn("store.claim_takes_released", {{"tasks", std::to_string(released.size())}});
  } catch (const std::exception& e) {
    log::error("store.claim_takes_release_failed", {{"tasks", std::to_string(back.size())},
                                                    {"error", domain::mask_free_text(e.what())}});
  }
}

// Single claims and whole batches go into one claim() call, each batch's plans together.
void commit_claims(self_pointer self) {
  auto& st = self->state;
  auto batch = std::move(st.claims);
  st.claims.clear();
  auto batches = std::move(st.claim_batches);
  st.claim_batches.clear();
  std::vector<domain::message_plan> plans;
  std::vector<std::size_t> batch_sizes;
  for (auto& pending : batch)
    plans.push_back(std::move(pending.plan));
  for (auto& pending : batches) {
    batch_sizes.push_back(pending.plans.size());
    std::move(pending.plans.begin(), pending.plans.end(), std::back_inserter(plans));
  }
  auto taken = take_places(st, plans);
  const auto& takes = taken.takes;
  claim_results results;
  try {
    results = st.store->claim(plans, takes);
  } catch (const std::exception& e) {
    log::error("store.claim_failed", {{"messages", std::to_string(plans.size())},
                                      {"error", domain::mask_free_text(e.what())}});
    for (auto& pending : batch)
      pending.promise.deliver(caf::make_error(errc::store_unavailable, e.what()));
    for (auto& pending : batches)
      pending.promise.deliver(caf::make_error(errc::store_unavailable, e.what()));
    if (!takes.by_channel.empty()) {
      release_taken(st, plans, takes);
      hand_over_taken(self, taken); // every place back
    }
    return;
  }
  for (std::size_t i = 0; i < results.size() && i < plans.size(); ++i)
    created_by_claim(st, results[i], plans[i].tasks, &taken);
  auto next = std::make_move_iterator(results.begin());
  for (auto& pending : batch)
    pending.promise.deliver(*next++);
  for (std::size_t b = 0; b < batches.size(); ++b) {
    claim_results mine(next, next + static_cast<std::ptrdiff_t>(batch_sizes[b]));
    next += static_cast<std::ptrdiff_t>(batch_sizes[b]);
    batches[b].promise.deliver(std::move(mine));
  }
  hand_over_taken(self, taken);
}

// Commits one group of applies in one transaction. Within a group no task is changed by two
// requests, so "this task's change applied" can be told to the one request that made it.
void commit_apply_group(store_writer_state& st,
                        std::vector<store_writer_state::pending_apply>& group) {
  state_changes changes;
  attempt_records attempts;
  for (auto& pending : group) {
    changes.insert(changes.end(), pending.changes.begin(), pending.changes.end());
    attempts.insert(attempts.end(), pending.attempts.begin(), pending.attempts.end());
  }
  try {
    auto applied_list = st.store->apply(changes, attempts);
    std::unordered_set<std::string> applied(applied_list.begin(), applied_list.end());
    for (auto& pending : group) {
      task_ids mine;
      for (auto& change : pending.changes)
        if (applied.count(change.task_id) != 0)
          mine.push_back(change.task_id);
      pending.promise.deliver(std::move(mine));
    }
  } catch (const std::exception& e) {
    log::error("store.apply_failed", {{"changes", std::to_string(changes.size())},
                                      {"error", domain::mask_free_text(e.what())}});
    for (auto& pending : group)
      pending.promise.deliver(caf::make_error(errc::store_unavailable, e.what()));
  }
}

// Splits the collected applies into consecutive groups where no task id appears in two
// requests (rare: e.g. a mark and a result of one task in one batch), one transaction each.
void commit_applies(store_writer_state& st) {
  auto batch = std::move(st.applies);
  st.applies.clear();
  std::vector<store_writer_state::pending_apply> group;
  std::unordered_set<std::string> in_group;
  for (auto& pending : batch) {
    auto clashes = std::any_of(pending.changes.begin(), pending.changes.end(),
                               [&](auto& change) { return in_group.count(change.task_id) != 0; });
    if (clashes) {
      commit_apply_group(st, group);
      group.clear();
      in_group.clear();
    }
    for (auto& change : pending.changes)
      in_group.insert(change.task_id);
    group.push_back(std::move(pending));
  }
  if (!group.empty())
    commit_apply_group(st, group);
}

// Records every collected receipt in one transaction, after the applies: a receipt that came
// with its task's SENT commit in the same batch finds the task SENT.
void commit_receipts(store_writer_state& st) {
  auto batch = std::move(st.receipts);
  st.receipts.clear();
  receipt_inputs all;
  auto now = batch.front().now;
  for (auto& pending : batch) {
    all.insert(all.end(), pending.receipts.begin(), pending.receipts.end());
    now = std::max(now, pending.now);
  }
  receipt_outcomes outcomes;
  try {
    outcomes = st.store->record_receipts(all, st.config.fallbacks, now);
  } catch (const std::exception& e) {
    log::error("store.receipts_failed", {{"receipts", std::to_string(all.size())},
                                         {"error", domain::mask_free_text(e.what())}});
    for (auto& pending : batch)
      pending.promise.deliver(caf::make_error(errc::store_unavailable, e.what()));
    return;
  }
  created_by_receipts(st, all, outcomes);
  std::size_t next = 0;
  for (auto& pending : batch) {
    receipt_outcomes mine(
        std::make_move_iterator(outcomes.begin() + static_cast<std::ptrdiff_t>(next)),
        std::make_move_iterator(outcomes.begin() +
                                static_cast<std::ptrdiff_t>(next + pending.receipts.size())));
    next += pending.receipts.size();
    pending.promise.deliver(std::move(mine));
  }
}

// Admits every collected push seal in one transaction, before the receipts: a push is acted on
// only once its seal is committed.
void commit_seals(store_writer_state& st) {
  auto batch = std::move(st.seals);
  st.seals.clear();
  std::vector<domain::push_seal> seals;
  auto now = batch.front().now;
  for (auto& pending : batch) {
    seals.push_back(std::move(pending.seal));
    now = std::max(now, pending.now);
  }
  try {
    auto admitted = st.store->admit_pushes(seals, now);
    for (std::size_t i = 0; i < batch.size(); ++i)
      batch[i].promise.deliver(static_cast<bool>(admitted.at(i)));
  } catch (const std::exception& e) {
    log::error("store.seals_failed",
               {{"seals", std::to_string(seals.size())}, {"error", e.what()}});
    for (auto& pending : batch)
      pending.promise.deliver(caf::make_error(errc::store_unavailable, e.what()));
  }
}

void flush(self_pointer self) {
  auto& st = self->state;
  st.flush_queued = false;
  if (!st.claims.empty() || !st.claim_batches.empty())
    commit_claims(self);
  if (!st.applies.empty())
    commit_applies(st);
  if (!st.seals.empty())
    commit_seals(st);
  if (!st.receipts.empty())
    commit_receipts(st);
  dispatch_created(self);
}

// Queues a flush behind everything already in the mailbox, or commits right away when the
// batch is full.
void schedule_flush(self_pointer self) {
  auto& st = self->state;
  std::size_t batched_plans = 0;
  for (const auto& pending : st.claim_batches)
    batched_plans += pending.plans.size();
  if (st.claims.size() + batched_plans + st.applies.size() + st.receipts.size() + st.seals.size() >=
      st.config.batch_max) {
    flush(self);
  } else if (!st.flush_queued) {
    st.flush_queued = true;
    self->send(self, flush_atom_v);
  }
}

} // namespace

store_writer_actor::behavior_type
store_writer(store_writer_actor::stateful_pointer<store_writer_state> self,
             std::shared_ptr<persistence::task_store> store,
             std::shared_ptr<herald::metrics> metrics, store_writer_config config) {
  install_logging_handlers(self);
  self->state.store = std::move(store);
  self->state.metrics = std::move(metrics);
  self->state.config = config;
  // Take tokens of claims: "claim-", 16 random hex digits, "-" and the task id, so no take of
  // this actor repeats another's, here or on another node.
  std::random_device random;
  char prefix[32];
  std::snprintf(prefix, sizeof(prefix), "claim-%08x%08x-", random(), random());
  self->state.take_prefix = prefix;
  return {
      [self](claim_atom, domain::message_plan& plan) -> caf::result<persistence::claim_result> {
        auto promise = self->make_response_promise<persistence::claim_result>();
        self->state.claims.push_back({std::move(plan), promise});
        schedule_flush(self);
        return promise;
      },
      [self](claim_atom, message_plans& plans) -> caf::result<claim_results> {
        if (plans.empty())
          return claim_results{};
        auto promise = self->make_response_promise<claim_results>();
        self->state.claim_batches.push_back({std::move(plans), promise});
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
      [self](receipt_atom, receipt_inputs& receipts,
             domain::timestamp now) -> caf::result<receipt_outcomes> {
        auto promise = self->make_response_promise<receipt_outcomes>();
        if (receipts.empty())
          return receipt_outcomes{};
        self->state.receipts.push_back({std::move(receipts), now, promise});
        schedule_flush(self);
        return promise;
      },
      [self](seal_atom, domain::push_seal& seal, domain::timestamp now) -> caf::result<bool> {
        auto promise = self->make_response_promise<bool>();
        self->state.seals.push_back({std::move(seal), now, promise});
        schedule_flush(self);
        return promise;
      },
      [self](failover_atom, const persistence::state_change& change,
             const attempt_records& attempts,
             const domain::delivery& failed) -> caf::result<persistence::failover_result> {
        auto& st = self->state;
        flush(self); // what came before is committed before, as in a batch
        persistence::failover_result result;
        try {
          result = st.store->fail_over(change, attempts, failed, st.config.fallbacks);
        } catch (const std::exception& e) {
          log::error("store.failover_failed",
                     {{"task_id", change.task_id}, {"error", domain::mask_free_text(e.what())}});
          return caf::make_error(errc::store_unavailable, e.what());
        }
        if (result.result == persistence::failover_result::outcome::failed_over &&
            !result.repeated) {
          created_by_failover(st, failed.channel, result.chain);
          dispatch_created(self);
        }
        return result;
      },
      [self](replay_atom, const std::string& tenant, const std::string& task_id,
             domain::timestamp now) -> caf::result<persistence::replay_result> {
        auto& st = self->state;
        flush(self);
        persistence::replay_result result;
        try {
          result = st.store->replay(tenant, task_id, now);
        } catch (const std::exception& e) {
          log::error("store.replay_failed",
                     {{"task_id", task_id}, {"error", domain::mask_free_text(e.what())}});
          return caf::make_error(errc::store_unavailable, e.what());
        }
        if (result.task) {
          st.created.push_back(*result.task);
          dispatch_created(self);
        }
        return result;
      },
      [self](update_atom, const std::string& tenant, const std::string& user_id,
             const domain::user_patch& patch,
             domain::timestamp now) -> caf::result<domain::user_profile> {
        auto& st = self->state;
        flush(self); // what came before is committed before, as in a batch
        try {
          return st.store->update_user(tenant, user_id, patch, now);
        } catch (const std::exception& e) {
          // Never the user id or the patch: they carry addresses.
          log::error("store.user_update_failed",
                     {{"tenant", tenant}, {"error", domain::mask_free_text(e.what())}});
          return caf::make_error(errc::store_unavailable, e.what());
        }
      },
      [self](attach_atom, dispatcher_actor& dispatcher) {
        self->state.dispatcher = std::move(dispatcher);
      },
      [self](flush_atom) { flush(self); },
  };
}

} // namespace herald::actors
