#include "actors/channel_actor.hpp"

#include "actors/channel_internal.hpp"
#include "actors/logging_handlers.hpp"
#include "domain/masking.hpp"
#include "observability/log.hpp"

#include <algorithm>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

std::string channel_settings::validate() const {
  auto problem = [&](const std::string& what) { return "channel '" + name + "': " + what; };
  if (name.empty())
    return "channel name must not be empty";
  if (!(rate_per_sec > 0))
    return problem("rate_per_sec must be > 0");
  if (!(burst >= 1))
    return problem("burst must be >= 1");
  if (window == 0)
    return problem("window must be >= 1");
  if (retry.max_attempts == 0)
    return problem("retry.max_attempts must be >= 1");
  if (retry.schedule.empty())
    return problem("retry.schedule_ms must not be empty");
  if (questions.max_attempts == 0)
    return problem("status_questions.max must be >= 1");
  if (questions.schedule.empty())
    return problem("status_questions.schedule_ms must not be empty");
  if (circuit_failure_threshold == 0)
    return problem("circuit.failure_threshold must be >= 1");
  if (lease.count() <= 0)
    return problem("lease_ms must be > 0");
  if (queue_limit < window)
    return problem("queue_limit must be >= window");
  return "";
}

domain::channel_pacing channel_settings::pacing() const {
  domain::channel_pacing pacing;
  pacing.rate_per_sec = rate_per_sec;
  pacing.burst = burst;
  pacing.window = window;
  pacing.queue_limit = queue_limit;
  pacing.circuit_failure_threshold = circuit_failure_threshold;
  pacing.circuit_cool_down = circuit_cool_down;
  pacing.throttle_pause = throttle_pause;
  pacing.call_budget = call_budget;
  return pacing;
}

