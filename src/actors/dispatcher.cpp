#include "actors/dispatcher.hpp"

#include "actors/logging_handlers.hpp"
#include "actors/retry_timer.hpp"
#include "observability/log.hpp"

#include <algorithm>

#include <caf/exit_reason.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

namespace {

using self_pointer = dispatcher_actor::stateful_pointer<dispatcher_state>;

void start_channel(self_pointer self, const std::string& name) {
  auto& st = self->state;
  auto& spec = st.specs.at(name);
  channel_peers peers{st.store, caf::actor_cast<dispatcher_actor>(self), st.metrics, st.clock,
                      nullptr};
  // Monitored, not linked: an exit with reason `kill` bypasses exit handlers in CAF 0.17, so a
  // killed channel would take the dispatcher and every other channel with it.
  st.channels[name] = self->spawn<caf::monitored>(channel, spec.settings, spec.provider, peers);
}

// The timer only caches what the database holds (RETRY_WAIT rows keep next_attempt_at): a
// new one is filled again by the next recovery pass.
void start_timer(self_pointer self) {
  auto& st = self->state;
  st.timer = self->spawn<caf::monitored>(retry_timer, caf::actor_cast<dispatcher_actor>(self),
                                         st.metrics, st.clock);
}

void dispatch(self_pointer self, deliveries& tasks) {
  auto& st = self->state;
  auto now = st.clock->now();
  deliveries not_yet;
  std::map<std::string, deliveries> by_channel;
  for (auto& task : tasks) {
    if (due_time(task, now) > now)
      not_yet.push_back(std::move(task));
    else
      by_channel[task.channel].push_back(std::move(task));
  }
  if (!not_yet.empty())
    self->send(st.timer, schedule_atom_v, std::move(not_yet));
  for (auto& [name, batch] : by_channel) {
    auto target = st.channels.find(name);
    if (target == st.channels.end()) {
      // Configured away since the tasks were accepted: they stay in the database, untouched.
      log::warn("dispatcher.unknown_channel",
                {{"channel", name}, {"tasks", std::to_string(batch.size())}});
      continue;
    }
    self->send(target->second, dispatch_atom_v, std::move(batch));
  }
}

// Reads unfinished tasks page by page and dispatches them; `only` limits it to one channel.
void recover(self_pointer self, std::string after, std::string only, std::uint64_t found) {
  auto& st = self->state;
  st.sweeping = true;
  self->request(st.reader, st.config.store_timeout, recover_atom_v, after, st.config.recovery_page,
                st.clock->now())
      .then(
          [self, only, found](deliveries& page) {
            auto& st = self->state;
            auto full = page.size() == st.config.recovery_page;
            auto last = page.empty() ? std::string{} : page.back().task_id;
            auto total = found + page.size();
            if (!only.empty())
              page.erase(std::remove_if(page.begin(), page.end(),
                                        [&](auto& task) { return task.channel != only; }),
                         page.end());
            dispatch(self, page);
            if (full) {
              recover(self, last, only, total);
              return;
            }
            st.sweeping = false;
            log::write(total == 0 ? log::level::debug : log::level::info, "dispatcher.recovered",
                       {{"tasks", std::to_string(total)}, {"channel", only.empty() ? "*" : only}});
          },
          [self](caf::error& err) {
            // The database is the truth and still holds the tasks: the next sweep tries again.
            self->state.sweeping = false;
            log::error("dispatcher.recovery_failed", {{"error", describe(err)}});
          });
}

void on_channel_down(self_pointer self, const caf::down_msg& down) {
  auto& st = self->state;
  if (down.source == st.timer.address() && !st.draining) {
    log::warn("dispatcher.timer_restart", {{"reason", caf::to_string(down.reason)}});
    start_timer(self);
    recover(self, "", "", 0);
    return;
  }
  for (auto& [name, handle] : st.channels) {
    if (handle.address() != down.source)
      continue;
    if (st.draining)
      return;
    auto now = std::chrono::steady_clock::now();
    auto& history = st.restarts[name];
    while (!history.empty() && now - history.front() > st.config.restart_window)
      history.pop_front();
    auto restarted = name; // `name` dies with the map entry it refers to
    if (history.size() >= st.config.max_restarts) {
      log::error("dispatcher.channel_given_up",
                 {{"channel", restarted}, {"reason", caf::to_string(down.reason)}});
      st.channels.erase(restarted);
      return;
    }
    history.push_back(now);
    log::warn("dispatcher.channel_restart", {{"channel", restarted},
                                             {"reason", caf::to_string(down.reason)},
                                             {"restarts", std::to_string(history.size())}});
    start_channel(self, restarted);
    recover(self, "", restarted, 0);
    return;
  }
}

// Told to stop: take the channels and the timer along, then stop.
void on_exit(self_pointer self, const caf::exit_msg& msg) {
  auto& st = self->state;
  st.draining = true;
  for (auto& [name, handle] : st.channels)
    self->send_exit(handle, msg.reason);
  self->send_exit(st.timer, msg.reason);
  self->quit(msg.reason);
}

} // namespace

dispatcher_actor::behavior_type
dispatcher(dispatcher_actor::stateful_pointer<dispatcher_state> self,
           std::vector<channel_spec> specs, store_writer_actor store, store_reader_actor reader,
           std::shared_ptr<herald::metrics> metrics, std::shared_ptr<const domain::clock> clock,
           dispatcher_config config) {
  install_logging_handlers(self);
  auto& st = self->state;
  st.store = std::move(store);
  st.reader = std::move(reader);
  st.metrics = std::move(metrics);
  st.clock = std::move(clock);
  st.config = config;
  start_timer(self);
  for (auto& spec : specs) {
    auto name = spec.settings.name;
    st.specs.emplace(name, std::move(spec));
    start_channel(self, name);
  }
  self->set_down_handler([self](caf::down_msg& down) { on_channel_down(self, down); });
  self->set_exit_handler([self](caf::exit_msg& msg) { on_exit(self, msg); });
  self->delayed_send(self, st.config.sweep_interval, sweep_atom_v);
  return {
      [self](dispatch_atom, deliveries& tasks) { dispatch(self, tasks); },
      [self](recover_atom) { recover(self, "", "", 0); },
      [self](sweep_atom) {
        auto& st = self->state;
        if (st.draining)
          return;
        if (!st.sweeping)
          recover(self, "", "", 0);
        self->delayed_send(self, st.config.sweep_interval, sweep_atom_v);
      },
      [self](drain_atom) -> caf::result<bool> {
        auto& st = self->state;
        st.draining = true;
        auto promise = self->make_response_promise<bool>();
        auto outstanding = std::make_shared<std::size_t>(st.channels.size());
        if (*outstanding == 0)
          promise.deliver(true);
        for (auto& [name, handle] : st.channels)
          self->request(handle, caf::infinite, drain_atom_v)
              .then(
                  [promise, outstanding](bool) mutable {
                    if (--*outstanding == 0)
                      promise.deliver(true);
                  },
                  [promise, outstanding](caf::error&) mutable {
                    if (--*outstanding == 0)
                      promise.deliver(true);
                  });
        return promise;
      },
      [](ping_atom) { return true; },
  };
}

} // namespace herald::actors
