#include "actors/store_writer.hpp"

#include "actors/logging_handlers.hpp"
#include "domain/masking.hpp"
#include "observability/log.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <optional>
#include <random>
#include <string_view>
#include <tuple>
#include <unordered_set>
#include <utility>

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

// What one flush commits, and whom its outcome answers.
struct flushed {
  std::vector<store_writer_state::pending_claim> claims;
  std::vector<store_writer_state::pending_claim_batch> claim_batches;
  std::vector<store_writer_state::pending_apply> applies;
  std::vector<std::size_t> group_of; ///< the change group of each apply
  std::vector<store_writer_state::pending_seal> seals;
  std::vector<store_writer_state::pending_receipts> receipts;

  template <class Visit> void each_promise(Visit&& visit) {
    for (auto& p : claims)
      visit(p.promise);
    for (auto& p : claim_batches)
      visit(p.promise);
    for (auto& p : applies)
      visit(p.promise);
    for (auto& p : seals)
      visit(p.promise);
    for (auto& p : receipts)
      visit(p.promise);
  }
};

// Moves what waits into one unit of work, in the order a batch commits: claims (single ones,
// then whole batches, each batch's plans together), state changes, push seals (a push is acted
// on only once its seal is committed), receipts (after the changes: a receipt that came with
// its task's SENT commit finds the task SENT).
persistence::unit_of_work collect(store_writer_state& st, flushed& f) {
  persistence::unit_of_work work;
  f.claims = std::move(st.claims);
  f.claim_batches = std::move(st.claim_batches);
  f.applies = std::move(st.applies);
  f.seals = std::move(st.seals);
  f.receipts = std::move(st.receipts);
  st.claims.clear();
  st.claim_batches.clear();
  st.applies.clear();
  st.seals.clear();
  st.receipts.clear();
  for (auto& pending : f.claims)
    work.claims.push_back(std::move(pending.plan));
  for (auto& pending : f.claim_batches)
    std::move(pending.plans.begin(), pending.plans.end(), std::back_inserter(work.claims));
  // Consecutive groups where no task is changed by two requests (rare: e.g. a mark and a result
  // of one task in one batch), so "this task's change applied" is told to the one that made it.
  std::unordered_set<std::string> in_group;
  for (auto& pending : f.applies) {
    const bool clashes =
        std::any_of(pending.changes.begin(), pending.changes.end(),
                    [&](auto& change) { return in_group.count(change.task_id) != 0; });
    if (work.changes.empty() || clashes) {
      work.changes.emplace_back();
      in_group.clear();
    }
    auto& group = work.changes.back();
    for (auto& change : pending.changes)
      in_group.insert(change.task_id);
    group.changes.insert(group.changes.end(), pending.changes.begin(), pending.changes.end());
    group.attempts.insert(group.attempts.end(), pending.attempts.begin(), pending.attempts.end());
    f.group_of.push_back(work.changes.size() - 1);
  }
  std::optional<domain::timestamp> now;
  const auto later = [&](domain::timestamp at) { now = now ? std::max(*now, at) : at; };
  for (auto& pending : f.seals) {
    work.seals.push_back(pending.seal);
    later(pending.now);
  }
  for (auto& pending : f.receipts) {
    work.receipts.insert(work.receipts.end(), pending.receipts.begin(), pending.receipts.end());
    later(pending.now);
  }
  if (!work.receipts.empty())
    work.receipt_fallbacks = st.config.fallbacks;
  work.now = now.value_or(domain::timestamp{});
  return work;
}

// Whether the outcome answers every command of the unit (else a store broke its contract).
bool answers_all(const persistence::commit_outcome& outcome,
                 const persistence::unit_of_work& work) {
  return outcome.claims.size() == work.claims.size() &&
         outcome.applied.size() == work.changes.size() &&
         outcome.seals_admitted.size() == work.seals.size() &&
         outcome.receipts.size() == work.receipts.size();
}

// Counts and answers what the commit did, and keeps what it created for the dispatch.
void follow_up(self_pointer self, flushed& f, const persistence::unit_of_work& work,
               persistence::commit_outcome& outcome, taken_places& taken) {
  auto& st = self->state;
  for (std::size_t i = 0; i < outcome.claims.size(); ++i)
    created_by_claim(st, outcome.claims[i], work.claims[i].tasks, &taken);
  auto next = std::make_move_iterator(outcome.claims.begin());
  for (auto& pending : f.claims)
    pending.promise.deliver(*next++);
  for (auto& pending : f.claim_batches) {
    const auto size = static_cast<std::ptrdiff_t>(pending.plans.size());
    pending.promise.deliver(claim_results(next, next + size));
    next += size;
  }
  for (std::size_t a = 0; a < f.applies.size(); ++a) {
    const auto& ids = outcome.applied[f.group_of[a]];
    const std::unordered_set<std::string_view> applied(ids.begin(), ids.end());
    task_ids mine;
    for (auto& change : f.applies[a].changes)
      if (applied.count(change.task_id) != 0)
        mine.push_back(change.task_id);
    f.applies[a].promise.deliver(std::move(mine));
  }
  for (auto& fallback : outcome.caught_up_fallbacks) {
    log::info("store.undelivered_failed_over", {{"task_id", fallback.failed_task_id},
                                                {"trace_id", fallback.task.trace_id},
                                                {"fallback_task_id", fallback.task.task_id}});
    st.metrics->failover(fallback.failed_channel, fallback.task.channel);
    st.metrics->task_created(fallback.task.channel);
    st.created.push_back(std::move(fallback.task));
  }
  for (const auto& channel : outcome.suppressed_escalations)
    st.metrics->task_suppressed(channel,
                                domain::to_string(domain::policy_reason::read_before_escalation));
  for (std::size_t i = 0; i < f.seals.size(); ++i)
    f.seals[i].promise.deliver(static_cast<bool>(outcome.seals_admitted[i]));
  created_by_receipts(st, work.receipts, outcome.receipts);
  std::size_t first = 0;
  for (auto& pending : f.receipts) {
    const auto from = outcome.receipts.begin() + static_cast<std::ptrdiff_t>(first);
    const auto count = static_cast<std::ptrdiff_t>(pending.receipts.size());
    pending.promise.deliver(
        receipt_outcomes(std::make_move_iterator(from), std::make_move_iterator(from + count)));
    first += pending.receipts.size();
  }
}

