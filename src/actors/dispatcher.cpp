#include "actors/dispatcher.hpp"

#include "actors/logging_handlers.hpp"
#include "actors/retry_timer.hpp"
#include "observability/log.hpp"

#include <algorithm>
#include <cmath>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

namespace {

using self_pointer = dispatcher_actor::stateful_pointer<dispatcher_state>;

// Whether `task` belongs to a partition another node of the cluster owns.
bool owned_elsewhere(const dispatcher_state& st, const domain::delivery& task,
                     std::optional<domain::partition>& partition) {
  if (!st.owned || !st.cluster)
    return false;
  partition = domain::partition_of(task.message_id);
  return partition && !st.owns[*partition];
}

enum class foreign_tasks {
  forward, ///< tasks of other nodes' partitions go to their owners (new work)
  keep     ///< every task is sent here (recovery, due retries, hand-offs: already placed)
};

// Hands due tasks to their channels and the rest to the timer; answers how many each channel
// got. With `forward`, tasks of partitions other nodes own go to the cluster member instead.
std::map<std::string, std::size_t> dispatch(self_pointer self, deliveries& tasks,
                                            foreign_tasks foreign = foreign_tasks::keep) {
  auto& st = self->state;
  auto now = st.clock->now();
  deliveries not_yet;
  std::map<std::string, deliveries> by_channel;
  partitioned_tasks elsewhere;
  for (auto& task : tasks) {
    std::optional<domain::partition> partition;
    if (foreign == foreign_tasks::forward && owned_elsewhere(st, task, partition))
      elsewhere.emplace_back(*partition, task.task_id);
    else if (due_time(task, now) > now)
      not_yet.push_back(std::move(task));
    else
      by_channel[task.channel].push_back(std::move(task));
  }
  if (!elsewhere.empty())
    self->send(st.cluster, forward_atom_v, std::move(elsewhere));
  if (!not_yet.empty()) {
    if (st.timer)
      self->send(st.timer, schedule_atom_v, std::move(not_yet));
    else // the database keeps them; recovery after the timer's start reloads them
      log::warn("dispatcher.no_timer", {{"tasks", std::to_string(not_yet.size())}});
  }
  std::map<std::string, std::size_t> handed;
  for (auto& [name, batch] : by_channel) {
    auto target = st.channels.find(name);
    if (target == st.channels.end()) {
      // Configured away since the tasks were accepted: they stay in the database, untouched.
      log::warn("dispatcher.unknown_channel",
                {{"channel", name}, {"tasks", std::to_string(batch.size())}});
      continue;
    }
    handed[name] = batch.size();
    self->send(target->second, dispatch_atom_v, std::move(batch));
  }
  return handed;
}

// At most this many tasks per recovery page: a few windows of the channel recovered (of the
// smallest window when all are), so one page never floods a channel's lanes.
std::uint64_t page_size(const dispatcher_state& st, const std::string& channel) {
  std::uint64_t window = 0;
  for (auto& [name, settings] : st.settings)
    if (channel.empty() || name == channel)
      window = window == 0 ? settings.window : std::min<std::uint64_t>(window, settings.window);
  if (window == 0)
    return st.config.recovery_page;
  return std::max<std::uint64_t>(
      1, std::min(st.config.recovery_page, window * st.config.windows_per_page));
}

// How long the channels need to send what they were just handed at their configured rates:
// the next page waits that long, so the lanes drain between pages instead of piling up. At
// most a second: a slow channel (1 task/s) must not hold every other channel's recovery for
// minutes per page, and the lanes are bounded anyway (`queue_limit`; the rest stays in the
// database for the next sweep).
caf::timespan time_to_send(const dispatcher_state& st,
                           const std::map<std::string, std::size_t>& handed) {
  double seconds = 0;
  for (auto& [name, count] : handed) {
    auto found = st.settings.find(name);
    if (found != st.settings.end() && found->second.rate_per_sec > 0)
      seconds = std::max(seconds, static_cast<double>(count) / found->second.rate_per_sec);
  }
  return std::chrono::duration_cast<caf::timespan>(std::chrono::milliseconds{
      static_cast<std::int64_t>(std::ceil(std::min(seconds, 1.0) * 1000))});
}

void read_page(self_pointer self);

void start_recovery(self_pointer self, const std::string& channel, bool sweep) {
  auto& st = self->state;
  if (st.recovering) {
    // One pass at a time; a second request for the same pass adds nothing.
    auto same = [&](const dispatcher_state::recovery_pass& waiting) {
      return waiting.channel == channel && waiting.sweep == sweep;
    };
    if (std::none_of(st.recoveries_waiting.begin(), st.recoveries_waiting.end(), same))
      st.recoveries_waiting.push_back({channel, sweep, "", 0});
    return;
  }
  st.recovering = dispatcher_state::recovery_pass{channel, sweep, "", 0};
  read_page(self);
}

void finish_recovery(self_pointer self) {
  auto& st = self->state;
  st.recovering.reset();
  if (st.recoveries_waiting.empty() || st.draining)
    return;
  auto next = st.recoveries_waiting.front();
  st.recoveries_waiting.pop_front();
  start_recovery(self, next.channel, next.sweep);
}

void read_page(self_pointer self) {
  auto& current_pass = *self->state.recovering;
  auto limit = page_size(self->state, current_pass.channel);
  auto now = self->state.clock->now();
  // Retries due after the next sweep are not read: that sweep reads them before they are due,
  // so a restart with a million tasks waiting an hour reads none of them now.
  persistence::unfinished_filter which{current_pass.channel,
                                       now + self->state.config.sweep_interval, self->state.owned};
  self->request(self->state.reader, self->state.config.store_timeout, recover_atom_v,
                current_pass.after, limit, now, std::move(which))
      .then(
          [self, limit](deliveries& page) {
            auto& st = self->state;
            auto& pass = *st.recovering;
            auto full = page.size() == limit;
            pass.found += page.size();
            if (!page.empty())
              pass.after = page.back().task_id;
            auto pause = time_to_send(st, dispatch(self, page));
            if (full && !st.draining) {
              if (pause.count() > 0)
                self->delayed_send(self, pause, page_atom_v);
              else
                self->send(self, page_atom_v);
              return;
            }
            // A sweep that found nothing is routine; a recovery always says it is done.
            log::write(pass.found == 0 && pass.sweep ? log::level::debug : log::level::info,
                       "dispatcher.recovered",
                       {{"tasks", std::to_string(pass.found)},
                        {"channel", pass.channel.empty() ? "*" : pass.channel}});
            finish_recovery(self);
          },
          [self](caf::error& err) {
            // The database is the truth and still holds the tasks: the next sweep tries again.
            log::error("dispatcher.recovery_failed",
                       {{"channel", self->state.recovering->channel}, {"error", describe(err)}});
            finish_recovery(self);
          });
}

// Dispatches and sweeps `partitions` from now on; sweeps at once when it gained some, so tasks
// a departed node left behind are picked up as soon as their leases allow.
void take_ownership(self_pointer self, partition_list partitions) {
  auto& st = self->state;
  std::vector<bool> owns(domain::partition_count, false);
  for (auto p : partitions)
    owns[p] = true;
  bool gained = false;
  for (std::size_t p = 0; p < owns.size(); ++p)
    gained = gained || (owns[p] && !(st.owned ? st.owns[p] : true));
  st.owned = std::move(partitions);
  st.owns = std::move(owns);
  if (gained && !st.draining)
    start_recovery(self, "", true);
}

} // namespace

