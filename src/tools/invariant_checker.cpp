#include "tools/invariant_checker.hpp"

#include "domain/task_state.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace herald::tools {

namespace {

constexpr std::size_t max_examples = 5;

/// Collects up to max_examples names for a detail line.
class examples {
public:
  void add(const std::string& text) {
    if (items_.size() < max_examples)
      items_.push_back(text);
  }
  std::string text() const {
    if (items_.empty())
      return {};
    std::string out = " (e.g.";
    for (const auto& item : items_)
      out += " " + item;
    return out + ")";
  }

private:
  std::vector<std::string> items_;
};

invariant_result verdict(std::string name, std::size_t violations, const std::string& what,
                         const examples& e = {}) {
  invariant_result result;
  result.name = std::move(name);
  result.pass = violations == 0;
  result.detail = std::to_string(violations) + " " + what + (result.pass ? "" : e.text());
  return result;
}

/// The (channel -> task id) map of one answer, as a comparable value.
std::map<std::string, std::string> task_map(const accepted_answer& answer) {
  std::map<std::string, std::string> tasks;
  for (const auto& task : answer.tasks)
    tasks[task.channel] = task.task_id;
  return tasks;
}

/// The tasks of every message herald showed, once each.
std::vector<const observed_task*> shown_tasks(const run_record& run) {
  std::vector<const observed_task*> tasks;
  std::unordered_set<std::string> seen;
  for (const auto& [message_id, message] : run.messages)
    if (message.found)
      for (const auto& task : message.tasks)
        if (seen.insert(task.task_id).second)
          tasks.push_back(&task);
  return tasks;
}

/// end_state: every task herald shows for the run (fallback tasks too) in an end state.
invariant_result check_end_state(const run_record& run, check_report& report) {
  examples unsettled;
  for (const auto* task : shown_tasks(run)) {
    if (!is_end_status(task->status, task->channel, run.receipt_channels)) {
      ++report.unsettled_tasks;
      unsettled.add(task->task_id + "(" + task->channel + " " + task->status + ")");
    }
  }
  return verdict("end_state", report.unsettled_tasks,
                 "tasks not in an end state (SENT on a receipt channel counts as unresolved)",
                 unsettled);
}

/// undelivered_fails_over: UNDELIVERED fails over like a permanent failure, so the message
/// must show a task on the channel's fallback (new, or one the event named already).
invariant_result check_undelivered_failover(const run_record& run, check_report& report) {
  examples stranded;
  for (const auto& [message_id, message] : run.messages) {
    if (!message.found)
      continue;
    for (const auto& task : message.tasks) {
      auto fallback = run.fallbacks.find(task.channel);
      if (task.status != "UNDELIVERED" || fallback == run.fallbacks.end())
        continue;
      bool has_fallback_task =
          std::any_of(message.tasks.begin(), message.tasks.end(),
                      [&](const observed_task& t) { return t.channel == fallback->second; });
      if (!has_fallback_task) {
        ++report.undelivered_without_fallback;
        stranded.add(task.task_id);
      }
    }
  }
  return verdict("undelivered_fails_over", report.undelivered_without_fallback,
                 "undelivered tasks without a task on their fallback channel", stranded);
}

/// Compares one row of /v1/stats with the counts seen through the messages.
void compare_row(const std::string& row, const stats_counts& stats,
                 const std::map<std::string, std::uint64_t>& seen, std::size_t& mismatches,
                 examples& e) {
  std::uint64_t sum = 0;
  for (const auto& state : all_task_states()) {
    auto in_stats = stats.states.count(state) ? stats.states.at(state) : 0;
    auto in_messages = seen.count(state) ? seen.at(state) : 0;
    sum += in_stats;
    if (in_stats != in_messages) {
      ++mismatches;
      e.add(row + " " + state + " " + std::to_string(in_stats) +
            "!=" + std::to_string(in_messages));
    }
  }
  if (sum != stats.accepted) {
    ++mismatches;
    e.add(row + " accepted " + std::to_string(stats.accepted) + "!=sum " + std::to_string(sum));
  }
}

/// stats_match: /v1/stats over the run's window against every task the messages show.
invariant_result check_stats(const run_record& run, check_report& report) {
  if (!run.stats) {
    ++report.stats_mismatches;
    return invariant_result{"stats_match", false,
                            "cannot read /v1/stats: " + run.stats_unavailable};
  }
  std::map<std::string, std::map<std::string, std::uint64_t>> seen; // channel -> state -> n
  std::map<std::string, std::uint64_t> seen_total;
  for (const auto* task : shown_tasks(run)) {
    ++seen[task->channel][task->status];
    ++seen_total[task->status];
  }
  examples e;
  std::set<std::string> channels;
  for (const auto& [channel, counts] : run.stats->channels)
    channels.insert(channel);
  for (const auto& [channel, counts] : seen)
    channels.insert(channel);
  for (const auto& channel : channels) {
    auto row = run.stats->channels.find(channel);
    compare_row(channel, row == run.stats->channels.end() ? stats_counts{} : row->second,
                seen[channel], report.stats_mismatches, e);
  }
  compare_row("total", run.stats->total, seen_total, report.stats_mismatches, e);
  auto result = verdict("stats_match", report.stats_mismatches,
                        "counts where /v1/stats and the messages disagree", e);
  result.detail += "; stats accepted " + std::to_string(run.stats->total.accepted);
  return result;
}

} // namespace