// Commits `work`, then answers `f`'s waiters from the outcome and hands the tasks it created
// taken to their channels. On failure nobody is answered yet and the reason is returned: the
// commit may have happened all the same (a lost answer), so nothing taken is handed over.
std::optional<std::string> commit_and_follow_up(self_pointer self, flushed& f,
                                                const persistence::unit_of_work& work,
                                                taken_places& taken) {
  persistence::commit_outcome outcome;
  try {
    outcome = self->state.store->commit(work);
  } catch (const std::exception& e) {
    return std::string{e.what()};
  }
  if (!answers_all(outcome, work))
    return std::string{"the store's outcome does not answer every command"};
  follow_up(self, f, work, outcome, taken);
  hand_over_taken(self, taken);
  return std::nullopt;
}

void fail_all(flushed& f, const persistence::unit_of_work& work, const std::string& why) {
  log::error("store.commit_failed", {{"messages", std::to_string(work.claims.size())},
                                     {"change_groups", std::to_string(work.changes.size())},
                                     {"seals", std::to_string(work.seals.size())},
                                     {"receipts", std::to_string(work.receipts.size())},
                                     {"error", domain::mask_free_text(why)}});
  f.each_promise(
      [&](auto& promise) { promise.deliver(caf::make_error(errc::store_unavailable, why)); });
}

// A failed unit split into one unit per kind of command, each with its own waiters, so a
// command the database keeps refusing fails its own waiters only. Every command is idempotent
// (keys, guards, take tokens), so committing one again after a lost answer is safe.
std::vector<std::pair<flushed, persistence::unit_of_work>>
split_by_kind(flushed& f, persistence::unit_of_work& work) {
  std::vector<std::pair<flushed, persistence::unit_of_work>> parts;
  const auto part = [&] {
    auto& [mine, unit] = parts.emplace_back();
    unit.receipt_fallbacks = work.receipt_fallbacks;
    unit.now = work.now;
    return std::tie(mine, unit);
  };
  if (!work.claims.empty()) {
    auto [mine, unit] = part();
    mine.claims = std::move(f.claims);
    mine.claim_batches = std::move(f.claim_batches);
    unit.claims = std::move(work.claims);
  }
  if (!work.changes.empty()) {
    auto [mine, unit] = part();
    mine.applies = std::move(f.applies);
    mine.group_of = std::move(f.group_of);
    unit.changes = std::move(work.changes);
  }
  if (!work.seals.empty()) {
    auto [mine, unit] = part();
    mine.seals = std::move(f.seals);
    unit.seals = std::move(work.seals);
  }
  if (!work.receipts.empty()) {
    auto [mine, unit] = part();
    mine.receipts = std::move(f.receipts);
    unit.receipts = std::move(work.receipts);
  }
  return parts;
}

// Commits everything collected since the last flush in ONE transaction, answers every waiter
// from its outcome, and hands what it created on. If that fails, what the claims took goes
// back, and a unit of several kinds of command is committed again one kind at a time.
void flush(self_pointer self) {
  auto& st = self->state;
  st.flush_queued = false;
  flushed f;
  auto work = collect(st, f);
  if (!work.empty()) {
    auto taken = take_places(st, work.claims);
    work.takes = taken.takes;
    if (auto failure = commit_and_follow_up(self, f, work, taken)) {
      if (!work.takes.by_channel.empty()) {
        release_taken(st, work.claims, work.takes);
        hand_over_taken(self, taken); // every place back
        work.takes = {};
      }
      auto parts = split_by_kind(f, work);
      if (parts.size() == 1) {
        fail_all(parts[0].first, parts[0].second, *failure);
      } else {
        log::warn("store.commit_split", {{"parts", std::to_string(parts.size())},
                                         {"error", domain::mask_free_text(*failure)}});
        for (auto& [mine, unit] : parts) {
          taken_places none;
          if (auto again = commit_and_follow_up(self, mine, unit, none))
            fail_all(mine, unit, *again);
        }
      }
    }
  }
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
