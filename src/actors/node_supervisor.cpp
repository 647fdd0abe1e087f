#include "actors/node_supervisor.hpp"

#include "actors/logging_handlers.hpp"
#include "observability/log.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

std::string supervision_config::validate() const {
  if (max_restarts == 0)
    return "supervision.max_restarts must be at least 1";
  if (restart_window.count() <= 0)
    return "supervision.restart_window_ms must be > 0";
  if (shutdown_grace.count() <= 0)
    return "supervision.shutdown_grace_ms must be > 0";
  if (shutdown_kill_timeout.count() <= 0)
    return "supervision.shutdown_kill_timeout_ms must be > 0";
  return "";
}

supervised_component start_channel(caf::actor_system& sys, channel_spec spec, channel_peers peers) {
  auto name = spec.settings.name;
  auto dispatcher = peers.dispatcher;
  auto start = [spec = std::move(spec), peers = std::move(peers)](caf::actor_system& system) {
    auto handle = system.spawn(channel, spec.settings, spec.provider, peers);
    caf::anon_send(peers.dispatcher, attach_atom_v, spec.settings.name, handle);
    return handle;
  };
  auto handle = start(sys);
  return {"channel " + name, shutdown_stage::dispatch, caf::actor_cast<caf::actor>(handle),
          [start, dispatcher, name](caf::actor_system& system) {
            auto restarted = start(system);
            caf::anon_send(dispatcher, recover_atom_v, name);
            return caf::actor_cast<caf::actor>(restarted);
          }};
}

supervised_component start_retry_timer(caf::actor_system& sys, dispatcher_actor dispatcher,
                                       std::shared_ptr<herald::metrics> metrics,
                                       std::shared_ptr<const domain::clock> clock,
                                       retry_timer_config config) {
  auto start = [dispatcher, metrics, clock, config](caf::actor_system& system) {
    auto handle = system.spawn(retry_timer, dispatcher, metrics, clock, config);
    caf::anon_send(dispatcher, attach_atom_v, handle);
    return handle;
  };
  auto handle = start(sys);
  return {"retry_timer", shutdown_stage::timer, caf::actor_cast<caf::actor>(handle),
          [start, dispatcher](caf::actor_system& system) {
            auto restarted = start(system);
            caf::anon_send(dispatcher, recover_atom_v, std::string{});
            return caf::actor_cast<caf::actor>(restarted);
          }};
}