bool check_report::all_pass() const {
  return std::all_of(invariants.begin(), invariants.end(),
                     [](const invariant_result& r) { return r.pass; });
}

bool is_terminal_status(const std::string& status) {
  auto state = domain::parse_task_state(status);
  return state && domain::is_terminal(*state);
}

bool is_delivered_status(const std::string& status) {
  return status == "SENT" || status == "DELIVERED" || status == "READ" || status == "CLICKED" ||
         status == "UNCONFIRMED" || status == "UNDELIVERED";
}

bool is_end_status(const std::string& status, const std::string& channel,
                   const std::set<std::string>& receipt_channels) {
  return is_terminal_status(status) && !(status == "SENT" && receipt_channels.count(channel));
}

const std::vector<std::string>& all_task_states() {
  using domain::task_state;
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (auto state :
         {task_state::pending, task_state::sending, task_state::retry_wait, task_state::sent,
          task_state::delivered, task_state::read, task_state::clicked, task_state::undelivered,
          task_state::unconfirmed, task_state::failed, task_state::dead, task_state::expired,
          task_state::suppressed})
      out.emplace_back(domain::to_string(state));
    return out;
  }();
  return names;
}

check_report check_invariants(const run_record& run) {
  check_report report;

  // Group the answers by event; the first answer of an event is its reference.
  std::map<std::size_t, std::vector<const accepted_answer*>> by_event;
  for (const auto& answer : run.answers)
    by_event[answer.event].push_back(&answer);
  report.accepted_events = by_event.size();

  // Accepted tasks: every task id any answer named (with its message and channel).
  struct accepted_task {
    std::string message_id;
    std::string channel;
  };
  std::map<std::string, accepted_task> accepted;
  std::set<std::string> message_ids;
  examples mismatch_examples;
  examples late_examples;
  for (const auto& [event, answers] : by_event) {
    auto reference = task_map(*answers.front());
    bool mismatch = answers.front()->message_id.empty() ||
                    reference.size() != answers.front()->tasks.size() ||
                    (run.channels_per_event != 0 && reference.size() != run.channels_per_event);
    for (const auto* answer : answers) {
      message_ids.insert(answer->message_id);
      for (const auto& task : answer->tasks)
        accepted.emplace(task.task_id, accepted_task{answer->message_id, task.channel});
      if (answer->message_id != answers.front()->message_id || task_map(*answer) != reference)
        mismatch = true;
      if (answer->late) {
        bool created = answer->status != 200 ||
                       std::any_of(answer->tasks.begin(), answer->tasks.end(),
                                   [](const answered_task& t) { return !t.duplicate; });
        if (created) {
          ++report.late_creations;
          late_examples.add("event " + std::to_string(event));
        }
      }
    }
    if (mismatch) {
      ++report.id_mismatches;
      mismatch_examples.add("event " + std::to_string(event));
    }
  }
  message_ids.erase(std::string());
  report.accepted_messages = message_ids.size();
  report.accepted_tasks = accepted.size();

  // What herald shows, by task id, counting how often each id appears.
  std::unordered_map<std::string, const observed_task*> observed;
  std::unordered_map<std::string, std::size_t> seen_count;
  for (const auto& [message_id, message] : run.messages) {
    if (!message.found)
      continue;
    for (const auto& task : message.tasks) {
      observed.emplace(task.task_id, &task);
      ++seen_count[task.task_id];
    }
  }

  examples lost_examples;
  std::size_t seen_twice = 0;
  for (const auto& [task_id, info] : accepted) {
    auto found = observed.find(task_id);
    if (found == observed.end()) {
      ++report.states["MISSING"];
      ++report.lost_tasks;
      lost_examples.add(task_id + "(missing)");
      continue;
    }
    const auto& status = found->second->status;
    ++report.states[status.empty() ? "UNKNOWN" : status];
    if (!is_terminal_status(status)) {
      ++report.lost_tasks;
      lost_examples.add(task_id + "(" + status + ")");
    }
    if (seen_count[task_id] > 1)
      ++seen_twice;
  }
  for (const auto& [task_id, task] : observed) {
    if (!accepted.count(task_id))
      ++report.extra_tasks;
    if (is_delivered_status(task->status))
      ++report.delivered_tasks;
  }

  std::size_t state_sum = 0;
  for (const auto& [state, count] : report.states)
    if (state != "MISSING")
      state_sum += count;

  {
    invariant_result accepted_some{"something_accepted",
                                   report.accepted_events > 0 || run.events == 0,
                                   std::to_string(report.accepted_events) + " of " +
                                       std::to_string(run.events) + " events accepted"};
    report.invariants.push_back(accepted_some);
  }
  report.invariants.push_back(verdict("nothing_lost", report.lost_tasks,
                                      "accepted tasks not found or not terminal", lost_examples));
  {
    auto result =
        verdict("stable_ids", report.id_mismatches + run.unparseable_answers,
                "events whose answers disagree or were not understood", mismatch_examples);
    report.invariants.push_back(result);
  }
  report.invariants.push_back(verdict("late_duplicates_create_nothing", report.late_creations,
                                      "late resubmissions that created a task", late_examples));
  // A SUPPRESSED task handed its message to a fallback task the failover created, so that
  // message must show a task no submission named. Without one the user got nothing — unless
  // policy suppressed it (DND, an opt-out, a cap): then nothing was to be sent.
  examples suppressed_examples;
  for (const auto& [message_id, message] : run.messages) {
    if (!message.found)
      continue;
    const bool has_failover_task =
        std::any_of(message.tasks.begin(), message.tasks.end(),
                    [&](const observed_task& t) { return accepted.count(t.task_id) == 0; });
    for (const auto& task : message.tasks) {
      if (task.status == "SUPPRESSED" && task.policy_reason.empty() &&
          accepted.count(task.task_id) && !has_failover_task) {
        ++report.suppressed_for_nothing;
        suppressed_examples.add(task.task_id);
      }
    }
  }
  report.invariants.push_back(verdict("failover_sends_something", report.suppressed_for_nothing,
                                      "tasks suppressed without a fallback task of their own",
                                      suppressed_examples));
  {
    std::size_t off = (report.accepted_tasks - state_sum) + seen_twice;
    auto result = verdict("accounting", off, "accepted tasks not counted exactly once");
    result.detail += "; accepted " + std::to_string(report.accepted_tasks) + " = sum over states " +
                     std::to_string(state_sum) + " + missing " +
                     std::to_string(report.accepted_tasks - state_sum);
    report.invariants.push_back(result);
  }

  if (!run.receipt_channels.empty())
    report.invariants.push_back(check_end_state(run, report));
  if (!run.fallbacks.empty())
    report.invariants.push_back(check_undelivered_failover(run, report));
  // A herald without /v1/stats (404) is reported, not failed.
  if (run.stats || (!run.stats_unavailable.empty() && run.stats_unavailable != "not available"))
    report.invariants.push_back(check_stats(run, report));

  if (run.provider_expected) {
    report.invariants.push_back(verdict("provider_reachable", run.provider ? 0 : 1,
                                        "failed reads of the provider's records"));
  }
  if (run.provider) {
    const auto& provider = *run.provider;
    examples twice;
    for (const auto& id : provider.ids_delivered_more_than_once)
      twice.add(id);
    report.invariants.push_back(verdict("provider_at_most_once",
                                        provider.duplicate_effective_deliveries,
                                        "duplicate effective deliveries", twice));

    examples not_delivered;
    std::unordered_set<std::string> known_ids;
    for (const auto& [task_id, task] : observed) {
      if (!task->provider_request_id.empty())
        known_ids.insert(task->provider_request_id);
      if (!run.provider_channels.count(task->channel) || !is_delivered_status(task->status))
        continue;
      // Its status questions went unanswered: herald does not know whether the provider got
      // it (a crash may have come before the call) and, rightly, did not send it again.
      if (task->status == "UNCONFIRMED" && task->status_questions > 0)
        continue;
      if (!provider.delivered_ids.count(task->provider_request_id)) {
        ++report.sent_without_delivery;
        not_delivered.add(task_id);
      }
    }
    report.invariants.push_back(verdict("provider_none_lost", report.sent_without_delivery,
                                        "delivered tasks the provider never processed",
                                        not_delivered));

    examples unknown;
    for (const auto& id : provider.delivered_ids) {
      if (!known_ids.count(id)) {
        ++report.unknown_provider_ids;
        unknown.add(id);
      }
    }
    report.invariants.push_back(verdict("provider_no_unknown", report.unknown_provider_ids,
                                        "provider deliveries of ids herald does not show",
                                        unknown));
  }
  return report;
}

} // namespace herald::tools
