#include "actors/channel_actor.hpp"

#include "actors/logging_handlers.hpp"
#include "domain/masking.hpp"
#include "observability/log.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

std::string channel_settings::validate() const {
  if (name.empty())
    return "channel name must not be empty";
  if (!(rate_per_sec > 0))
    return "channel '" + name + "': rate_per_sec must be > 0";
  if (!(burst >= 1))
    return "channel '" + name + "': burst must be >= 1";
  if (window == 0)
    return "channel '" + name + "': window must be >= 1";
  if (retry.max_attempts == 0)
    return "channel '" + name + "': retry.max_attempts must be >= 1";
  if (retry.schedule.empty())
    return "channel '" + name + "': retry.schedule_ms must not be empty";
  return "";
}

namespace {

using self_pointer = channel_actor::stateful_pointer<channel_state>;
using domain::task_state;

std::size_t lane_of(domain::priority p) {
  return static_cast<std::size_t>(p);
}

void answer_drain_if_idle(channel_state& st) {
  if (!st.draining || !st.calls.empty() || st.marking != 0 || st.writing != 0)
    return;
  for (auto& waiter : st.drain_waiters)
    waiter.deliver(true);
  st.drain_waiters.clear();
}

void pump(self_pointer self);

void queue_tick(self_pointer self, std::chrono::microseconds after) {
  if (self->state.tick_queued)
    return;
  self->state.tick_queued = true;
  self->delayed_send(self, std::max(after, std::chrono::microseconds{1000}), tick_atom_v);
}

void start_call(self_pointer self, domain::delivery task) {
  auto& st = self->state;
  channels::provider_request request{
      task.task_id, task.channel, task.recipient, task.provider_request_id,
      task.title,   task.body,    task.trace_id,  task.attempts + 1};
  auto task_id = task.task_id;
  st.calls.emplace(task_id, channel_state::call{std::move(task), st.clock->now()});
  auto handle = caf::actor_cast<channel_actor>(self);
  auto done = [handle, task_id](channels::provider_result result) {
    caf::anon_send(handle, result_atom_v, task_id, std::move(result));
  };
  try {
    st.provider->send(std::move(request), done);
  } catch (const std::exception& e) { // adapters must not throw; if one does, retry later
    done({call_outcome::retryable, std::string{"adapter threw: "} + e.what(), std::nullopt});
  }
}

// Commits SENDING for `batch`, then calls the provider for each task whose change applied.
void mark_and_send(self_pointer self, std::vector<domain::delivery> batch) {
  auto& st = self->state;
  state_changes changes;
  auto now = st.clock->now();
  for (auto& task : batch)
    changes.push_back(
        {task.task_id, task.state, task_state::sending, task.attempts, std::nullopt, "", now});
  st.marking += batch.size();
  self->request(st.store, st.settings.store_timeout, apply_atom_v, std::move(changes),
                attempt_records{})
      .then(
          [self, batch](task_ids& applied) mutable {
            auto& st = self->state;
            st.marking -= batch.size();
            std::unordered_set<std::string> moved(applied.begin(), applied.end());
            for (auto& task : batch) {
              if (moved.count(task.task_id) != 0) {
                start_call(self, std::move(task));
              } else { // another sender got there first, or the task moved on: not ours to send
                st.known.erase(task.task_id);
                log::debug("channel.skip_stale", {{"channel", st.settings.name},
                                                  {"task_id", task.task_id},
                                                  {"trace_id", task.trace_id}});
              }
            }
            answer_drain_if_idle(st);
            pump(self);
          },
          [self, batch](caf::error& err) mutable {
            auto& st = self->state;
            st.marking -= batch.size();
            log::warn("channel.mark_sending_failed",
                      {{"channel", st.settings.name}, {"error", describe(err)}});
            // Nothing was committed: put the tasks back and try again in a moment.
            for (auto it = batch.rbegin(); it != batch.rend(); ++it)
              st.lanes[lane_of(it->priority)].push_front(std::move(*it));
            answer_drain_if_idle(st);
            queue_tick(self, std::chrono::seconds{1});
          });
}

void expire(self_pointer self, const domain::delivery& task) {
  auto& st = self->state;
  st.known.erase(task.task_id);
  st.writing += 1;
  self->request(st.store, st.settings.store_timeout, apply_atom_v,
                state_changes{{task.task_id, task.state, task_state::expired, task.attempts,
                               std::nullopt, "expire_at passed before sending", st.clock->now()}},
                attempt_records{})
      .then([self](task_ids&) { self->state.writing -= 1, answer_drain_if_idle(self->state); },
            [self](caf::error& err) {
              self->state.writing -= 1;
              log::warn("channel.expire_failed", {{"error", describe(err)}});
              answer_drain_if_idle(self->state);
            });
}

void pump(self_pointer self) {
  auto& st = self->state;
  if (st.draining)
    return;
  auto now = st.clock->now();
  std::vector<domain::delivery> to_mark;
  auto busy = st.calls.size() + st.marking;
  for (auto& lane : st.lanes) {
    while (!lane.empty() && busy + to_mark.size() < st.settings.window) {
      auto& task = lane.front();
      if (task.expire_at && *task.expire_at <= now) {
        expire(self, task);
        lane.pop_front();
        continue;
      }
      if (task.send_at && *task.send_at > now) { // not yet: come back at send_at
        auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(*task.send_at - now);
        st.known.erase(task.task_id);
        self->delayed_send(self, wait + std::chrono::milliseconds{1}, dispatch_atom_v,
                           deliveries{std::move(task)});
        lane.pop_front();
        continue;
      }
      if (!st.bucket->try_take(now)) {
        queue_tick(self, st.bucket->wait_time(now));
        break;
      }
      if (task.state == task_state::sending) { // found SENDING by recovery: outcome unknown
        st.metrics->ambiguous_resend(st.settings.name);
        log::warn("channel.ambiguous_resend", {{"channel", st.settings.name},
                                               {"task_id", task.task_id},
                                               {"provider_request_id", task.provider_request_id},
                                               {"trace_id", task.trace_id}});
        start_call(self, std::move(task));
        ++busy;
      } else {
        to_mark.push_back(std::move(task));
      }
      lane.pop_front();
    }
  }
  if (!to_mark.empty())
    mark_and_send(self, std::move(to_mark));
}

persistence::state_change outcome_change(channel_state& st, const domain::delivery& task,
                                         const channels::provider_result& result,
                                         domain::timestamp now) {
  persistence::state_change change{
      task.task_id, task_state::sending, task_state::sent, task.attempts + 1, std::nullopt, "",
      now};
  switch (result.outcome) {
  case call_outcome::success:
    break;
  case call_outcome::permanent:
    change.to = task_state::failed;
    change.last_error = result.detail;
    break;
  case call_outcome::retryable:
  case call_outcome::timeout:
  case call_outcome::throttled: {
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
    }
    break;
  }
  }
  return change;
}