namespace {

using self_pointer = node_supervisor_actor::stateful_pointer<node_supervisor_state>;

// Whether `name` may be restarted once more now; records the restart when it may.
bool within_intensity(node_supervisor_state& st, const std::string& name) {
  auto now = st.clock->now();
  auto& history = st.restarts[name];
  while (!history.empty() && now - history.front() >= st.config.restart_window)
    history.pop_front();
  if (history.size() >= st.config.max_restarts)
    return false;
  history.push_back(now);
  return true;
}

void give_up(node_supervisor_state& st, std::size_t index, const std::string& why) {
  auto& component = st.components[index];
  st.running[index] = false;
  component.handle = nullptr;
  log::error("node.component_down", {{"component", component.name}, {"reason", why}});
  st.health->report(component.name, why);
}

// Whether component `i` still runs and belongs to the stage being stopped.
bool stopping_now(const node_supervisor_state& st, std::size_t i) {
  return st.running[i] && static_cast<std::uint8_t>(st.components[i].stage) == st.stopping_stage;
}

bool stage_running(const node_supervisor_state& st) {
  for (std::size_t i = 0; i < st.components.size(); ++i)
    if (stopping_now(st, i))
      return true;
  return false;
}

// Sends the stage an exit and starts its grace period.
void stop_stage(self_pointer self) {
  auto& st = self->state;
  for (std::size_t i = 0; i < st.components.size(); ++i)
    if (stopping_now(st, i))
      self->send_exit(st.components[i].handle, caf::exit_reason::user_shutdown);
  self->delayed_send(self, st.config.shutdown_grace, deadline_atom_v, st.deadline_generation,
                     false);
}

// Moves on to the next stage that has something running; answers the shutdown after the last.
void next_stage(self_pointer self) {
  auto& st = self->state;
  ++st.deadline_generation;
  for (; st.stopping_stage <= static_cast<std::uint8_t>(shutdown_stage::reader);
       ++st.stopping_stage)
    if (stage_running(st)) {
      stop_stage(self);
      return;
    }
  log::info("node.stopped");
  st.shutdown->deliver(true);
  self->quit();
}

void on_down(self_pointer self, const caf::down_msg& down) {
  auto& st = self->state;
  for (std::size_t i = 0; i < st.components.size(); ++i) {
    auto& component = st.components[i];
    if (!st.running[i] || component.handle.address() != down.source)
      continue;
    auto reason = caf::to_string(down.reason);
    if (st.shutdown) {
      st.running[i] = false;
      component.handle = nullptr;
      if (!stage_running(st)) {
        ++st.stopping_stage;
        next_stage(self);
      }
      return;
    }
    if (!component.restart) {
      give_up(st, i, "stopped (" + reason + ") and cannot be restarted");
      return;
    }
    if (!within_intensity(st, component.name)) {
      give_up(st, i,
              "stopped (" + reason + ") after " + std::to_string(st.config.max_restarts) +
                  " restarts within " + std::to_string(st.config.restart_window.count()) +
                  " ms; not restarted");
      return;
    }
    component.handle = component.restart(self->system());
    self->monitor(component.handle);
    log::warn("node.component_restarted",
              {{"component", component.name},
               {"reason", reason},
               {"restarts", std::to_string(st.restarts[component.name].size())}});
    return;
  }
}

} // namespace

node_supervisor_actor::behavior_type
node_supervisor(node_supervisor_actor::stateful_pointer<node_supervisor_state> self,
                std::vector<supervised_component> components, std::shared_ptr<health_board> health,
                std::shared_ptr<const domain::clock> clock, supervision_config config) {
  install_logging_handlers(self);
  auto& init = self->state;
  init.components = std::move(components);
  init.running.assign(init.components.size(), true);
  init.health = std::move(health);
  init.clock = std::move(clock);
  init.config = config;
  // Monitored, not linked: an exit with reason `kill` bypasses exit handlers in CAF 0.17, so
  // a killed component would take the supervisor, and the node, with it. A component that is
  // already gone is reported at once (monitoring it delivers its down message).
  for (auto& component : init.components)
    self->monitor(component.handle);
  self->set_down_handler([self](caf::down_msg& down) { on_down(self, down); });
  return {
      [self](shutdown_atom) -> caf::result<bool> {
        auto& st = self->state;
        if (st.shutdown)
          return caf::make_error(caf::sec::runtime_error, "already shutting down");
        st.shutdown = self->make_response_promise<bool>();
        log::info("node.stopping");
        st.stopping_stage = 0;
        next_stage(self);
        return *st.shutdown;
      },
      [self](deadline_atom, std::uint64_t generation, bool killed) {
        auto& st = self->state;
        if (!st.shutdown || generation != st.deadline_generation)
          return; // the stage stopped in time
        for (std::size_t i = 0; i < st.components.size(); ++i) {
          if (!stopping_now(st, i))
            continue;
          if (killed) {
            log::error("node.component_abandoned", {{"component", st.components[i].name}});
            st.running[i] = false;
          } else {
            log::warn("node.component_killed", {{"component", st.components[i].name}});
            self->send_exit(st.components[i].handle, caf::exit_reason::kill);
          }
        }
        if (killed) {
          ++st.stopping_stage;
          next_stage(self);
        } else {
          self->delayed_send(self, st.config.shutdown_kill_timeout, deadline_atom_v, generation,
                             true);
        }
      },
  };
}

} // namespace herald::actors
