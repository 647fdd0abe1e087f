#include "tools/load_runner.hpp"

#include "domain/time.hpp"
#include "tools/api_answers.hpp"
#include "tools/http_client.hpp"
#include "tools/load_targets.hpp"
#include "tools/request_schedule.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
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
constexpr milliseconds sample_every{250};
constexpr milliseconds open_loop_lead{100};
/// No provider call for this long (retry queue empty) ends the wait for deliveries.
constexpr double delivery_quiet_s = 2.0;

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

enum class submit_kind {
  accepted,
  rejected,
  gave_up,
  unreadable ///< in a batch answered 200 whose body was not understood
};

/// What became of one event's submission.
struct submit_result {
  submit_kind kind = submit_kind::gave_up;
  int status = 0;
  std::optional<accepted_answer> answer; ///< a 2xx answer that was understood
};

enum class retry_class { overloaded, server_error, final };

/// 503 and 429 are retried after Retry-After, 408 and other 5xx with backoff; the rest is final.
retry_class classify(int status) {
  if (status == 503 || status == 429)
    return retry_class::overloaded;
  if (status == 408 || status >= 500)
    return retry_class::server_error;
  return retry_class::final;
}

double milliseconds_between(steady::time_point from, steady::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

/// Submits `events` as one request (a POST /v1/messages, or with `batch` a POST
/// /v1/messages/batch) until each got a 2xx or a definite rejection; a batch item answered
/// 503/429/408/5xx goes again with the other such items. Every body is identical on every try,
/// so retrying is safe (herald is idempotent). Bounded by options.drain_timeout and a count;
/// once any submission gave up on a dead herald (`herald_gone`), the others try once. `due`
/// (open loop) is where latency counts from; `last_accepted` moves to each 2xx answer.
/// The first exchange goes to target `first_target`, each retry to the next target; after a
/// connection error the next target is tried at once, the backoff waited only when every target
/// failed in a row (with one target: after each).
std::vector<submit_result>
submit_with_retry(target_clients& clients, std::size_t first_target, const load_plan& plan,
                  const std::vector<std::size_t>& events, bool batch, const load_options& options,
                  std::atomic<bool>& herald_gone, std::optional<steady::time_point> due,
                  submit_stats& stats, steady::time_point& last_accepted) {
  std::vector<submit_result> results(events.size());
  std::vector<std::size_t> pending(events.size()); // positions in `events` still to send
  for (std::size_t i = 0; i < pending.size(); ++i)
    pending[i] = i;
  auto budget_end = steady::now() + options.drain_timeout;
  auto backoff = first_backoff;
  bool last_was_connection_error = false;
  std::size_t target = first_target % clients.size();
  std::size_t connection_errors_in_a_row = 0;
  for (std::size_t n = 0; n < max_exchanges_per_submission && !pending.empty(); ++n) {
    if (n > 0 && (steady::now() >= budget_end || herald_gone.load()))
      break;
    ++stats.exchanges;
    stats.count_exchange(target, clients.size());
    auto started = steady::now();
    http_reply reply;
    try {
      auto& client = clients.at(target);
      if (batch) {
        std::vector<std::size_t> sent;
        for (auto position : pending)
          sent.push_back(events[position]);
        reply = client.request("POST", "/v1/messages/batch", batch_body(plan, sent));
      } else {
        reply = client.request("POST", "/v1/messages", plan.events[events[pending[0]]].body);
      }
    } catch (const connection_error&) {
      last_was_connection_error = true;
      stats.retries_connection += pending.size();
      ++stats.target_connection_errors[target];
      target = (target + 1) % clients.size();
      if (++connection_errors_in_a_row % clients.size() == 0) {
        sleep_until_at_most(backoff, budget_end);
        backoff = std::min(backoff * 2, max_backoff);
      }
      continue;
    }
    last_was_connection_error = false;
    connection_errors_in_a_row = 0;
    auto answered = steady::now();
    std::vector<std::size_t> again; // positions this answer decided nothing for
    bool overloaded = false;
    auto decide = [&](std::size_t position, int status, std::optional<accepted_answer> answer) {
      if (status >= 200 && status < 300) {
        results[position] = {submit_kind::accepted, status, std::move(answer)};
        last_accepted = answered;
        return;
      }
      switch (classify(status)) {
      case retry_class::overloaded:
        ++stats.retries_overloaded;
        overloaded = true;
        again.push_back(position);
        break;
      case retry_class::server_error:
        ++stats.retries_server_error;
        again.push_back(position);
        break;
      case retry_class::final:
        results[position] = {submit_kind::rejected, status, std::nullopt};
        break;
      }
    };
    bool success = reply.status >= 200 && reply.status < 300;
    if (success)
      (batch ? stats.batch_latencies_ms : stats.latencies_ms)
          .push_back(milliseconds_between(due.value_or(started), answered));
    if (success && !batch) {
      decide(pending[0], reply.status, parse_submit_answer(reply.body));
    } else if (success) {
      auto items = parse_batch_answer(reply.body, pending.size());
      for (std::size_t k = 0; k < pending.size(); ++k) {
        if (!items)
          results[pending[k]] = {submit_kind::unreadable, reply.status, std::nullopt};
        else
          decide(pending[k], (*items)[k].status, std::move((*items)[k].answer));
      }
    } else {
      for (auto position : pending)
        decide(position, reply.status, std::nullopt);
    }
    pending = std::move(again);
    if (!pending.empty()) {
      target = (target + 1) % clients.size();
      sleep_until_at_most(overloaded ? retry_after_or(reply.retry_after, backoff) : backoff,
                          budget_end);
      backoff = std::min(backoff * 2, max_backoff);
    }
  }
  if (last_was_connection_error)
    herald_gone = true;
  return results;
}

/// One submitting thread's own counts, merged at the end.
struct worker_tally {
  submit_stats stats;
  std::size_t unparseable = 0;
  steady::time_point last_accepted{};
};

/// Submits `events` (event indexes; `resubmission` flags only matter for the plan) from
/// `started` on (the open loop's connections are up before, waiting for their first request), one
/// per request or options.batch per request, closed loop or on `schedule`, and returns the accepted
/// answers in submission order.
std::vector<accepted_answer> submit_all(const load_options& options, const load_plan& plan,
                                        const std::vector<std::size_t>& events, bool late,
                                        const std::optional<open_loop_schedule>& schedule,
                                        steady::time_point started, submit_stats& total,
                                        std::size_t& unparseable) {
  std::vector<std::optional<accepted_answer>> slots(events.size());
  std::vector<worker_tally> tallies(options.concurrency);
  std::vector<std::unique_ptr<target_clients>> clients;
  for (unsigned w = 0; w < options.concurrency; ++w)
    clients.push_back(std::make_unique<target_clients>(options.targets, options.request_timeout));
  std::atomic<bool> herald_gone{false};
  const bool batch = options.batch > 0;
  auto requests = request_groups(events.size(), batch ? options.batch : 1);

  if (!schedule)
    std::this_thread::sleep_until(started);
  parallel_for(requests.size(), options.concurrency, [&](std::size_t w, std::size_t r) {
    auto& tally = tallies[w];
    auto& stats = tally.stats;
    std::optional<steady::time_point> due;
    if (schedule) {
      due = started + std::chrono::duration_cast<steady::duration>(schedule->due(r));
      auto taken = steady::now();
      if (schedule->late(r, taken - started)) {
        ++stats.late_starts;
        stats.max_start_lag_ms =
            std::max(stats.max_start_lag_ms, milliseconds_between(*due, taken));
      } else {
        std::this_thread::sleep_until(*due);
      }
    }
    auto [first, end] = requests[r];
    std::vector<std::size_t> request_events(events.begin() + static_cast<std::ptrdiff_t>(first),
                                            events.begin() + static_cast<std::ptrdiff_t>(end));
    // Request r goes to target r mod N: every target gets every N-th request, whichever
    // connection (thread) is free for it, so the open loop's schedule holds.
    auto results = submit_with_retry(*clients[w], r, plan, request_events, batch, options,
                                     herald_gone, due, stats, tally.last_accepted);
    for (std::size_t k = 0; k < results.size(); ++k) {
      auto& result = results[k];
      switch (result.kind) {
      case submit_kind::accepted:
        ++stats.accepted;
        ++(result.status == 202 ? stats.created_answers : stats.duplicate_answers);
        if (!result.answer) {
          ++tally.unparseable;
          break;
        }
        result.answer->event = request_events[k];
        result.answer->late = late;
        result.answer->status = result.status;
        slots[first + k] = std::move(result.answer);
        break;
      case submit_kind::rejected:
        ++stats.rejected;
        ++stats.rejected_statuses[result.status];
        break;
      case submit_kind::gave_up:
        ++stats.gave_up;
        break;
      case submit_kind::unreadable:
        ++tally.unparseable;
        break;
      }
    }
  });

  total.submissions += events.size();
  total.requests += requests.size();
  steady::time_point last_accepted{};
  for (const auto& tally : tallies) {
    total.merge(tally.stats);
    unparseable += tally.unparseable;
    last_accepted = std::max(last_accepted, tally.last_accepted);
  }
  total.duration_s += seconds_since(started);
  if (last_accepted > started)
    total.accepted_window_s += std::chrono::duration<double>(last_accepted - started).count();
  std::vector<accepted_answer> answers;
  for (auto& slot : slots)
    if (slot)
      answers.push_back(std::move(*slot));
  return answers;
}

/// Reads herald's provider call counter (GET /metrics) every sample_every on its own thread
/// until stopped, summed over the targets (node_sample_sum). The baseline is read first;
/// `origin()` is the first submission's time, which every sample's `at_s` counts from.
class delivery_sampler {
public:
  /// The first submission is `lead` after the baseline reading.
  delivery_sampler(const load_options& options, steady::duration lead)
      : clients_(options.targets, options.request_timeout), sum_(options.targets.size()) {
    origin_ = steady::now();
    baseline_ = read_now();
    origin_ = steady::now() + lead;
    if (baseline_)
      thread_ = std::thread([this] { sample_until_stopped(); });
  }
  ~delivery_sampler() { stop(); }
  delivery_sampler(const delivery_sampler&) = delete;
  delivery_sampler& operator=(const delivery_sampler&) = delete;

  bool available() const { return baseline_.has_value(); }
  const provider_sample& baseline() const { return *baseline_; }
  steady::time_point origin() const { return origin_; }

  std::vector<provider_sample> samples() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return samples_;
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
      thread_.join();
  }

  /// One reading now (after stop(): the sampling thread owns the connections until then).
  std::optional<provider_sample> read_now() {
    std::vector<std::optional<provider_sample>> readings;
    for (auto& text : clients_.read_metrics()) {
      readings.emplace_back();
      if (text && text->find("herald_") != std::string::npos)
        readings.back() = read_provider_sample(*text, 0);
    }
    return sum_.add(readings, seconds_since(origin_));
  }

private:
  void sample_until_stopped() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      auto sample = read_now();
      lock.lock();
      if (sample)
        samples_.push_back(*sample);
      wake_.wait_for(lock, sample_every, [this] { return stopping_; });
    }
  }

  target_clients clients_;
  node_sample_sum sum_;
  steady::time_point origin_;
  std::optional<provider_sample> baseline_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<provider_sample> samples_;
  std::thread thread_;
};

