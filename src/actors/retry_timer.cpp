#include "actors/retry_timer.hpp"

#include "actors/logging_handlers.hpp"
#include "observability/log.hpp"

#include <map>

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
  return "";
}

namespace {

using self_pointer = retry_timer_actor::stateful_pointer<retry_timer_state>;

void drop(retry_timer_state& st, const std::string& task_id) {
  auto found = st.held.find(task_id);
  if (found == st.held.end())
    return;
  st.queue.erase({found->second.due, task_id});
  st.held.erase(found);
}

// Arms the timer for the earliest due time unless it is armed for that already or earlier.
void arm(self_pointer self) {
  auto& st = self->state;
  st.metrics->retry_queue_depth(static_cast<double>(st.held.size()));
  if (st.queue.empty())
    return;
  auto earliest = st.queue.begin()->first;
  if (st.armed_for && *st.armed_for <= earliest)
    return;
  st.armed_for = earliest;
  // Rounded up: firing early would re-arm at 0 ms until the task is due.
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(earliest - st.clock->now());
  self->delayed_send(self, std::max(wait, std::chrono::milliseconds{0}), tick_atom_v,
                     ++st.generation);
}

// Lets the latest-due tasks go while more than max_held are held: they are the ones the
// sweep can most easily bring back before they are due.
void enforce_bound(retry_timer_state& st) {
  std::size_t let_go = 0;
  while (st.held.size() > st.config.max_held) {
    auto latest = std::prev(st.queue.end())->second;
    drop(st, latest);
    ++let_go;
  }
  if (let_go > 0)
    log::warn("retry_timer.full", {{"let_go", std::to_string(let_go)},
                                   {"max_held", std::to_string(st.config.max_held)}});
}

void hand_out_due(self_pointer self) {
  auto& st = self->state;
  auto now = st.clock->now();
  deliveries due;
  while (!st.queue.empty() && st.queue.begin()->first <= now) {
    auto task_id = st.queue.begin()->second;
    st.queue.erase(st.queue.begin());
    auto found = st.held.find(task_id);
    due.push_back(std::move(found->second.task));
    st.held.erase(found);
  }
  if (!due.empty())
    self->send(st.dispatcher, dispatch_atom_v, std::move(due));
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
      [self](schedule_atom, deliveries& tasks) {
        auto& st = self->state;
        auto now = st.clock->now();
        for (auto& task : tasks) {
          drop(st, task.task_id);
          auto due = due_time(task, now);
          st.queue.emplace(due, task.task_id);
          auto task_id = task.task_id;
          st.held.emplace(std::move(task_id), retry_timer_state::entry{due, std::move(task)});
        }
        hand_out_due(self);
        enforce_bound(st);
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