namespace channel_detail {

// A guarded change of `task` from its current state; the lease is released unless set.
persistence::state_change change_of(const domain::delivery& task, task_state to,
                                    std::uint32_t attempts, domain::timestamp now,
                                    std::string last_error) {
  persistence::state_change change;
  change.task_id = task.task_id;
  change.from = task.state;
  change.to = to;
  change.attempts = attempts;
  change.last_error = std::move(last_error);
  change.at = now;
  change.escalation = task.escalation;
  return change;
}

int circuit_gauge(domain::circuit_breaker::state s) {
  switch (s) {
  case domain::circuit_breaker::state::closed:
    return 0;
  case domain::circuit_breaker::state::open:
    return 1;
  case domain::circuit_breaker::state::half_open:
    return 2;
  }
  return 0;
}

constexpr std::chrono::milliseconds first_rewrite_delay{100};
constexpr std::chrono::milliseconds max_rewrite_delay{5000};

// The task left this channel (recorded, or taken by another sender): nothing of it is kept.
void forget(channel_state& st, const std::string& task_id) {
  st.known.erase(task_id);
  st.no_failover.erase(task_id);
  st.asked.erase(task_id);
}

std::string component_name(const channel_state& st) {
  return "channel " + st.settings.name;
}

// Sets the places open to claims to `places`; what claims took of the earlier offer is on its
// way here (taken_in_claim) and spends take tokens as tasks out of the lanes do.
void offer_places(channel_state& st, std::size_t places, domain::timestamp now) {
  if (!st.places)
    return;
  const auto taken = st.places->offer(places);
  st.in_transit += taken;
  st.scheduler->taken_at_claim(taken, now);
}

// A write failed: keep it and send it again, as it was, after a backoff; meanwhile the channel
// takes no new task and says so on the health board.
void rewrite_later(self_pointer self, std::function<void()> write, const caf::error& err,
                   bool was_failing) {
  auto& st = self->state;
  if (!was_failing)
    st.failing += 1;
  offer_places(st, 0, st.clock->now()); // no new task while a write fails
  st.metrics->store_write_retry(st.settings.name);
  log::warn("channel.store_write_retry", {{"channel", st.settings.name},
                                          {"error", describe(err)},
                                          {"held", std::to_string(st.failing)}});
  // /readyz is unauthenticated: it names the problem, the log carries the database's words.
  if (st.health)
    st.health->report(component_name(st), "store writes failing; " + std::to_string(st.failing) +
                                              " held until recorded, no new task taken");
  const bool timer_running = !st.rewrites.empty();
  st.rewrites.push_back(std::move(write));
  if (timer_running)
    return;
  st.rewrite_delay = st.rewrite_delay.count() == 0
                         ? first_rewrite_delay
                         : std::min(st.rewrite_delay * 2, max_rewrite_delay);
  self->delayed_send(self, st.rewrite_delay, rewrite_atom_v);
}

// A write of a task's change goes to the store, or its answer came back. One that settles a call
// (the change leaves SENDING: until it commits, the task is SENDING under this node, and a crash
// would leave it in doubt) holds the task's place in the window meanwhile.
bool settles_call(const persistence::state_change& change) {
  return change.from == task_state::sending;
}
void write_sent(channel_state& st, bool settles) {
  st.writing += 1;
  st.settling += settles ? 1 : 0;
}
void write_ended(channel_state& st, bool settles) {
  st.writing -= 1;
  st.settling -= settles ? 1 : 0;
}

void answer_drain_if_idle(channel_state& st) {
  if (!st.draining || !st.calls.empty() || st.marking != 0 || st.scheduler->ready_count() != 0 ||
      st.writing != 0 || st.failing != 0 || st.in_transit != 0)
    return;
  for (auto& waiter : st.drain_waiters)
    waiter.deliver(true);
  st.drain_waiters.clear();
}

// A write answered (applied or not), its count already taken off: the window may have room
// again. If it had failed before, one fewer is failing; when none is, the channel is well again.
void write_answered(self_pointer self, bool was_failing) {
  auto& st = self->state;
  if (was_failing && --st.failing == 0) {
    st.rewrite_delay = std::chrono::milliseconds{0};
    if (st.health)
      st.health->clear(component_name(st));
    log::info("channel.store_writes_recovered", {{"channel", st.settings.name}});
  }
  answer_drain_if_idle(st);
  pump(self);
}

// A tick already on its way that comes as soon serves; a later one does not (a throttle pause
// or an open circuit must not hold up a call token's short wait), so a sooner one goes too.
void queue_tick(self_pointer self, std::chrono::microseconds after) {
  auto& st = self->state;
  after = std::max(after, std::chrono::microseconds{1000});
  const auto due = st.clock->now() + after;
  if (st.tick_due && *st.tick_due <= due)
    return;
  st.tick_due = due;
  self->delayed_send(self, after, tick_atom_v);
}

// Whether the task's next call asks the provider about an earlier call instead of sending.
bool asks_first(const channel_state& st, const domain::delivery& task) {
  return task.state == task_state::sending && st.asked.count(task.task_id) == 0 &&
         st.provider->can_query_status();
}

void start_call(self_pointer self, domain::delivery task, std::string take_token) {
  auto& st = self->state;
  if (asks_first(st, task)) {
    ask_provider(self, std::move(task), std::move(take_token));
    return;
  }
  st.asked.erase(task.task_id);
  if (task.state ==
      task_state::sending) { // recovered SENDING: the earlier call's outcome is unknown
    st.metrics->ambiguous_resend(st.settings.name);
    log::warn("channel.ambiguous_resend", {{"channel", st.settings.name},
                                           {"task_id", task.task_id},
                                           {"provider_request_id", task.provider_request_id},
                                           {"trace_id", task.trace_id}});
  }
  providers::provider_request request{
      task.task_id, task.channel, task.recipient, task.provider_request_id,
      task.title,   task.body,    task.trace_id,  task.attempts + 1};
  auto task_id = task.task_id;
  task.state = task_state::sending;
  st.calls.emplace(task_id,
                   channel_state::call{std::move(task), st.clock->now(), std::move(take_token)});
  auto handle = caf::actor_cast<channel_actor>(self);
  auto done = [handle, task_id](providers::provider_result result) {
    caf::anon_send(handle, result_atom_v, task_id, std::move(result));
  };
  try {
    st.provider->send(std::move(request), done);
  } catch (const std::exception& e) { // adapters must not throw; if one does, retry later
    done({call_outcome::retryable, std::string{"adapter threw: "} + e.what(), std::nullopt});
  }
}

// Commits SENDING with our lease for `batch`, then calls the provider for each task whose
// change applied. A task found SENDING by recovery goes the same way: the guarded change
// renews the lease before the resend. Each change carries its take's token, so when the answer
// is an error (the commit may have landed all the same) the same changes are sent again and the
// store answers exactly which of them are ours.
void commit_sending(self_pointer self, std::vector<domain::delivery> batch, state_changes changes,
                    bool was_failing) {
  self->request(self->state.store, self->state.settings.store_timeout, apply_atom_v, changes,
                attempt_records{})
      .then(
          [self, batch, changes, was_failing](task_ids& applied) mutable {
            auto& st = self->state;
            st.marking -= batch.size();
            std::unordered_set<std::string> moved(applied.begin(), applied.end());
            for (std::size_t i = 0; i < batch.size(); ++i) {
              auto& task = batch[i];
              if (moved.count(task.task_id) != 0) {
                st.scheduler->ready(
                    {std::move(task), *changes[i].lease_token, *changes[i].lease_until});
                continue;
              }
              // Another sender got there first, or the task moved on: not ours to send.
              forget(st, task.task_id);
              st.scheduler->abandon_probe(task.task_id);
              log::debug("channel.skip_stale", {{"channel", st.settings.name},
                                                {"task_id", task.task_id},
                                                {"trace_id", task.trace_id}});
            }
            write_answered(self, was_failing);
          },
          [self, batch, changes, was_failing](caf::error& err) mutable {
            log::warn("channel.mark_sending_failed",
                      {{"channel", self->state.settings.name}, {"error", describe(err)}});
            rewrite_later(
                self,
                [self, batch = std::move(batch), changes = std::move(changes)]() mutable {
                  // Same takes (same tokens), fresh leases: the lease must run from the
                  // commit that lands, or a sweep could take the task during our call.
                  auto& st = self->state;
                  const auto now = st.clock->now();
                  for (auto& change : changes) {
                    change.at = now;
                    change.lease_until = now + st.settings.lease;
                  }
                  commit_sending(self, std::move(batch), std::move(changes), true);
                },
                err, was_failing);
          });
}

// A task committed SENDING whose lease ran too short for a call (the node stalled, or the
// commit or the wait for a token was slow).
void give_back_uncalled(self_pointer self, domain::ready_call uncalled, domain::timestamp now) {
  auto& st = self->state;
  auto& task = uncalled.task;
  log::warn(
      "channel.lease_expired_before_call",
      {{"channel", st.settings.name}, {"task_id", task.task_id}, {"trace_id", task.trace_id}});
  st.scheduler->abandon_probe(task.task_id);
  if (task.state == task_state::sending) {
    // Taken over from SENDING: an earlier take's call may have reached the provider, so the
    // task stays SENDING and its next taker asks; our lease runs out for it.
    forget(st, task.task_id);
    return;
  }
  // No call of this task was ever left unanswered: it waits as a retry due now, so whoever
  // takes it next sends it as a plain retry, not as an ambiguous resend.
  task.state = task_state::sending;
  auto back = change_of(task, task_state::retry_wait, task.attempts, now,
                        "lease ran out before the call: not sent");
  back.next_attempt_at = now;
  back.lease_token = std::move(uncalled.take_token);
  record(self, std::move(task), std::move(back), {});
}

// Calls the committed tasks in order as tokens allow; a call starts only while its lease
// leaves time for it to end before another node may take the task over.
void start_ready_calls(self_pointer self, domain::timestamp now) {
  auto& st = self->state;
  auto released = st.scheduler->release(
      now, [&st](const domain::delivery& task) { return asks_first(st, task); });
  for (auto& ready : released.calls)
    if (ready.lease_left)
      start_call(self, std::move(ready.call.task), std::move(ready.call.take_token));
    else
      give_back_uncalled(self, std::move(ready.call), now);
  if (released.wake_after)
    queue_tick(self, *released.wake_after);
}

void mark_and_send(self_pointer self, std::vector<domain::delivery> batch) {
  auto& st = self->state;
  state_changes changes;
  auto now = st.clock->now();
  for (auto& task : batch) {
    auto change = change_of(task, task_state::sending, task.attempts, now);
    change.lease_owner = st.settings.node_id;
    change.lease_until = now + st.settings.lease;
    change.lease_token = st.take_prefix + std::to_string(++st.takes);
    changes.push_back(std::move(change));
  }
  st.marking += batch.size();
  commit_sending(self, std::move(batch), std::move(changes), false);
}

void after_recorded(self_pointer self, domain::delivery task, bool applied) {
  auto& st = self->state;
  forget(st, task.task_id);
  if (!applied)
    return;
  // Due later: a retry, or a call that timed out to be asked about (still SENDING).
  if (task.state == task_state::retry_wait || task.state == task_state::sending)
    self->send(st.dispatcher, dispatch_atom_v, deliveries{std::move(task)});
  else if (task.state == task_state::dead || task.state == task_state::failed ||
           task.state == task_state::unconfirmed) // its questions went unanswered
    st.metrics->dead_letter(st.settings.name);
}

// Commits one change with its attempts, until the store answers; afterwards a RETRY_WAIT task
// goes to the timer. The task stays known meanwhile, so a sweep cannot send it again.
// `then` runs once the change applied (e.g. recording a receipt that needs the task SENT).
void record(self_pointer self, domain::delivery task, persistence::state_change change,
            attempt_records attempts, bool was_failing, std::function<void()> then) {
  const bool settles = settles_call(change);
  write_sent(self->state, settles);
  task.state = change.to;
  task.attempts = change.attempts;
  task.next_attempt_at = change.next_attempt_at;
  self->request(self->state.store, self->state.settings.store_timeout, apply_atom_v,
                state_changes{change}, attempts)
      .then(
          [self, task, was_failing, then, settles](task_ids& applied) mutable {
            auto& st = self->state;
            write_ended(st, settles);
            after_recorded(self, std::move(task), !applied.empty());
            if (!applied.empty() && then)
              then();
            write_answered(self, was_failing);
          },
          [self, task, change, attempts, was_failing, then, settles](caf::error& err) mutable {
            // The outcome is known only here: keep it until it is recorded.
            auto& st = self->state;
            write_ended(st, settles);
            log::error("channel.record_failed", {{"channel", st.settings.name},
                                                 {"task_id", task.task_id},
                                                 {"trace_id", task.trace_id},
                                                 {"error", describe(err)}});
            rewrite_later(
                self,
                [self, task = std::move(task), change = std::move(change),
                 attempts = std::move(attempts), then = std::move(then)]() mutable {
                  record(self, std::move(task), std::move(change), std::move(attempts), true,
                         std::move(then));
                },
                err, was_failing);
          });
}

// Failing over would send nothing new: the fallback channel has its own task for this message
// already, or (`refused`) policy refuses every fallback. A task never tried waits for its own
// channel; a failed one ends as a dead letter that says so (and can be replayed).
void keep_despite_fallback(self_pointer self, domain::delivery task,
                           persistence::state_change change, attempt_records attempts,
                           bool refused) {
  auto& st = self->state;
  log::warn(refused ? "channel.fallbacks_refused" : "channel.fallback_exists",
            {{"channel", st.settings.name},
             {"fallback", st.settings.fallback},
             {"task_id", task.task_id},
             {"trace_id", task.trace_id}});
  if (change.to == task_state::suppressed) {
    st.no_failover.insert(task.task_id);
    requeue(self, std::move(task));
    return;
  }
  change.last_error = "fallback_exists: '" + st.settings.fallback +
                      "' has its own task for this message; " + change.last_error;
  record(self, std::move(task), std::move(change), std::move(attempts));
}

// The failover committed (the store writer counted the hops and dispatched the fallback task
// to send): logs each hop; a chain policy refused to the end leaves the user nothing on any
// fallback, which an operator must hear of (and finds in GET /v1/dead-letters?coverage=none).
void failed_over(self_pointer self, const domain::delivery& task, task_state to,
                 const std::vector<persistence::fallback_link>& chain) {
  auto& st = self->state;
  if (to != task_state::suppressed)
    st.metrics->dead_letter(st.settings.name);
  std::string from = st.settings.name;
  for (const auto& link : chain) {
    const auto& outcome = link.claim.tasks.front();
    log::info("channel.failed_over", {{"channel", from},
                                      {"fallback", outcome.channel},
                                      {"task_id", task.task_id},
                                      {"trace_id", task.trace_id},
                                      {"fallback_task_id", outcome.task_id},
                                      {"state", std::string{domain::to_string(outcome.state)}}});
    from = outcome.channel;
  }
  const auto& last = chain.back().claim.tasks.front();
  if (last.state == task_state::suppressed)
    log::warn(
        "channel.fallbacks_refused",
        {{"channel", st.settings.name},
         {"task_id", task.task_id},
         {"trace_id", task.trace_id},
         {"last_fallback", last.channel},
         {"policy_reason", last.policy_reason ? std::string{domain::to_string(*last.policy_reason)}
                                              : std::string{"exists"}}});
}

// Applies `change` to the task and claims its fallback along the chain in one transaction, so
// the task is never given up without its fallback, nor sent on both channels.
void fail_over(self_pointer self, domain::delivery task, persistence::state_change change,
               attempt_records attempts, bool was_failing = false) {
  write_sent(self->state, settles_call(change));
  self->request(self->state.store, self->state.settings.store_timeout, failover_atom_v, change,
                attempts, task)
      .then(
          [self, task, change, attempts,
           was_failing](persistence::failover_result& result) mutable {
            auto& st = self->state;
            write_ended(st, settles_call(change));
            using outcome = persistence::failover_result::outcome;
            switch (result.result) {
            case outcome::fallback_exists:
            case outcome::fallbacks_refused:
              keep_despite_fallback(self, std::move(task), std::move(change), std::move(attempts),
                                    result.result == outcome::fallbacks_refused);
              break;
            case outcome::no_fallback: // nowhere to go: the change alone
              if (change.to == task_state::suppressed) {
                st.no_failover.insert(task.task_id);
                requeue(self, std::move(task));
              } else {
                record(self, std::move(task), std::move(change), std::move(attempts));
              }
              break;
            case outcome::failed_over:
              forget(st, task.task_id);
              failed_over(self, task, change.to, result.chain);
              break;
            case outcome::moved_on:
              forget(st, task.task_id);
              break;
            }
            write_answered(self, was_failing);
          },
          [self, task, change, attempts, was_failing](caf::error& err) mutable {
            auto& st = self->state;
            write_ended(st, settles_call(change));
            log::error("channel.failover_failed", {{"channel", st.settings.name},
                                                   {"task_id", task.task_id},
                                                   {"trace_id", task.trace_id},
                                                   {"error", describe(err)}});
            rewrite_later(
                self,
                [self, task = std::move(task), change = std::move(change),
                 attempts = std::move(attempts)]() mutable {
                  fail_over(self, std::move(task), std::move(change), std::move(attempts), true);
                },
                err, was_failing);
          });
}

// While the circuit is open, a task never tried leaves for the fallback channel.
void fail_over_fresh(self_pointer self, domain::delivery task, domain::timestamp now) {
  auto& st = self->state;
  auto change = change_of(task, task_state::suppressed, 0, now,
                          "failed over to " + st.settings.fallback + ": circuit open");
  // A token lets the store recognise this failover if it is sent again (a lost answer).
  change.lease_token = st.take_prefix + std::to_string(++st.takes);
  fail_over(self, std::move(task), std::move(change), {});
}

void expire(self_pointer self, domain::delivery task) {
  auto& st = self->state;
  auto change = change_of(task, task_state::expired, task.attempts, st.clock->now(),
                          "expire_at passed before sending");
  record(self, std::move(task), std::move(change), {});
}

// In a cluster the channel's rate and burst are for all nodes together: this node takes its
// part (its share of the partitions), set again whenever the membership changes.
void follow_rate_share(channel_state& st, domain::timestamp now) {
  if (!st.share || !st.scheduler->set_rate_share(st.share->rate_share(), now))
    return;
  const auto share = st.scheduler->rate_share();
  log::info("channel.rate_share",
            {{"channel", st.settings.name},
             {"share", std::to_string(share)},
             {"rate_per_sec", std::to_string(st.settings.rate_per_sec * share)}});
}

// Counts this actor's calls in flight into the node's, for heartbeats and GET /v1/cluster.
void show_in_flight(channel_state& st) {
  if (!st.share)
    return;
  const auto now_in_flight = static_cast<std::int64_t>(st.calls.size());
  st.share->add_in_flight(now_in_flight - st.in_flight_shown);
  st.in_flight_shown = now_in_flight;
}

void requeue(self_pointer self, domain::delivery task) {
  self->state.scheduler->requeue(std::move(task));
  pump(self);
}

void pump(self_pointer self) {
  auto& st = self->state;
  auto now = st.clock->now();
  follow_rate_share(st, now);
  // Withdrawn while the channel looks: a place is offered again only for what it leaves.
  offer_places(st, 0, now);
  start_ready_calls(self, now); // committed already: called while draining or failing too
  show_in_flight(st);
  answer_drain_if_idle(st);           // the last ready task may have been given back
  if (st.draining || st.failing != 0) // a failing store takes no new work
    return;
  // The tasks taken and not yet settled: the window bounds what a crash leaves in doubt, so a
  // call's result holds its place until its commit answers.
  const auto busy =
      st.calls.size() + st.marking + st.scheduler->ready_count() + st.settling + st.in_transit;
  std::function<bool(const domain::delivery&)> may_fail_over; // none without a fallback
  if (!st.settings.fallback.empty())
    may_fail_over = [&st](const domain::delivery& task) {
      return st.no_failover.count(task.task_id) == 0; // no fallback takes it
    };
  auto plan = st.scheduler->take(now, busy, may_fail_over);
  for (auto& task : plan.failing_over)
    fail_over_fresh(self, std::move(task), now);
  for (auto& task : plan.expired)
    expire(self, std::move(task));
  for (auto& task : plan.not_due) { // the timer holds it until send_at
    forget(st, task.task_id);
    self->send(st.dispatcher, dispatch_atom_v, deliveries{std::move(task)});
  }
  const auto taken_now = plan.taken.size();
  if (!plan.taken.empty())
    mark_and_send(self, std::move(plan.taken));
  if (plan.wake_after)
    queue_tick(self, *plan.wake_after);
  offer_places(st, st.scheduler->open_places(now, busy + taken_now), now);
}

persistence::state_change outcome_change(channel_state& st, const channel_state::call& call,
                                         const providers::provider_result& result,
                                         domain::timestamp now) {
  const auto& task = call.task;
  auto change = change_of(task, task_state::sent, task.attempts + 1, now);
  change.from = task_state::sending;
  change.lease_token = call.take_token;
  switch (result.outcome) {
  case call_outcome::success:
    if (!result.detail.empty() && result.detail != task.provider_request_id)
      change.provider_message_id = result.detail; // the provider's own id, when it gave one
    break;
  case call_outcome::permanent:
    change.to = task_state::failed;
    change.last_error = result.detail;
    break;
  case call_outcome::throttled:
    // Refused before anything was done (a daily quota, a rate limit): not a provider call
    // that could have delivered, so it spends no attempt and no backoff; the task goes again
    // when the pause ends, and never goes DEAD of it — only expire_at bounds the wait.
    change.attempts = task.attempts;
    change.last_error = result.detail;
    change.to = task_state::retry_wait;
    change.next_attempt_at = now + result.retry_after.value_or(st.settings.throttle_pause);
    if (task.expire_at && *change.next_attempt_at > *task.expire_at)
      change.next_attempt_at = task.expire_at; // picked up then, and expired
    break;
  case call_outcome::retryable:
  case call_outcome::timeout: {
    change.last_error = result.detail;
    auto unit = std::uniform_real_distribution<double>{0.0, 1.0}(st.jitter_rng);
    auto delay = st.settings.retry.next_delay(change.attempts, unit);
    if (!delay) {
      change.to = task_state::dead;
    } else {
      if (result.retry_after && *result.retry_after > *delay)
        delay = result.retry_after;
      change.to = task_state::retry_wait;
      change.next_attempt_at = now + *delay;
      if (result.outcome == call_outcome::timeout && st.provider->can_query_status()) {
        // The provider may have the message. The task stays SENDING, under this take's lease
        // until its retry is due, and is then asked about before any resend, as a task found
        // SENDING after a crash is: by whichever node holds its partition by then.
        change.to = task_state::sending;
        change.lease_owner = st.settings.node_id;
        change.lease_until = change.next_attempt_at;
      }
    }
    break;
  }
  }
  return change;
}

// Feeds the circuit breaker and the throttle pause from one provider answer.
void observe_health(channel_state& st, const std::string& task_id,
                    const providers::provider_result& result, domain::timestamp now) {
  auto health = domain::provider_health::failed;
  if (result.outcome == call_outcome::success || result.outcome == call_outcome::permanent)
    health = domain::provider_health::answered; // it is up, the recipient is bad
  else if (result.outcome == call_outcome::throttled)
    health = domain::provider_health::throttled;
  st.scheduler->observe(task_id, health, now, result.retry_after);
  st.metrics->circuit_state(st.settings.name, circuit_gauge(st.scheduler->circuit()));
}

void on_result(self_pointer self, const std::string& task_id,
               const providers::provider_result& result) {
  auto& st = self->state;
  auto found = st.calls.find(task_id);
  if (found == st.calls.end())
    return;
  auto finished = std::move(found->second);
  st.calls.erase(found);
  auto& task = finished.task;
  auto started_at = finished.started_at;
  auto now = st.clock->now();
  st.metrics->provider_call(st.settings.name, result.outcome);
  if (result.outcome == call_outcome::success)
    st.metrics->delivery_latency(st.settings.name,
                                 std::chrono::duration<double>(now - task.accepted_at).count());
  observe_health(st, task_id, result, now);
  auto change = outcome_change(st, finished, result, now);
  attempt_records attempts;
  if (result.outcome != call_outcome::throttled) // not an attempt: see outcome_change
    attempts.push_back({task.task_id, change.attempts, task.provider_request_id,
                        std::string{to_string(result.outcome)}, result.detail, started_at, now});
  log::write(result.outcome == call_outcome::success ? log::level::debug : log::level::info,
             "channel.provider_result",
             {{"channel", st.settings.name},
              {"task_id", task.task_id},
              {"trace_id", task.trace_id},
              {"to", domain::mask_recipient(task.recipient)},
              {"outcome", std::string{to_string(result.outcome)}},
              {"state", std::string{domain::to_string(change.to)}},
              {"attempt", std::to_string(change.attempts)}});
  // A permanent error, or retries exhausted on known failures: either way the user has nothing
  // from this channel, and its fallback chain takes over. A last call that timed out may have
  // delivered: its DEAD stays a dead letter, as failing over could reach the user twice.
  const bool known_failure =
      change.to == task_state::failed ||
      (change.to == task_state::dead && result.outcome != call_outcome::timeout);
  if (known_failure && !st.settings.fallback.empty())
    fail_over(self, std::move(task), std::move(change), std::move(attempts));
  else
    record(self, std::move(task), std::move(change), std::move(attempts));
  answer_drain_if_idle(st);
  pump(self);
}

} // namespace channel_detail