void on_result(self_pointer self, const std::string& task_id,
               const channels::provider_result& result) {
  auto& st = self->state;
  auto found = st.calls.find(task_id);
  if (found == st.calls.end())
    return;
  auto task = std::move(found->second.task);
  auto started_at = found->second.started_at;
  st.calls.erase(found);
  st.known.erase(task_id);
  auto now = st.clock->now();
  st.metrics->provider_call(st.settings.name, result.outcome);
  if (result.outcome == call_outcome::success)
    st.metrics->delivery_latency(st.settings.name,
                                 std::chrono::duration<double>(now - task.accepted_at).count());
  auto change = outcome_change(st, task, result, now);
  persistence::attempt_record attempt{task.task_id,
                                      change.attempts,
                                      task.provider_request_id,
                                      std::string{to_string(result.outcome)},
                                      result.detail,
                                      started_at,
                                      now};
  log::write(result.outcome == call_outcome::success ? log::level::debug : log::level::info,
             "channel.provider_result",
             {{"channel", st.settings.name},
              {"task_id", task.task_id},
              {"trace_id", task.trace_id},
              {"to", domain::mask_recipient(task.recipient)},
              {"outcome", std::string{to_string(result.outcome)}},
              {"state", std::string{domain::to_string(change.to)}},
              {"attempt", std::to_string(change.attempts)}});
  st.writing += 1;
  auto retry = change.to == task_state::retry_wait
                   ? std::optional<domain::timestamp>{change.next_attempt_at}
                   : std::nullopt;
  task.state = change.to;
  task.attempts = change.attempts;
  self->request(st.store, st.settings.store_timeout, apply_atom_v, state_changes{change},
                attempt_records{attempt})
      .then(
          [self, task, retry](task_ids& applied) mutable {
            auto& st = self->state;
            st.writing -= 1;
            if (retry && !applied.empty()) {
              auto wait =
                  std::chrono::duration_cast<std::chrono::milliseconds>(*retry - st.clock->now());
              self->delayed_send(self, std::max(wait, std::chrono::milliseconds{1}),
                                 dispatch_atom_v, deliveries{std::move(task)});
            }
            answer_drain_if_idle(st);
          },
          [self, task](caf::error& err) {
            // The task stays SENDING in the database; recovery resends it with the same id.
            auto& st = self->state;
            st.writing -= 1;
            log::error("channel.record_result_failed", {{"channel", st.settings.name},
                                                        {"task_id", task.task_id},
                                                        {"trace_id", task.trace_id},
                                                        {"error", describe(err)}});
            answer_drain_if_idle(st);
          });
  answer_drain_if_idle(st);
  pump(self);
}

} // namespace

channel_actor::behavior_type
channel(channel_actor::stateful_pointer<channel_state> self, channel_settings settings,
        std::shared_ptr<channels::provider_adapter> provider, store_writer_actor store,
        std::shared_ptr<herald::metrics> metrics, std::shared_ptr<const domain::clock> clock) {
  install_logging_handlers(self);
  auto& st = self->state;
  st.bucket.emplace(settings.rate_per_sec, settings.burst, clock->now());
  st.settings = std::move(settings);
  st.provider = std::move(provider);
  st.store = std::move(store);
  st.metrics = std::move(metrics);
  st.clock = std::move(clock);
  return {
      [self](dispatch_atom, deliveries& tasks) {
        auto& st = self->state;
        for (auto& task : tasks)
          if (st.known.insert(task.task_id).second)
            st.lanes[lane_of(task.priority)].push_back(std::move(task));
        pump(self);
      },
      [self](result_atom, const std::string& task_id, const channels::provider_result& result) {
        on_result(self, task_id, result);
      },
      [self](tick_atom) {
        self->state.tick_queued = false;
        pump(self);
      },
      [self](drain_atom) -> caf::result<bool> {
        auto& st = self->state;
        st.draining = true;
        auto promise = self->make_response_promise<bool>();
        st.drain_waiters.push_back(promise);
        answer_drain_if_idle(st);
        return promise;
      },
  };
}

} // namespace herald::actors