/// Waits, after the live submissions, until herald's provider calls reached the tasks the
/// answers named or went quiet (deliveries_settled), bounded by options.drain_timeout; then
/// stops the sampler and computes the delivered rate. No message is read meanwhile.
delivery_stats wait_for_deliveries(delivery_sampler& sampler,
                                   const std::vector<accepted_answer>& answers,
                                   const load_options& options, std::ostream& progress) {
  delivery_stats stats;
  std::set<std::string> tasks;
  for (const auto& answer : answers)
    for (const auto& task : answer.tasks)
      tasks.insert(task.task_id);
  stats.expected = static_cast<double>(tasks.size());
  if (!sampler.available())
    return stats;
  auto started = steady::now();
  auto since_s = std::chrono::duration<double>(started - sampler.origin()).count();
  auto deadline = started + options.drain_timeout;
  auto next_progress = started + progress_every;
  for (;;) {
    auto samples = sampler.samples();
    if (deliveries_settled(sampler.baseline(), samples, stats.expected, since_s,
                           delivery_quiet_s)) {
      stats.settled = true;
      break;
    }
    if (steady::now() >= deadline)
      break;
    if (steady::now() >= next_progress && !samples.empty()) {
      progress << "herald load: deliveries: "
               << static_cast<long long>(samples.back().successes - sampler.baseline().successes)
               << " of " << tasks.size() << " tasks, "
               << static_cast<long long>(seconds_since(started)) << " s\n";
      next_progress = steady::now() + progress_every;
    }
    sleep_until_at_most(sample_every, deadline);
  }
  sampler.stop();
  auto samples = sampler.samples();
  stats.samples = samples.size();
  stats.available = sampler.baseline().has_counter ||
                    std::any_of(samples.begin(), samples.end(),
                                [](const provider_sample& s) { return s.has_counter; });
  stats.figures = delivery_from_samples(sampler.baseline(), samples);
  stats.wait_s = seconds_since(started);
  return stats;
}

