#include "actors/reconciler.hpp"

#include "actors/logging_handlers.hpp"
#include "observability/log.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

std::string reconciler_config::validate() const {
  if (interval.count() <= 0)
    return "receipts.reconcile_interval_ms must be > 0";
  if (batch == 0)
    return "receipts.reconcile_batch must be >= 1";
  if (queries_in_flight == 0)
    return "reconciler queries_in_flight must be >= 1";
  return "";
}

namespace {

using self_pointer = reconciler_actor::stateful_pointer<reconciler_state>;
using channel_run = reconciler_state::channel_run;
using domain::task_state;
using answer_kind = providers::status_answer::kind;

// The outcome label of herald_reconciled_total for a task now in `state`.
std::string outcome_label(task_state state) {
  std::string label{domain::to_string(state)};
  std::transform(label.begin(), label.end(), label.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return label;
}

persistence::state_change unconfirmed_change(const domain::delivery& task, domain::timestamp now,
                                             std::string why) {
  persistence::state_change change;
  change.task_id = task.task_id;
  change.from = task_state::sent;
  change.to = task_state::unconfirmed;
  change.attempts = task.attempts;
  change.at = now;
  change.last_error = "no receipt within the receipt window; " + std::move(why);
  return change;
}

void add_receipt(channel_run& run, const domain::delivery& task, persistence::receipt_record r) {
  persistence::receipt_input input;
  input.channel = task.channel;
  input.provider_request_id = task.provider_request_id;
  input.receipt = std::move(r);
  run.receipts.push_back(std::move(input));
  run.receipt_tasks.push_back(task);
}

void read_page(self_pointer self, const std::string& name);
void ask_more(self_pointer self, channel_run& run);

void end_pass(self_pointer, channel_run& run) {
  run.running = false;
  run.to_ask.clear();
  run.asking.clear();
}

// Every write of a page answered: the next page while pages come full and writes succeed (the
// settled tasks have left SENT), else the pass is over until the next interval.
void page_written(self_pointer self, channel_run& run) {
  if (run.writes != 0)
    return;
  if (run.page_full && !run.write_failed)
    read_page(self, run.channel.settings.name);
  else
    end_pass(self, run);
}

void receipts_recorded(self_pointer self, channel_run& run, const receipt_inputs& inputs,
                       const std::vector<domain::delivery>& tasks, receipt_outcomes& outcomes) {
  auto& st = self->state;
  const auto& settings = run.channel.settings;
  std::unordered_set<std::string> counted;
  for (std::size_t i = 0; i < outcomes.size() && i < tasks.size(); ++i) {
    const auto& outcome = outcomes[i];
    if (outcome.result != persistence::receipt_outcome::outcome::applied ||
        !counted.insert(outcome.task_id).second)
      continue;
    st.peers.metrics->reconciled(settings.name, outcome_label(outcome.state));
    log::info("reconciler.receipt_applied",
              {{"channel", settings.name},
               {"task_id", outcome.task_id},
               {"trace_id", tasks[i].trace_id},
               {"status", std::string{domain::to_string(inputs[i].receipt.status)}},
               {"source", std::string{domain::to_string(inputs[i].receipt.source)}},
               {"state", std::string{domain::to_string(outcome.state)}}});
  }
}

// Applies `pending` (emptied) in one request; each applied change counts as reconciled with
// `settled_as` (empty: not settled, only noted).
void write_changes(self_pointer self, channel_run& run, state_changes& pending,
                   std::string settled_as) {
  if (pending.empty())
    return;
  auto& st = self->state;
  const auto name = run.channel.settings.name;
  run.writes += 1;
  auto changes = std::move(pending);
  pending.clear();
  self->request(st.peers.store, st.config.store_timeout, apply_atom_v, changes, attempt_records{})
      .then(
          [self, name, settled_as](task_ids& applied) {
            auto& owner = self->state.channels.at(name);
            owner.writes -= 1;
            if (!settled_as.empty())
              for (std::size_t i = 0; i < applied.size(); ++i)
                self->state.peers.metrics->reconciled(name, settled_as);
            page_written(self, owner);
          },
          [self, name](caf::error& err) {
            auto& owner = self->state.channels.at(name);
            owner.writes -= 1;
            owner.write_failed = true; // still SENT: the next pass reads them again
            log::warn("reconciler.changes_failed", {{"channel", name}, {"error", describe(err)}});
            page_written(self, owner);
          });
}

// Writes what the page's tasks came to: receipts in one request, UNCONFIRMED changes and notes
// of unanswered questions in others; the store writer commits them in its next batch.
void write_page(self_pointer self, channel_run& run) {
  auto& st = self->state;
  const auto name = run.channel.settings.name;
  if (!run.receipts.empty()) {
    run.writes += 1;
    auto inputs = std::move(run.receipts);
    auto tasks = std::move(run.receipt_tasks);
    run.receipts.clear();
    run.receipt_tasks.clear();
    self->request(st.peers.store, st.config.store_timeout, receipt_atom_v, inputs,
                  st.peers.clock->now())
        .then(
            [self, name, inputs, tasks](receipt_outcomes& outcomes) {
              auto& owner = self->state.channels.at(name);
              owner.writes -= 1;
              receipts_recorded(self, owner, inputs, tasks, outcomes);
              page_written(self, owner);
            },
            [self, name](caf::error& err) {
              auto& owner = self->state.channels.at(name);
              owner.writes -= 1;
              owner.write_failed = true; // still SENT: the next pass asks again
              log::warn("reconciler.receipts_failed",
                        {{"channel", name}, {"error", describe(err)}});
              page_written(self, owner);
            });
  }
  write_changes(self, run, run.unconfirmed, "unconfirmed");
  write_changes(self, run, run.unanswered, "");
  page_written(self, run);
}

void page_asked_if_done(self_pointer self, channel_run& run) {
  if (run.running && !run.reading && run.to_ask.empty() && run.asking.empty() && run.writes == 0)
    write_page(self, run);
}

void on_page(self_pointer self, channel_run& run, awaiting_receipts& page) {
  auto& st = self->state;
  const auto now = st.peers.clock->now();
  run.page_full = page.size() >= st.config.batch;
  if (!page.empty())
    run.after = {page.back().sent_at, page.back().task.task_id};
  const bool can_ask = run.channel.provider && run.channel.provider->can_query_status();
  std::size_t recorded = 0;
  for (auto& awaiting : page) {
    if (!awaiting.receipts.empty()) { // recorded before the task was SENT: applies now
      ++recorded;
      for (const auto& receipt : awaiting.receipts)
        add_receipt(run, awaiting.task, receipt);
    } else if (can_ask) {
      const auto& next = awaiting.task.next_question_at;
      if (next && *next > now)
        continue; // asked before without an answer: asked again when due, by a later pass
      run.to_ask.push_back(std::move(awaiting));
    } else {
      run.unconfirmed.push_back(
          unconfirmed_change(awaiting.task, now, "the provider cannot be asked"));
    }
  }
  if (!page.empty())
    log::info("reconciler.page", {{"channel", run.channel.settings.name},
                                  {"tasks", std::to_string(page.size())},
                                  {"recorded_receipts", std::to_string(recorded)},
                                  {"to_ask", std::to_string(run.to_ask.size())}});
  ask_more(self, run);
  page_asked_if_done(self, run);
}

void read_page(self_pointer self, const std::string& name) {
  auto& st = self->state;
  auto& run = st.channels.at(name);
  run.write_failed = false;
  run.reading = true;
  // Ownership is read afresh for every page: partitions that moved away are not read on.
  auto partitions = st.peers.share ? st.peers.share->owned_partitions() : std::nullopt;
  self->request(st.peers.reader, st.config.store_timeout, awaiting_atom_v,
                awaiting_query{name, run.sent_before, run.after,
                               static_cast<std::uint64_t>(st.config.batch), std::move(partitions)})
      .then(
          [self, name](awaiting_receipts& page) {
            auto& read = self->state.channels.at(name);
            read.reading = false;
            on_page(self, read, page);
          },
          [self, name](caf::error& err) {
            log::warn("reconciler.read_failed", {{"channel", name}, {"error", describe(err)}});
            auto& read = self->state.channels.at(name);
            read.reading = false;
            end_pass(self, read);
          });
}

// Starts status queries while the in-flight bound and the channel's rate allow; arranges a
// wake-up when the rate does not.
void ask_more(self_pointer self, channel_run& run) {
  auto& st = self->state;
  const auto& settings = run.channel.settings;
  const auto bound = std::min(st.config.queries_in_flight, settings.window);
  auto handle = caf::actor_cast<reconciler_actor>(self);
  while (!run.to_ask.empty() && run.asking.size() < bound) {
    const auto now = st.peers.clock->now();
    if (auto wait = run.bucket->wait_time(now); wait.count() > 0) {
      if (!run.wake_queued) {
        run.wake_queued = true;
        self->delayed_send(self, std::max(wait, std::chrono::microseconds{1000}), tick_atom_v,
                           settings.name);
      }
      return;
    }
    run.bucket->try_take(now);
    auto awaiting = std::move(run.to_ask.front());
    run.to_ask.pop_front();
    const auto& task = awaiting.task;
    providers::provider_status_query query{task.task_id, task.channel, task.provider_request_id,
                                           task.trace_id, awaiting.provider_message_id};
    auto task_id = task.task_id;
    run.asking.emplace(task_id, std::move(awaiting));
    st.peers.metrics->status_query(settings.name);
    auto done = [handle, name = settings.name, task_id](providers::status_answer answer) {
      caf::anon_send(handle, status_atom_v, name, task_id, std::move(answer));
    };
    try {
      run.channel.provider->query_status(std::move(query), done);
    } catch (const std::exception& e) { // adapters must not throw; if one does, it cannot say
      done({answer_kind::unknown,
            providers::provider_status::accepted,
            {},
            std::string{"adapter threw: "} + e.what()});
    }
  }
}

// The provider gave no answer, which settles nothing: the question is noted on the task (a
// SENT -> SENT change) and asked again when due, or, the channel's questions used up (or
// expire_at passing first), the task is marked UNCONFIRMED.
void note_unanswered(self_pointer self, channel_run& run, const domain::delivery& task,
                     const providers::status_answer& answer, domain::timestamp now) {
  auto& st = self->state;
  const auto unit = std::uniform_real_distribution<double>{0.0, 1.0}(st.jitter_rng);
  const auto verdict = domain::after_unanswered_question(
      run.channel.settings.questions, task.status_questions, now, task.expire_at, unit);
  const std::string_view then = verdict.ask_again_at ? "asked_again" : "unconfirmed";
  st.peers.metrics->status_question_unanswered(run.channel.settings.name, then);
  auto change = unconfirmed_change(task, now, verdict.why_stopped + "; last: " + answer.detail);
  change.status_questions = verdict.asked;
  change.next_question_at = verdict.ask_again_at;
  if (verdict.ask_again_at) {
    change.to = task_state::sent;
    change.last_error = "status query without an answer: " + answer.detail;
    run.unanswered.push_back(std::move(change));
  } else {
    run.unconfirmed.push_back(std::move(change));
  }
}

void on_status(self_pointer self, channel_run& run, const std::string& task_id,
               const providers::status_answer& answer) {
  auto found = run.asking.find(task_id);
  if (found == run.asking.end())
    return;
  auto awaiting = std::move(found->second);
  run.asking.erase(found);
  const auto now = self->state.peers.clock->now();
  auto receipt =
      answer.result == answer_kind::found ? providers::receipt_of(answer.status) : std::nullopt;
  if (receipt) {
    add_receipt(run, awaiting.task,
                {*receipt, domain::receipt_source::query, now, now, "status query"});
  } else if (answer.result == answer_kind::unknown) {
    note_unanswered(self, run, awaiting.task, answer, now);
  } else {
    auto why =
        answer.result == answer_kind::found
            ? "the provider has no final word (" + std::string{to_string(answer.status)} + ")"
            : std::string{"the provider does not know the message"};
    run.unconfirmed.push_back(unconfirmed_change(awaiting.task, now, std::move(why)));
  }
  ask_more(self, run);
  page_asked_if_done(self, run);
}

void start_passes(self_pointer self) {
  auto& st = self->state;
  const auto now = st.peers.clock->now();
  for (auto& [name, run] : st.channels) {
    if (run.running) // still settling the last pass: it reads on by itself
      continue;
    run.running = true;
    run.sent_before = now - run.channel.settings.receipt_window;
    run.after = {};
    read_page(self, name);
  }
}

} // namespace

reconciler_actor::behavior_type
reconciler(reconciler_actor::stateful_pointer<reconciler_state> self,
           std::vector<reconciled_channel> channels, reconciler_peers peers,
           reconciler_config config) {
  install_logging_handlers(self);
  auto& st = self->state;
  st.config = config;
  st.peers = std::move(peers);
  for (auto& channel : channels) {
    if (channel.settings.receipt_window.count() <= 0) // SENT is final there
      continue;
    auto name = channel.settings.name;
    auto& run = st.channels[name];
    run.bucket.emplace(channel.settings.rate_per_sec, channel.settings.burst,
                       st.peers.clock->now());
    run.channel = std::move(channel);
  }
  self->delayed_send(self, st.config.interval, tick_atom_v);
  return {
      [self](tick_atom) {
        start_passes(self);
        self->delayed_send(self, self->state.config.interval, tick_atom_v);
      },
      [self](tick_atom, const std::string& name) {
        auto found = self->state.channels.find(name);
        if (found == self->state.channels.end())
          return;
        found->second.wake_queued = false;
        ask_more(self, found->second);
        page_asked_if_done(self, found->second);
      },
      [self](status_atom, const std::string& name, const std::string& task_id,
             const providers::status_answer& answer) {
        auto found = self->state.channels.find(name);
        if (found != self->state.channels.end())
          on_status(self, found->second, task_id, answer);
      },
  };
}

supervised_component start_reconciler(caf::actor_system& sys,
                                      std::vector<reconciled_channel> channels,
                                      reconciler_peers peers, reconciler_config config) {
  auto start = [channels = std::move(channels), peers = std::move(peers),
                config](caf::actor_system& system) {
    return caf::actor_cast<caf::actor>(system.spawn(reconciler, channels, peers, config));
  };
  auto handle = start(sys);
  return {"reconciler", shutdown_stage::dispatch, handle, start};
}

} // namespace herald::actors
