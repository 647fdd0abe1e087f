#include "actors/retry_timer.hpp"

#include "actors/logging_handlers.hpp"
#include "observability/log.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

domain::timestamp due_time(const domain::delivery& task, domain::timestamp now) {
  if (task.next_attempt_at)
    return *task.next_attempt_at;
  if (task.send_at)
    return *task.send_at;
  return now;
}

std::string retry_timer_config::validate() const {
  if (max_held == 0)
    return "retry_timer.max_held must be at least 1";
  if (hand_out_batch == 0)
    return "retry_timer.hand_out_batch must be at least 1";
  if (hand_out_timeout.count() <= 0)
    return "retry_timer.hand_out_timeout_ms must be > 0";
  return "";
}

namespace {

using self_pointer = retry_timer_actor::stateful_pointer<retry_timer_state>;

void drop(retry_timer_state& st, std::string_view task_id) {
  auto found = st.due_of.find(task_id);
  if (found == st.due_of.end())
    return;
  auto held = st.queue.find(retry_timer_state::entry{found->second, std::string{task_id}});
  st.due_of.erase(found); // before the entry its key views
  st.queue.erase(held);
}

void hold(retry_timer_state& st, domain::timestamp due, std::string task_id) {
  drop(st, task_id);
  auto [held, inserted] = st.queue.insert(retry_timer_state::entry{due, std::move(task_id)});
  if (inserted)
    st.due_of.emplace(std::string_view{held->task_id}, due);
}

void show_depth(retry_timer_state& st) {
  st.metrics->retry_queue_depth(static_cast<double>(st.queue.size()));
}

// Arms the timer for the earliest due time unless it is armed for that already or earlier.
void arm(self_pointer self) {
  auto& st = self->state;
  show_depth(st);
  if (st.queue.empty() || st.handing_out) // handed_out() arms once the dispatcher answered
    return;
  auto earliest = std::max(st.queue.begin()->due, st.resume_at);
  if (st.armed_for && *st.armed_for <= earliest)
    return;
  st.armed_for = earliest;
  // Rounded up: firing early would re-arm at 0 ms until the task is due.
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(earliest - st.clock->now());
  self->delayed_send(self, std::max(wait, std::chrono::milliseconds{0}), tick_atom_v,
                     ++st.generation);
}

// Lets the latest-due tasks go while more than max_held are held: they are the ones the
// sweep can most easily bring back before they are due. Said at most once per full_log_every
// (a full timer lets one task go per retry scheduled: a line each would flood the log).
void enforce_bound(retry_timer_state& st) {
  while (st.queue.size() > st.config.max_held) {
    drop(st, std::prev(st.queue.end())->task_id);
    ++st.let_go_unlogged;
  }
  const auto now = st.clock->now();
  if (st.let_go_unlogged == 0 || now < st.next_full_log)
    return;
  log::warn("retry_timer.full", {{"let_go", std::to_string(st.let_go_unlogged)},
                                 {"max_held", std::to_string(st.config.max_held)}});
  st.let_go_unlogged = 0;
  st.next_full_log = now + retry_timer_state::full_log_every;
}

void hand_out_due(self_pointer self);

// The dispatcher answered a batch (or failed to): the next batch goes once the channels have
// had `pause` to send this one, so a large due backlog is read as fast as it can be sent.
void handed_out(self_pointer self, caf::timespan pause) {
  auto& st = self->state;
  st.handing_out = false;
  st.resume_at = st.clock->now() + std::chrono::duration_cast<domain::timestamp::duration>(pause);
  if (pause.count() <= 0)
    hand_out_due(self);
  arm(self);
}

// Hands the due tasks' ids to the dispatcher, a batch at a time; it reads them from the
// database and sends them to their channels. A batch it cannot read stays due in the database:
// the sweep reads every task due before the next sweep, so it is sent all the same.
void hand_out_due(self_pointer self) {
  auto& st = self->state;
  auto now = st.clock->now();
  if (st.handing_out || st.resume_at > now)
    return;
  task_ids due;
  while (!st.queue.empty() && st.queue.begin()->due <= now &&
         due.size() < st.config.hand_out_batch) {
    auto node = st.queue.extract(st.queue.begin());
    st.due_of.erase(std::string_view{node.value().task_id});
    due.push_back(std::move(node.value().task_id));
  }
  if (due.empty())
    return;
  st.handing_out = true;
  auto count = due.size();
  self->request(st.dispatcher, st.config.hand_out_timeout, due_atom_v, std::move(due))
      .then([self](caf::timespan pause) { handed_out(self, pause); },
            [self, count](caf::error& err) {
              log::warn("retry_timer.hand_out_failed", {{"tasks", std::to_string(count)},
                                                        {"error", describe(err)},
                                                        {"then", "left to the sweep"}});
              handed_out(self, caf::timespan{0});
            });
}

} // namespace

retry_timer_actor::behavior_type
retry_timer(retry_timer_actor::stateful_pointer<retry_timer_state> self,
            dispatcher_actor dispatcher, std::shared_ptr<herald::metrics> metrics,
            std::shared_ptr<const domain::clock> clock, retry_timer_config config) {
  install_logging_handlers(self);
  auto& init = self->state;
  init.dispatcher = std::move(dispatcher);
  init.metrics = std::move(metrics);
  init.clock = std::move(clock);
  init.config = config;
  return {
      [self](schedule_atom, const deliveries& tasks) {
        auto& st = self->state;
        auto now = st.clock->now();
        for (const auto& task : tasks)
          hold(st, due_time(task, now), task.task_id);
        enforce_bound(st);
        hand_out_due(self);
        arm(self);
      },
      [self](cancel_atom, const std::string& task_id) {
        drop(self->state, task_id);
        arm(self);
      },
      [self](tick_atom, std::uint64_t generation) {
        auto& st = self->state;
        if (generation != st.generation)
          return; // superseded by an earlier re-arm
        st.armed_for.reset();
        hand_out_due(self);
        arm(self);
      },
  };
}

} // namespace herald::actors
