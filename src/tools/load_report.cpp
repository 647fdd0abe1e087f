#include "tools/load_report.hpp"

#include "tools/percentiles.hpp"

#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include <boost/json.hpp>

namespace herald::tools {

namespace json = boost::json;

namespace {

double rate(double count, double seconds) {
  return seconds > 0 ? count / seconds : 0;
}

double rounded(double value) {
  return std::round(value * 1000) / 1000;
}

json::object latency_json(const std::vector<double>& values_ms) {
  auto latency = summarize_latencies(values_ms);
  return json::object{{"count", latency.count},
                      {"p50", rounded(latency.p50)},
                      {"p99", rounded(latency.p99)},
                      {"p999", rounded(latency.p999)},
                      {"max", rounded(latency.max)}};
}

/// `accepted_tasks` only for the live phase (late resubmissions create none).
json::object stats_json(const submit_stats& stats, std::optional<std::size_t> accepted_tasks) {
  json::object rejected;
  for (const auto& [status, count] : stats.rejected_statuses)
    rejected[std::to_string(status)] = count;
  json::object body{{"submissions", stats.submissions},
                    {"requests", stats.requests},
                    {"exchanges", stats.exchanges},
                    {"accepted", stats.accepted},
                    {"created_answers", stats.created_answers},
                    {"duplicate_answers", stats.duplicate_answers},
                    {"rejected", stats.rejected},
                    {"rejected_statuses", std::move(rejected)},
                    {"gave_up", stats.gave_up},
                    {"retries_overloaded", stats.retries_overloaded},
                    {"retries_connection", stats.retries_connection},
                    {"retries_server_error", stats.retries_server_error},
                    {"duration_s", rounded(stats.duration_s)},
                    {"accepted_window_s", rounded(stats.accepted_window_s)},
                    {"accepted_per_s",
                     rounded(rate(static_cast<double>(stats.accepted), stats.accepted_window_s))},
                    {"late_starts", stats.late_starts},
                    {"max_start_lag_ms", rounded(stats.max_start_lag_ms)},
                    {"latency_ms", latency_json(stats.latencies_ms)},
                    {"batch_latency_ms", latency_json(stats.batch_latencies_ms)}};
  if (accepted_tasks)
    body["accepted_tasks_per_s"] =
        rounded(rate(static_cast<double>(*accepted_tasks), stats.accepted_window_s));
  return body;
}

json::object delivery_json(const delivery_stats& delivery) {
  return json::object{{"available", delivery.available},
                      {"counter_reset", delivery.figures.counter_reset},
                      {"provider_calls", delivery.figures.calls},
                      {"delivered", delivery.figures.delivered},
                      {"expected_tasks", delivery.expected},
                      {"last_provider_call_s", rounded(delivery.figures.last_at_s)},
                      {"delivered_per_s", rounded(delivery.figures.per_s)},
                      {"settled", delivery.settled},
                      {"wait_s", rounded(delivery.wait_s)},
                      {"samples", delivery.samples},
                      {"successes_after_wait", delivery.successes_after_wait}};
}

json::value optional_number(const std::optional<double>& value) {
  return value ? json::value(*value) : json::value(nullptr);
}

json::object wait_json(const drain_stats& wait) {
  return json::object{{"complete", wait.complete},
                      {"rounds", wait.rounds},
                      {"pending_at_end", wait.pending_at_end},
                      {"duration_s", rounded(wait.duration_s)},
                      {"retry_queue_depth", optional_number(wait.retry_queue_depth)}};
}

json::object counts_json(const stats_counts& counts) {
  json::object body{{"accepted", counts.accepted}};
  for (const auto& [state, n] : counts.states)
    body[state] = n;
  return body;
}

json::object receipts_json(const load_run& run) {
  json::object body{
      {"herald", json::object{{"receipts_total", optional_number(run.receipts_total)},
                              {"receipts_rejected_total", optional_number(run.receipts_rejected)},
                              {"reconciled_total", optional_number(run.reconciled_total)}}}};
  if (const auto& p = run.provider_receipts) {
    json::object statuses;
    for (const auto& [status, n] : p->statuses)
      statuses[status] = n;
    body["provider"] = json::object{{"posting", p->posting},
                                    {"requests", p->requests},
                                    {"without_receipt", p->without_receipt},
                                    {"receipts_pending", p->receipts_pending},
                                    {"planned", p->planned},
                                    {"dropped", p->dropped},
                                    {"duplicated", p->duplicated},
                                    {"acknowledged", p->acknowledged},
                                    {"failed", p->failed},
                                    {"max_lag_ms", p->max_lag_ms},
                                    {"statuses", std::move(statuses)}};
  } else {
    body["provider"] = nullptr;
  }
  return body;
}

/// One target's share of the HTTP exchanges (live and late), and how many got no answer.
struct target_share {
  std::string target;
  std::size_t exchanges = 0;
  std::size_t connection_errors = 0;
};

std::vector<target_share> target_shares(const load_options& options, const load_run& run) {
  std::vector<target_share> shares;
  for (std::size_t i = 0; i < options.targets.size(); ++i) {
    auto of = [i](const std::vector<std::size_t>& counts) {
      return i < counts.size() ? counts[i] : std::size_t{0};
    };
    shares.push_back(
        {options.targets[i].to_string(),
         of(run.live.target_exchanges) + of(run.late.target_exchanges),
         of(run.live.target_connection_errors) + of(run.late.target_connection_errors)});
  }
  return shares;
}

/// "12" or "?" for a metric that could not be read.
std::string metric_text(const std::optional<double>& value) {
  return value ? std::to_string(static_cast<long long>(*value)) : std::string("?");
}

std::string fixed(double value, int digits = 1) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

/// "accepted … POSTs/s, … tasks/s (…); delivered … tasks/s (…)": the rates of a run.
std::string rates_text(const load_options& options, const load_run& run,
                       std::size_t accepted_tasks) {
  const auto& live = run.live;
  std::ostringstream out;
  out << "  rates      accepted "
      << fixed(rate(static_cast<double>(live.accepted), live.accepted_window_s));
  if (options.batch > 0)
    out << " events/s in "
        << fixed(rate(static_cast<double>(live.requests), live.accepted_window_s))
        << " batches/s, ";
  else
    out << " POSTs/s, ";
  out << fixed(rate(static_cast<double>(accepted_tasks), live.accepted_window_s))
      << " tasks/s (first submission to last accepted answer " << fixed(live.accepted_window_s, 2)
      << " s); ";
  const auto& delivery = run.delivery;
  if (!delivery.available || delivery.figures.counter_reset) {
    out << "delivered not measured ("
        << (delivery.available ? "herald restarted: its counters began again"
                               : "no herald_provider_calls_total on /metrics")
        << ")\n";
    return out.str();
  }
  out << "delivered " << fixed(delivery.figures.per_s) << " tasks/s ("
      << static_cast<long long>(delivery.figures.delivered) << " provider successes of "
      << static_cast<long long>(delivery.figures.calls) << " calls for "
      << static_cast<long long>(delivery.expected) << " tasks, last provider call at "
      << fixed(delivery.figures.last_at_s) << " s";
  if (!delivery.settled)
    out << "; still calling when the wait ended";
  if (delivery.successes_after_wait > 0)
    out << "; " << static_cast<long long>(delivery.successes_after_wait)
        << " more successes during the drain, not counted";
  out << ")\n";
  return out.str();
}

/// "latency    p50/p99/p999/max …": the POST latencies, or the batch requests' ones.
std::string latency_text(const load_options& options, const submit_stats& live) {
  bool batch = options.batch > 0;
  auto latency = summarize_latencies(batch ? live.batch_latencies_ms : live.latencies_ms);
  std::ostringstream out;
  out << (batch ? "  latency    batch p50/p99/p999/max " : "  latency    POST p50/p99/p999/max ")
      << fixed(latency.p50, 2) << "/" << fixed(latency.p99, 2) << "/" << fixed(latency.p999, 2)
      << "/" << fixed(latency.max, 2) << " ms (" << latency.count
      << (batch ? " batch requests of up to " + std::to_string(options.batch) + " events"
                : std::string(" POSTs"));
  if (options.rate) {
    out << ", open loop at " << *options.rate << "/s from the due time, " << live.late_starts
        << " late starts";
    if (live.late_starts > 0)
      out << " (up to " << fixed(live.max_start_lag_ms, 1)
          << " ms behind: not open-loop any more, raise --concurrency)";
  } else {
    out << ", closed loop, " << options.concurrency << " connections";
  }
  out << ")\n";
  return out.str();
}

} // namespace

std::string report_json(const load_options& options, const load_run& run,
                        const check_report& report) {
  json::object body;
  body["pass"] = report.all_pass();
  body["target"] = targets_text(options.targets);
  if (options.targets.size() > 1) { // one target: the report is as it always was
    json::array targets;
    for (const auto& share : target_shares(options, run))
      targets.push_back(json::object{{"target", share.target},
                                     {"exchanges", share.exchanges},
                                     {"connection_errors", share.connection_errors}});
    body["targets"] = std::move(targets);
  }
  body["provider"] =
      options.provider ? json::value(options.provider->to_string()) : json::value(nullptr);
  body["events"] = run.record.events;
  json::array channels;
  for (const auto& channel : options.channels)
    channels.emplace_back(channel);
  body["channels"] = std::move(channels);
  body["duration_s"] = rounded(run.total_duration_s);
  body["mode"] =
      json::object{{"loop", options.rate ? "open" : "closed"},
                   {"rate", options.rate ? json::value(*options.rate) : json::value(nullptr)},
                   {"batch", options.batch ? json::value(options.batch) : json::value(nullptr)},
                   {"concurrency", options.concurrency}};
  body["ingest"] = stats_json(run.live, report.accepted_tasks);
  body["late"] = stats_json(run.late, std::nullopt);
  body["drain"] = wait_json(run.drain);
  body["settle"] = run.settle ? json::value(wait_json(*run.settle)) : json::value(nullptr);
  body["receipts"] = receipts_json(run);
  if (run.record.stats) {
    json::object per_channel;
    for (const auto& [channel, counts] : run.record.stats->channels)
      per_channel[channel] = counts_json(counts);
    body["stats"] = json::object{{"available", true},
                                 {"from", run.stats_from},
                                 {"total", counts_json(run.record.stats->total)},
                                 {"channels", std::move(per_channel)}};
  } else {
    body["stats"] = json::object{{"available", false}, {"reason", run.record.stats_unavailable}};
  }
  body["delivery"] = delivery_json(run.delivery);
  body["delivered_tasks"] = report.delivered_tasks;
  body["delivered_per_s"] = run.delivery.available && !run.delivery.figures.counter_reset
                                ? json::value(rounded(run.delivery.figures.per_s))
                                : json::value(nullptr);
  json::object states;
  for (const auto& [state, count] : report.states)
    states[state] = count;
  body["states"] = std::move(states);
  body["counts"] =
      json::object{{"accepted_events", report.accepted_events},
                   {"accepted_messages", report.accepted_messages},
                   {"accepted_tasks", report.accepted_tasks},
                   {"lost_tasks", report.lost_tasks},
                   {"id_mismatches", report.id_mismatches},
                   {"unparseable_answers", run.record.unparseable_answers},
                   {"late_creations", report.late_creations},
                   {"extra_tasks", report.extra_tasks},
                   {"sent_without_delivery", report.sent_without_delivery},
                   {"unknown_provider_ids", report.unknown_provider_ids},
                   {"unsettled_tasks", report.unsettled_tasks},
                   {"undelivered_without_fallback", report.undelivered_without_fallback},
                   {"stats_mismatches", report.stats_mismatches}};
  body["ambiguous_resends"] =
      run.ambiguous_resends ? json::value(*run.ambiguous_resends) : json::value(nullptr);
  if (run.provider_summary_json.empty()) {
    body["provider_summary"] = nullptr;
  } else {
    boost::system::error_code ec;
    auto summary = json::parse(run.provider_summary_json, ec);
    body["provider_summary"] = ec ? json::value(nullptr) : std::move(summary);
  }
  json::array invariants;
  for (const auto& invariant : report.invariants)
    invariants.push_back(json::object{
        {"name", invariant.name}, {"pass", invariant.pass}, {"detail", invariant.detail}});
  body["invariants"] = std::move(invariants);
  return json::serialize(body);
}

std::string report_text(const load_options& options, const load_run& run,
                        const check_report& report) {
  std::ostringstream out;
  out << "herald load against " << targets_text(options.targets) << ": " << run.record.events
      << " events x " << options.channels.size() << " channels in " << fixed(run.total_duration_s)
      << " s\n";
  if (options.targets.size() > 1) {
    const char* separator = "  targets    ";
    for (const auto& share : target_shares(options, run)) {
      out << separator << share.target << " " << share.exchanges << " exchanges ("
          << share.connection_errors << " unanswered)";
      separator = ", ";
    }
    out << "\n";
  }
  out << "  ingest     " << run.live.accepted << "/" << run.live.submissions
      << (options.batch ? " events accepted in " + std::to_string(run.live.requests) + " batches ("
                        : std::string(" POSTs accepted ("))
      << run.live.created_answers << " x 202, " << run.live.duplicate_answers << " x 200), "
      << run.live.rejected << " rejected, " << run.live.gave_up
      << " given up; retries: " << run.live.retries_overloaded << " overloaded, "
      << run.live.retries_connection << " connection, " << run.live.retries_server_error
      << " server error\n";
  out << rates_text(options, run, report.accepted_tasks) << latency_text(options, run.live);
  out << "  drain      " << (run.drain.complete ? "complete" : "INCOMPLETE") << " after "
      << fixed(run.drain.duration_s) << " s, " << run.drain.rounds << " rounds";
  if (!run.drain.complete)
    out << ", " << run.drain.pending_at_end << " messages unfinished";
  out << "\n";
  if (run.settle) {
    out << "  settle     " << (run.settle->complete ? "complete" : "INCOMPLETE") << " after "
        << fixed(run.settle->duration_s) << " s, " << run.settle->rounds << " rounds";
    if (!run.settle->complete)
      out << ", " << run.settle->pending_at_end << " messages unresolved";
    out << "\n";
  }
  if (run.late.submissions > 0)
    out << "  late       " << run.late.accepted << "/" << run.late.submissions
        << " resubmissions accepted after the drain\n";
  out << "  tasks      " << report.accepted_tasks << " accepted:";
  for (const auto& [state, count] : report.states)
    out << " " << state << "=" << count;
  if (report.extra_tasks > 0)
    out << "; " << report.extra_tasks << " more not named by any answer";
  out << "\n";
  if (run.ambiguous_resends)
    out << "  herald     " << static_cast<long long>(*run.ambiguous_resends)
        << " ambiguous resends\n";
  if (run.receipts_total || run.reconciled_total || run.provider_receipts) {
    out << "  receipts   herald " << metric_text(run.receipts_total) << " taken, "
        << metric_text(run.receipts_rejected) << " rejected, " << metric_text(run.reconciled_total)
        << " reconciled";
    if (const auto& p = run.provider_receipts; p && p->posting)
      out << "; provider " << p->planned << " receipts decided, " << p->dropped << " dropped, "
          << p->duplicated << " duplicated, " << p->acknowledged << " copies acknowledged, "
          << p->failed << " given up (up to " << p->max_lag_ms << " ms late); "
          << p->without_receipt << " of " << p->requests
          << " requests got no receipt (herald's to reconcile)";
    out << "\n";
  }
  if (run.record.stats)
    out << "  stats      " << run.record.stats->total.accepted << " tasks since " << run.stats_from
        << "\n";
  else if (!run.record.stats_unavailable.empty())
    out << "  stats      " << run.record.stats_unavailable << "\n";
  if (run.record.provider)
    out << "  provider   " << run.record.provider->calls << " calls, "
        << run.record.provider->effective_deliveries << " effective deliveries, "
        << run.record.provider->duplicate_effective_deliveries << " duplicates\n";
  for (const auto& invariant : report.invariants)
    out << "  " << (invariant.pass ? "PASS " : "FAIL ") << invariant.name << ": "
        << invariant.detail << "\n";
  out << (report.all_pass() ? "PASS" : "FAIL") << "\n";
  return out.str();
}

} // namespace herald::tools