channel_actor::behavior_type channel(channel_actor::stateful_pointer<channel_state> self,
                                     channel_settings settings,
                                     std::shared_ptr<providers::provider_adapter> provider,
                                     channel_peers peers) {
  using namespace channel_detail;
  install_logging_handlers(self);
  auto& init = self->state;
  init.scheduler.emplace(settings.pacing(), peers.clock->now());
  init.settings = std::move(settings);
  init.provider = std::move(provider);
  init.store = std::move(peers.store);
  init.dispatcher = std::move(peers.dispatcher);
  init.metrics = std::move(peers.metrics);
  init.clock = std::move(peers.clock);
  init.health = std::move(peers.health);
  init.share = std::move(peers.share);
  init.places = std::move(peers.places);
  if (init.places) {
    // Nothing is offered until the first pump: by then the dispatcher routes to this actor
    // (it learns of a restarted one only after the spawn). What a predecessor's epoch gave
    // away is not counted here; its tasks still come here, to be called.
    init.places_epoch = init.places->begin_epoch();
    self->attach_functor(
        [places = init.places, epoch = init.places_epoch] { places->close(epoch); });
  }
  // Tokens name this actor's takes: unique across restarts and nodes without coordination.
  std::uniform_int_distribution<std::uint64_t> any;
  char prefix[32];
  std::snprintf(prefix, sizeof(prefix), "%016llx-",
                static_cast<unsigned long long>(any(init.jitter_rng)));
  init.take_prefix = prefix;
  // A restarted channel holds nothing: whatever its predecessor reported is no longer true.
  if (init.health)
    init.health->clear(component_name(init));
  init.metrics->circuit_state(init.settings.name, 0);
  return {
      [self](dispatch_atom, deliveries& tasks) {
        auto& st = self->state;
        // A full queue drops the newest less urgent task, or the one coming: either stays in
        // the database (nothing of it was written yet) for the sweep. Measured before
        // (bench/priority/flood.py): behind 100k marketing tasks a verification code found the
        // queue full and waited for the 30 s sweep, up to 46 s.
        const auto may_drop = [&st](const domain::delivery& queued) {
          return st.asked.count(queued.task_id) == 0; // keep a resend's state
        };
        for (auto& task : tasks) {
          if (st.known.count(task.task_id) != 0)
            continue;
          const auto id = task.task_id;
          auto enqueued = st.scheduler->enqueue(std::move(task), may_drop);
          if (enqueued.dropped) {
            forget(st, *enqueued.dropped);
            st.metrics->queue_overflow(st.settings.name);
          }
          if (enqueued.queued)
            st.known.insert(id);
          else
            st.metrics->queue_overflow(st.settings.name);
        }
        pump(self);
      },
      [self](taken_atom, taken_in_claim& taken) {
        auto& st = self->state;
        if (taken.epoch == st.places_epoch) {
          // The writer took these places before it wrote this: withdrawing the offer first
          // counts them in transit, so they are not counted back before they were counted.
          offer_places(st, 0, st.clock->now());
          const auto given_over = taken.calls.size() + taken.unused;
          st.in_transit -= std::min<std::size_t>(st.in_transit, given_over);
        }
        for (auto& call : taken.calls)
          if (st.known.insert(call.task.task_id).second) // new: never held here before
            st.scheduler->ready(std::move(call));
        pump(self);
      },
      [self](result_atom, const std::string& task_id, const providers::provider_result& result) {
        on_result(self, task_id, result);
      },
      [self](status_atom, const std::string& task_id, const providers::status_answer& answer) {
        on_status(self, task_id, answer);
      },
      [self](tick_atom) {
        self->state.tick_due.reset();
        pump(self);
      },
      [self](rewrite_atom) {
        auto writes = std::move(self->state.rewrites);
        self->state.rewrites.clear();
        for (auto& write : writes)
          write();
      },
      [self](drain_atom) -> caf::result<bool> {
        auto& st = self->state;
        st.draining = true;
        offer_places(st, 0, st.clock->now()); // what was taken already is waited for
        if (st.failing != 0) // if the drain times out, these outcomes die with the process
          log::warn("channel.drain_with_held_writes",
                    {{"channel", st.settings.name}, {"held", std::to_string(st.failing)}});
        auto promise = self->make_response_promise<bool>();
        st.drain_waiters.push_back(promise);
        answer_drain_if_idle(st);
        return promise;
      },
  };
}

} // namespace herald::actors
