#include "tools/load_runner.hpp"

#include "domain/time.hpp"
#include "tools/api_answers.hpp"
#include "tools/http_client.hpp"
#include "tools/metrics_text.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <set>
#include <thread>

namespace herald::tools {

namespace {

using steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t max_exchanges_per_submission = 100000;
constexpr std::size_t max_drain_rounds = 100000;
constexpr milliseconds first_backoff{50};
constexpr milliseconds max_backoff{2000};
constexpr milliseconds max_retry_after{5000};
constexpr milliseconds drain_pause_idle{250};
constexpr milliseconds drain_pause_busy{1000};
constexpr auto progress_every = std::chrono::seconds(5);

double seconds_since(steady::time_point start) {
  return std::chrono::duration<double>(steady::now() - start).count();
}

/// Sleeps `pause`, but not past `deadline`.
void sleep_until_at_most(milliseconds pause, steady::time_point deadline) {
  auto until = std::min(steady::now() + pause, deadline);
  std::this_thread::sleep_until(until);
}

/// Calls fn(worker, item) for every item in [0, count) on up to `workers` threads.
template <typename Fn> void parallel_for(std::size_t count, unsigned workers, Fn fn) {
  auto threads_wanted = std::min<std::size_t>(workers, count);
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> threads;
  threads.reserve(threads_wanted);
  for (std::size_t w = 0; w < threads_wanted; ++w)
    threads.emplace_back([&next, &fn, count, w] {
      for (auto item = next++; item < count; item = next++)
        fn(w, item);
    });
  for (auto& thread : threads)
    thread.join();
}

milliseconds retry_after_or(const std::string& header, milliseconds fallback) {
  if (header.empty())
    return fallback;
  char* end = nullptr;
  double seconds = std::strtod(header.c_str(), &end);
  if (end == header.c_str() || !std::isfinite(seconds) || seconds < 0)
    return fallback;
  auto wanted = milliseconds(static_cast<long long>(seconds * 1000));
  return std::clamp(wanted, first_backoff, max_retry_after);
}

enum class submit_kind { accepted, rejected, gave_up };

struct submit_result {
  submit_kind kind = submit_kind::gave_up;
  int status = 0;
  std::string body;
};

/// POSTs one body until it gets a 2xx or a definite rejection. The body is identical on every
/// try, so retrying is safe (herald is idempotent). Bounded by options.drain_timeout and a
/// count; once any submission gave up on a dead herald (`herald_gone`), the others try once.
submit_result submit_with_retry(http_client& client, const std::string& body,
                                const load_options& options, std::atomic<bool>& herald_gone,
                                submit_stats& stats) {
  auto budget_end = steady::now() + options.drain_timeout;
  auto backoff = first_backoff;
  bool last_was_connection_error = false;
  for (std::size_t n = 0; n < max_exchanges_per_submission; ++n) {
    if (n > 0 && (steady::now() >= budget_end || herald_gone.load()))
      break;
    ++stats.exchanges;
    auto started = steady::now();
    http_reply reply;
    try {
      reply = client.request("POST", "/v1/messages", body);
    } catch (const connection_error&) {
      last_was_connection_error = true;
      ++stats.retries_connection;
      sleep_until_at_most(backoff, budget_end);
      backoff = std::min(backoff * 2, max_backoff);
      continue;
    }
    last_was_connection_error = false;
    if (reply.status >= 200 && reply.status < 300) {
      stats.latencies_ms.push_back(
          std::chrono::duration<double, std::milli>(steady::now() - started).count());
      return {submit_kind::accepted, reply.status, std::move(reply.body)};
    }
    if (reply.status == 503 || reply.status == 429) {
      ++stats.retries_overloaded;
      sleep_until_at_most(retry_after_or(reply.retry_after, backoff), budget_end);
      backoff = std::min(backoff * 2, max_backoff);
      continue;
    }
    if (reply.status == 408 || reply.status >= 500) {
      ++stats.retries_server_error;
      sleep_until_at_most(backoff, budget_end);
      backoff = std::min(backoff * 2, max_backoff);
      continue;
    }
    return {submit_kind::rejected, reply.status, std::move(reply.body)};
  }
  if (last_was_connection_error)
    herald_gone = true;
  return {};
}

/// Submits `events` (event indexes; `resubmission` flags only matter for the plan) and
/// returns the accepted answers in submission order.
std::vector<accepted_answer> submit_all(const load_options& options, const load_plan& plan,
                                        const std::vector<std::size_t>& events, bool late,
                                        submit_stats& total, std::size_t& unparseable) {
  std::vector<std::optional<accepted_answer>> slots(events.size());
  std::vector<submit_stats> per_worker(options.concurrency);
  std::vector<std::size_t> unparseable_per_worker(options.concurrency, 0);
  std::vector<std::unique_ptr<http_client>> clients;
  for (unsigned w = 0; w < options.concurrency; ++w)
    clients.push_back(std::make_unique<http_client>(options.target, options.request_timeout));
  std::atomic<bool> herald_gone{false};

  auto started = steady::now();
  parallel_for(events.size(), options.concurrency, [&](std::size_t w, std::size_t i) {
    auto event = events[i];
    auto& stats = per_worker[w];
    auto result =
        submit_with_retry(*clients[w], plan.events[event].body, options, herald_gone, stats);
    switch (result.kind) {
    case submit_kind::accepted: {
      ++stats.accepted;
      ++(result.status == 202 ? stats.created_answers : stats.duplicate_answers);
      auto answer = parse_submit_answer(result.body);
      if (!answer) {
        ++unparseable_per_worker[w];
        return;
      }
      answer->event = event;
      answer->late = late;
      answer->status = result.status;
      slots[i] = std::move(answer);
      break;
    }
    case submit_kind::rejected:
      ++stats.rejected;
      ++stats.rejected_statuses[result.status];
      break;
    case submit_kind::gave_up:
      ++stats.gave_up;
      break;
    }
  });

  total.submissions += events.size();
  for (const auto& stats : per_worker)
    total.merge(stats);
  total.duration_s += seconds_since(started);
  for (auto count : unparseable_per_worker)
    unparseable += count;
  std::vector<accepted_answer> answers;
  for (auto& slot : slots)
    if (slot)
      answers.push_back(std::move(*slot));
  return answers;
}

std::optional<double> read_metric(http_client& client, const char* name) {
  try {
    auto reply = client.request("GET", "/metrics");
    if (reply.status == 200)
      return metric_sum(reply.body, name);
  } catch (const connection_error&) {
  }
  return std::nullopt;
}

/// Reads each message in `ids` once into `messages` (one GET each, `concurrency` at a time);
/// a message that cannot be read keeps its last look.
void read_messages(const load_options& options, const std::vector<std::string>& ids,
                   std::map<std::string, observed_message>& messages, steady::time_point deadline) {
  std::vector<std::optional<observed_message>> seen(ids.size());
  std::vector<std::unique_ptr<http_client>> clients;
  for (unsigned w = 0; w < options.concurrency; ++w)
    clients.push_back(std::make_unique<http_client>(options.target, options.request_timeout));
  parallel_for(ids.size(), options.concurrency, [&](std::size_t w, std::size_t i) {
    if (steady::now() >= deadline)
      return;
    try {
      auto reply = clients[w]->request("GET", "/v1/messages/" + ids[i]);
      if (reply.status == 200)
        seen[i] = parse_message_view(reply.body);
    } catch (const connection_error&) {
      // herald may be restarting: keep the message pending
    }
  });
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (seen[i])
      messages[ids[i]] = std::move(*seen[i]);
}

/// Polls every message until `finished(task)` holds for all its tasks or `timeout` passed.
/// `phase` names the wait in progress lines ("drain", "settle").
template <typename Finished>
drain_stats wait_for_messages(const load_options& options,
                              std::map<std::string, observed_message>& messages, Finished finished,
                              std::chrono::seconds timeout, const char* phase,
                              std::ostream& progress) {
  drain_stats stats;
  auto started = steady::now();
  auto deadline = started + timeout;
  auto next_progress = started + progress_every;
  http_client metrics_client(options.target, options.request_timeout);

  std::vector<std::string> pending;
  for (const auto& [id, message] : messages)
    pending.push_back(id);

  while (!pending.empty() && steady::now() < deadline && stats.rounds < max_drain_rounds) {
    ++stats.rounds;
    read_messages(options, pending, messages, deadline);
    std::vector<std::string> still_pending;
    for (const auto& id : pending) {
      const auto& message = messages[id];
      bool done =
          message.found && std::all_of(message.tasks.begin(), message.tasks.end(), finished);
      if (!done)
        still_pending.push_back(id);
    }
    pending = std::move(still_pending);
    if (pending.empty())
      break;

    stats.retry_queue_depth = read_metric(metrics_client, "herald_retry_queue_depth");
    if (steady::now() >= next_progress) {
      progress << "herald load: " << phase << ": " << pending.size()
               << " messages not finished, retry queue "
               << (stats.retry_queue_depth
                       ? std::to_string(static_cast<long long>(*stats.retry_queue_depth))
                       : std::string("?"))
               << ", " << static_cast<long long>(seconds_since(started)) << " s\n";
      next_progress = steady::now() + progress_every;
    }
    bool busy = stats.retry_queue_depth && *stats.retry_queue_depth > 0;
    sleep_until_at_most(busy ? drain_pause_busy : drain_pause_idle, deadline);
  }
  stats.complete = pending.empty();
  stats.pending_at_end = pending.size();
  stats.duration_s = seconds_since(started);
  if (!stats.retry_queue_depth)
    stats.retry_queue_depth = read_metric(metrics_client, "herald_retry_queue_depth");
  return stats;
}

/// GET /v1/stats over [from, to]; sets record.stats or record.stats_unavailable. A refused
/// connection is asked again until `deadline`: herald may be restarting (a drill kills it).
void read_stats(http_client& herald, const std::string& from, const std::string& to,
                run_record& record, steady::time_point deadline) {
  record.stats.reset();
  for (;;) {
    try {
      auto reply = herald.request("GET", "/v1/stats?from=" + from + "&to=" + to);
      if (reply.status == 404) {
        record.stats_unavailable = "not available";
        return;
      }
      if (reply.status != 200) {
        record.stats_unavailable = "GET /v1/stats answered " + std::to_string(reply.status);
        return;
      }
      record.stats = parse_stats_answer(reply.body);
      record.stats_unavailable = record.stats ? "" : "GET /v1/stats answered an unknown shape";
      return;
    } catch (const connection_error& e) {
      record.stats_unavailable = e.what();
      if (steady::now() >= deadline)
        return;
      sleep_until_at_most(drain_pause_idle, deadline);
    }
  }
}

/// Reads /v1/stats and the messages as one consistent picture: a late receipt (READ after
/// DELIVERED) may move a task between the two readings, so they are taken again until two
/// stats readings around one pass over the messages agree (a few times at most).
void read_stats_and_messages(const load_options& options, const std::string& from,
                             run_record& record) {
  constexpr int max_tries = 4;
  http_client herald(options.target, options.request_timeout);
  std::vector<std::string> ids;
  for (const auto& [id, message] : record.messages)
    ids.push_back(id);
  for (int attempt = 0; attempt < max_tries; ++attempt) {
    auto to = domain::format_rfc3339(std::chrono::system_clock::now() + std::chrono::seconds(1));
    read_stats(herald, from, to, record, steady::now() + options.drain_timeout);
    if (!record.stats)
      return;
    auto before = *record.stats;
    read_messages(options, ids, record.messages, steady::now() + options.drain_timeout);
    read_stats(herald, from, to, record, steady::now() + options.drain_timeout);
    if (record.stats && *record.stats == before)
      return;
  }
}

/// GET a provider record; "" when it cannot be read.
std::string provider_get(http_client& client, const std::string& target) {
  try {
    auto reply = client.request("GET", target);
    if (reply.status == 200)
      return reply.body;
  } catch (const connection_error&) {
  }
  return {};
}

} // namespace

void submit_stats::merge(const submit_stats& other) {
  exchanges += other.exchanges;
  accepted += other.accepted;
  created_answers += other.created_answers;
  duplicate_answers += other.duplicate_answers;
  rejected += other.rejected;
  gave_up += other.gave_up;
  retries_overloaded += other.retries_overloaded;
  retries_connection += other.retries_connection;
  retries_server_error += other.retries_server_error;
  for (const auto& [status, count] : other.rejected_statuses)
    rejected_statuses[status] += count;
  latencies_ms.insert(latencies_ms.end(), other.latencies_ms.begin(), other.latencies_ms.end());
}

load_run run_load_test(const load_options& options, const load_plan& plan, std::ostream& progress) {
  load_run run;
  auto started = steady::now();
  auto& record = run.record;
  record.events = plan.events.size();
  record.channels_per_event = options.channels.size();
  record.provider_expected = options.provider.has_value();
  record.provider_channels.insert(options.provider_channels.begin(),
                                  options.provider_channels.end());
  record.receipt_channels.insert(options.receipt_channels.begin(), options.receipt_channels.end());
  record.fallbacks = options.fallbacks;
  // The stats window starts before the first task can be created.
  run.stats_from = domain::format_rfc3339(std::chrono::system_clock::now());

  std::vector<std::size_t> live_events;
  live_events.reserve(plan.live.size());
  for (const auto& submission : plan.live)
    live_events.push_back(submission.event);
  progress << "herald load: submitting " << plan.events.size() << " events (" << live_events.size()
           << " POSTs) to " << options.target.to_string() << " with " << options.concurrency
           << " connections\n";
  record.answers =
      submit_all(options, plan, live_events, false, run.live, record.unparseable_answers);
  progress << "herald load: " << run.live.accepted << " POSTs accepted, " << run.live.rejected
           << " rejected, " << run.live.gave_up << " given up in " << run.live.duration_s
           << " s; draining\n";

  for (const auto& answer : record.answers)
    record.messages.emplace(answer.message_id, observed_message{});
  run.drain = wait_for_messages(
      options, record.messages, [](const observed_task& t) { return is_terminal_status(t.status); },
      options.drain_timeout, "drain", progress);
  run.elapsed_to_drain_s = seconds_since(started);

  std::set<std::size_t> accepted_events;
  for (const auto& answer : record.answers)
    accepted_events.insert(answer.event);
  std::vector<std::size_t> late_events;
  for (auto event : plan.late)
    if (accepted_events.count(event))
      late_events.push_back(event);
  if (!late_events.empty()) {
    progress << "herald load: resubmitting " << late_events.size() << " events after the drain\n";
    auto late_answers =
        submit_all(options, plan, late_events, true, run.late, record.unparseable_answers);
    record.answers.insert(record.answers.end(), std::make_move_iterator(late_answers.begin()),
                          std::make_move_iterator(late_answers.end()));
  }

  if (!record.receipt_channels.empty()) {
    progress << "herald load: settling: waiting for receipts and the reconciler\n";
    run.settle = wait_for_messages(
        options, record.messages,
        [&](const observed_task& t) {
          return is_end_status(t.status, t.channel, record.receipt_channels);
        },
        options.settle_timeout, "settle", progress);
  }
  read_stats_and_messages(options, run.stats_from, record);

  http_client herald(options.target, options.request_timeout);
  run.ambiguous_resends = read_metric(herald, "herald_ambiguous_resends_total");
  run.receipts_total = read_metric(herald, "herald_receipts_total");
  run.receipts_rejected = read_metric(herald, "herald_receipts_rejected_total");
  run.reconciled_total = read_metric(herald, "herald_reconciled_total");

  if (options.provider) {
    http_client provider(*options.provider, options.request_timeout);
    run.provider_summary_json = provider_get(provider, "/calls/summary");
    auto ids = provider_get(provider, "/calls/ids");
    record.provider = parse_provider_records(run.provider_summary_json, ids);
    if (!record.provider)
      run.provider_summary_json.clear();
    run.provider_receipts = parse_provider_stats(provider_get(provider, "/stats"));
  }
  run.total_duration_s = seconds_since(started);
  return run;
}

} // namespace herald::tools