/// Reads each message in `ids` once into `messages` (one GET each, `concurrency` at a time);
/// a message that cannot be read keeps its last look.
void read_messages(const load_options& options, const std::vector<std::string>& ids,
                   std::map<std::string, observed_message>& messages, steady::time_point deadline) {
  std::vector<std::optional<observed_message>> seen(ids.size());
  std::vector<std::unique_ptr<target_clients>> clients;
  for (unsigned w = 0; w < options.concurrency; ++w)
    clients.push_back(std::make_unique<target_clients>(options.targets, options.request_timeout));
  parallel_for(ids.size(), options.concurrency, [&](std::size_t w, std::size_t i) {
    if (steady::now() >= deadline)
      return;
    try {
      // Every node reads the one database: message i from target i mod N, or any that answers.
      auto reply = clients[w]->request_any(i, "GET", "/v1/messages/" + ids[i]);
      if (reply.status == 200)
        seen[i] = parse_message_view(reply.body);
    } catch (const connection_error&) {
      // herald (every target) may be restarting: keep the message pending
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
  target_clients metrics_clients(options.targets, options.request_timeout);
  auto retry_queue_depth = [&] {
    return metric_sum_over(metrics_clients.read_metrics(), "herald_retry_queue_depth");
  };

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

    stats.retry_queue_depth = retry_queue_depth();
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
    stats.retry_queue_depth = retry_queue_depth();
  return stats;
}

/// GET /v1/stats over [from, to] from any target (all read the one database); sets record.stats
/// or record.stats_unavailable. When no target answers it is asked again until `deadline`:
/// herald may be restarting (a drill kills it).
void read_stats(target_clients& herald, const std::string& from, const std::string& to,
                run_record& record, steady::time_point deadline) {
  record.stats.reset();
  for (;;) {
    try {
      auto reply = herald.request_any(0, "GET", "/v1/stats?from=" + from + "&to=" + to);
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
  target_clients herald(options.targets, options.request_timeout);
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
  batch_latencies_ms.insert(batch_latencies_ms.end(), other.batch_latencies_ms.begin(),
                            other.batch_latencies_ms.end());
  late_starts += other.late_starts;
  max_start_lag_ms = std::max(max_start_lag_ms, other.max_start_lag_ms);
  for (std::size_t target = 0; target < other.target_exchanges.size(); ++target) {
    count_exchange(target, other.target_exchanges.size(), other.target_exchanges[target]);
    target_connection_errors[target] += other.target_connection_errors[target];
  }
}

void submit_stats::count_exchange(std::size_t target, std::size_t targets, std::size_t n) {
  if (target_exchanges.size() < targets) {
    target_exchanges.resize(targets);
    target_connection_errors.resize(targets);
  }
  target_exchanges[target] += n;
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
  std::optional<open_loop_schedule> schedule;
  if (options.rate)
    schedule.emplace(static_cast<double>(*options.rate));
  progress << "herald load: submitting " << plan.events.size() << " events (" << live_events.size()
           << (options.batch ? " items in batches of " + std::to_string(options.batch) : " POSTs")
           << ") to " << targets_text(options.targets) << " with " << options.concurrency
           << (options.targets.size() > 1 ? " connections to each, " : " connections, ")
           << (options.rate ? "open loop at " + std::to_string(*options.rate) + " requests/s"
                            : std::string("closed loop"))
           << "\n";
  // The open loop's connections start before its first request is due, so none of the first
  // requests is late only because its thread was still being created.
  delivery_sampler sampler(options, options.rate ? steady::duration(open_loop_lead)
                                                 : steady::duration::zero());
  if (!sampler.available())
    progress << "herald load: cannot read herald's /metrics: delivered rate not measured\n";
  record.answers = submit_all(options, plan, live_events, false, schedule, sampler.origin(),
                              run.live, record.unparseable_answers);
  progress << "herald load: " << run.live.accepted << " events accepted, " << run.live.rejected
           << " rejected, " << run.live.gave_up << " given up in " << run.live.duration_s
           << " s; waiting for the deliveries\n";
  run.delivery = wait_for_deliveries(sampler, record.answers, options, progress);
  progress << "herald load: draining\n";

  for (const auto& answer : record.answers)
    record.messages.emplace(answer.message_id, observed_message{});
  run.drain = wait_for_messages(
      options, record.messages, [](const observed_task& t) { return is_terminal_status(t.status); },
      options.drain_timeout, "drain", progress);
  if (run.delivery.available && !run.delivery.figures.counter_reset)
    if (auto after = sampler.read_now())
      run.delivery.successes_after_wait =
          after->successes - sampler.baseline().successes - run.delivery.figures.delivered;

  std::set<std::size_t> accepted_events;
  for (const auto& answer : record.answers)
    accepted_events.insert(answer.event);
  std::vector<std::size_t> late_events;
  for (auto event : plan.late)
    if (accepted_events.count(event))
      late_events.push_back(event);
  if (!late_events.empty()) {
    progress << "herald load: resubmitting " << late_events.size() << " events after the drain\n";
    auto late_answers = submit_all(options, plan, late_events, true, std::nullopt, steady::now(),
                                   run.late, record.unparseable_answers);
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

  // Per-node counters: summed over the nodes that answer (a killed node's died with it).
  target_clients herald(options.targets, options.request_timeout);
  auto metrics = herald.read_metrics();
  run.ambiguous_resends = metric_sum_over(metrics, "herald_ambiguous_resends_total");
  run.receipts_total = metric_sum_over(metrics, "herald_receipts_total");
  run.receipts_rejected = metric_sum_over(metrics, "herald_receipts_rejected_total");
  run.reconciled_total = metric_sum_over(metrics, "herald_reconciled_total");

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
