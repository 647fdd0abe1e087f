#include "actors/dispatcher.hpp"

#include "actors/logging_handlers.hpp"
#include "observability/log.hpp"

#include <caf/exit_reason.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

namespace {

using self_pointer = dispatcher_actor::stateful_pointer<dispatcher_state>;

void start_channel(self_pointer self, const std::string& name) {
  auto& st = self->state;
  auto& spec = st.specs.at(name);
  // Linked: a dying channel tells us (exit handler below), and we take our channels with us.
  st.channels[name] = self->spawn<caf::linked>(channel, spec.settings, spec.provider, st.store,
                                               st.metrics, st.clock);
}

void dispatch(self_pointer self, deliveries& tasks) {
  auto& st = self->state;
  std::map<std::string, deliveries> by_channel;
  for (auto& task : tasks)
    by_channel[task.channel].push_back(std::move(task));
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
void recover(self_pointer self, std::string after, std::optional<std::string> only,
             std::uint64_t found) {
  auto& st = self->state;
  self->request(st.reader, st.config.store_timeout, recover_atom_v, after, st.config.recovery_page)
      .then(
          [self, only, found](deliveries& page) {
            auto full = page.size() == self->state.config.recovery_page;
            auto last = page.empty() ? std::string{} : page.back().task_id;
            auto total = found + page.size();
            if (only)
              page.erase(std::remove_if(page.begin(), page.end(),
                                        [&](auto& task) { return task.channel != *only; }),
                         page.end());
            dispatch(self, page);
            if (full)
              recover(self, last, only, total);
            else
              log::info("dispatcher.recovered",
                        {{"tasks", std::to_string(total)}, {"channel", only.value_or("*")}});
          },
          [self, after, only, found](caf::error& err) {
            log::error("dispatcher.recovery_failed", {{"error", describe(err)}});
            // The database is the truth and still holds the tasks: try again shortly.
            self->delayed_send(self, std::chrono::seconds{5}, recover_atom_v);
          });
}

void on_exit(self_pointer self, const caf::exit_msg& down) {
  auto& st = self->state;
  for (auto& [name, handle] : st.channels) {
    if (handle.address() != down.source)
      continue;
    if (st.draining)
      return;
    auto now = std::chrono::steady_clock::now();
    auto& history = st.restarts[name];
    while (!history.empty() && now - history.front() > st.config.restart_window)
      history.pop_front();
    if (history.size() >= st.config.max_restarts) {
      log::error("dispatcher.channel_given_up",
                 {{"channel", name}, {"reason", caf::to_string(down.reason)}});
      st.channels.erase(name);
      return;
    }
    history.push_back(now);
    log::warn("dispatcher.channel_restart", {{"channel", name},
                                             {"reason", caf::to_string(down.reason)},
                                             {"restarts", std::to_string(history.size())}});
    auto restarted = name; // `name` dies with the map entry it refers to
    start_channel(self, restarted);
    recover(self, "", restarted, 0);
    return;
  }
  self->quit(down.reason); // not from a channel: we are told to stop
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
  for (auto& spec : specs) {
    auto name = spec.settings.name;
    st.specs.emplace(name, std::move(spec));
    start_channel(self, name);
  }
  self->set_exit_handler([self](caf::exit_msg& down) { on_exit(self, down); });
  return {
      [self](dispatch_atom, deliveries& tasks) { dispatch(self, tasks); },
      [self](recover_atom) { recover(self, "", std::nullopt, 0); },
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