dispatcher_actor::behavior_type
dispatcher(dispatcher_actor::stateful_pointer<dispatcher_state> self,
           std::vector<channel_settings> channels, store_reader_actor reader,
           std::shared_ptr<const domain::clock> clock, dispatcher_config config) {
  install_logging_handlers(self);
  auto& init = self->state;
  for (auto& settings : channels) {
    auto name = settings.name;
    init.settings.emplace(std::move(name), std::move(settings));
  }
  init.reader = std::move(reader);
  init.clock = std::move(clock);
  init.config = config;
  if (config.clustered) {
    init.owned.emplace();
    init.owns.assign(domain::partition_count, false);
  }
  self->delayed_send(self, init.config.sweep_interval, sweep_atom_v);
  return {
      [self](dispatch_atom, deliveries& tasks) { dispatch(self, tasks, foreign_tasks::forward); },
      [self](taken_atom, taken_in_claim& taken) {
        auto& st = self->state;
        auto channel = st.channels.find(taken.channel);
        if (channel != st.channels.end()) {
          self->send(channel->second, taken_atom_v, std::move(taken));
          return;
        }
        // Not attached (yet): the tasks stay SENDING under the lease, and whoever takes them
        // when it runs out asks the provider about them, or resends them with their request id.
        log::warn("dispatcher.taken_without_channel",
                  {{"channel", taken.channel}, {"tasks", std::to_string(taken.calls.size())}});
      },
      [self](attach_atom, const std::string& name, channel_actor& handle) {
        // Nothing to send: the channel learns it is routed to, so it may offer claims places
        // (the writer's word on places taken reaches it through here).
        self->send(handle, dispatch_atom_v, deliveries{});
        self->state.channels[name] = std::move(handle);
      },
      [self](attach_atom, retry_timer_actor& handle) { self->state.timer = std::move(handle); },
      [self](recover_atom, const std::string& channel) { start_recovery(self, channel, false); },
      [self](due_atom, task_ids& ids) -> caf::result<caf::timespan> {
        auto& st = self->state;
        auto promise = self->make_response_promise<caf::timespan>();
        auto count = ids.size();
        self->request(st.reader, st.config.store_timeout, load_atom_v, std::move(ids),
                      st.clock->now())
            .then(
                [self, promise](deliveries& tasks) mutable {
                  promise.deliver(time_to_send(self->state, dispatch(self, tasks)));
                },
                [promise, count](caf::error& err) mutable {
                  // Still due in the database: the next sweep reads them.
                  log::error("dispatcher.due_read_failed",
                             {{"tasks", std::to_string(count)}, {"error", describe(err)}});
                  promise.deliver(std::move(err));
                });
        return promise;
      },
      [self](page_atom) {
        if (!self->state.recovering)
          return;
        if (self->state.draining)
          finish_recovery(self);
        else
          read_page(self);
      },
      [self](sweep_atom) {
        auto& st = self->state;
        if (st.draining)
          return;
        start_recovery(self, "", true); // waits behind a pass that is running, once
        self->delayed_send(self, st.config.sweep_interval, sweep_atom_v);
      },
      [self](attach_atom, cluster_member_actor& handle) {
        self->state.cluster = std::move(handle);
      },
      [self](own_atom, partition_list& partitions) { take_ownership(self, std::move(partitions)); },
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
