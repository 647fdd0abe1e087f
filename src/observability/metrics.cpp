#include "observability/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace herald {

std::string_view to_string(call_outcome outcome) {
  switch (outcome) {
  case call_outcome::success:
    return "success";
  case call_outcome::retryable:
    return "retryable";
  case call_outcome::permanent:
    return "permanent";
  case call_outcome::timeout:
    return "timeout";
  case call_outcome::throttled:
    return "throttled";
  }
  return "unknown";
}

namespace {

// Sub-millisecond to seconds: ingest answers after a group commit, usually a few ms.
const prometheus::Histogram::BucketBoundaries ingest_buckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

// Acceptance to provider acceptance: milliseconds when idle, up to minutes through retries.
const prometheus::Histogram::BucketBoundaries delivery_buckets = {
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600};

} // namespace

// prometheus-cpp 1.0 serialises a counter family under exactly the name given (it appends no
// "_total"), so the names here are the full exposition names.
struct metrics::families {
  explicit families(prometheus::Registry& r)
      : messages_received(prometheus::BuildCounter()
                              .Name("herald_messages_received_total")
                              .Help("POST /v1/messages requests accepted for processing")
                              .Register(r)),
        tasks_created(prometheus::BuildCounter()
                          .Name("herald_tasks_created_total")
                          .Help("Tasks written for the first time")
                          .Register(r)),
        tasks_duplicate(prometheus::BuildCounter()
                            .Name("herald_tasks_duplicate_total")
                            .Help("Claims answered with an existing task")
                            .Register(r)),
        provider_calls(prometheus::BuildCounter()
                           .Name("herald_provider_calls_total")
                           .Help("Provider calls by outcome")
                           .Register(r)),
        ambiguous_resends(prometheus::BuildCounter()
                              .Name("herald_ambiguous_resends_total")
                              .Help("Tasks found SENDING after a crash and sent again")
                              .Register(r)),
        dead_letters(prometheus::BuildCounter()
                         .Name("herald_dead_letters_total")
                         .Help("Tasks that ended DEAD (attempts exhausted) or FAILED (permanent)")
                         .Register(r)),
        tasks_suppressed(prometheus::BuildCounter()
                             .Name("herald_tasks_suppressed_total")
                             .Help("Tasks policy suppressed when they were claimed, by reason")
                             .Register(r)),
        tasks_deferred(prometheus::BuildCounter()
                           .Name("herald_tasks_deferred_total")
                           .Help("Tasks policy deferred when they were claimed, by reason")
                           .Register(r)),
        store_write_retries(
            prometheus::BuildCounter()
                .Name("herald_store_write_retries_total")
                .Help("Channel writes (SENDING commits, outcomes, failovers) that failed and were "
                      "sent again as they were")
                .Register(r)),
        queue_overflows(prometheus::BuildCounter()
                            .Name("herald_channel_queue_overflows_total")
                            .Help("Tasks a full channel queue left in the database for the next "
                                  "sweep")
                            .Register(r)),
        failovers(prometheus::BuildCounter()
                      .Name("herald_failovers_total")
                      .Help("Tasks handed from a channel to its fallback channel")
                      .Register(r)),
        circuit_state(prometheus::BuildGauge()
                          .Name("herald_circuit_state")
                          .Help("Channel circuit breaker: 0 closed, 1 open, 2 half-open")
                          .Register(r)),
        retry_queue_depth(prometheus::BuildGauge()
                              .Name("herald_retry_queue_depth")
                              .Help("Tasks waiting for their next attempt")
                              .Register(r)),
        http_responses(prometheus::BuildCounter()
                           .Name("herald_http_responses_total")
                           .Help("HTTP answers by route and status code")
                           .Register(r)),
        ingest_latency(prometheus::BuildHistogram()
                           .Name("herald_ingest_latency_seconds")
                           .Help("Time from request to committed reply")
                           .Register(r)),
        delivery_latency(prometheus::BuildHistogram()
                             .Name("herald_delivery_latency_seconds")
                             .Help("Time from acceptance to the provider accepting the task")
                             .Register(r)),
        receipts(prometheus::BuildCounter()
                     .Name("herald_receipts_total")
                     .Help("Provider receipts recorded, by status")
                     .Register(r)),
        receipts_rejected(prometheus::BuildCounter()
                              .Name("herald_receipts_rejected_total")
                              .Help("Provider receipts refused, by reason")
                              .Register(r)),
        reconciled(prometheus::BuildCounter()
                       .Name("herald_reconciled_total")
                       .Help("SENT tasks settled by the reconciler after their receipt window")
                       .Register(r)),
        status_queries(prometheus::BuildCounter()
                           .Name("herald_status_queries_total")
                           .Help("Status queries the reconciler sent a provider, one per SENT "
                                 "task asked about")
                           .Register(r)),
        ambiguous_resolved(prometheus::BuildCounter()
                               .Name("herald_ambiguous_resolved_total")
                               .Help("Ambiguous SENDING tasks the provider was asked about before "
                                     "any resend")
                               .Register(r)),
        status_questions_unanswered(
            prometheus::BuildCounter()
                .Name("herald_status_questions_unanswered_total")
                .Help("Status questions the provider left without an answer, by what followed: "
                      "asked_again (after a backoff) or unconfirmed (questions used up)")
                .Register(r)),
        provider_config_errors(prometheus::BuildCounter()
                                   .Name("herald_provider_config_errors_total")
                                   .Help("Provider answers that blame herald's configuration "
                                         "(credentials, template, sender, topic): alert on it")
                                   .Register(r)),
        provider_token_refreshes(prometheus::BuildCounter()
                                     .Name("herald_provider_token_refreshes_total")
                                     .Help("Provider access tokens fetched or signed")
                                     .Register(r)),
        events_pending(prometheus::BuildGauge()
                           .Name("herald_events_pending")
                           .Help("Status events written and not yet delivered or given up")
                           .Register(r)),
        events_delivered(prometheus::BuildCounter()
                             .Name("herald_events_delivered_total")
                             .Help("Status event posts, by outcome")
                             .Register(r)),
        cluster_members(prometheus::BuildGauge()
                            .Name("herald_cluster_members")
                            .Help("Live members of this node's cluster, itself included")
                            .Register(r)),
        partitions_owned(prometheus::BuildGauge()
                             .Name("herald_partitions_owned")
                             .Help("Partitions whose tasks this node dispatches and sweeps")
                             .Register(r)),
        partition_moves(prometheus::BuildCounter()
                            .Name("herald_partition_moves_total")
                            .Help("Partitions this node gained or lost on membership changes")
                            .Register(r)),
        cluster_connections_closed(
            prometheus::BuildCounter()
                .Name("herald_cluster_connections_closed_total")
                .Help("Connections the cluster port closed before they carried a peer, by reason "
                      "(refused over a cap, expired in their handshake, malformed frames)")
                .Register(r)),
        messages_received_total(messages_received.Add({})),
        cluster_members_gauge(cluster_members.Add({})),
        partitions_owned_gauge(partitions_owned.Add({})),
        partition_moves_total(partition_moves.Add({})),
        events_pending_gauge(events_pending.Add({})),
        retry_queue_depth_gauge(retry_queue_depth.Add({})),
        ingest_latency_histogram(ingest_latency.Add({}, ingest_buckets)) {}

  prometheus::Family<prometheus::Counter>& messages_received;
  prometheus::Family<prometheus::Counter>& tasks_created;
  prometheus::Family<prometheus::Counter>& tasks_duplicate;
  prometheus::Family<prometheus::Counter>& provider_calls;
  prometheus::Family<prometheus::Counter>& ambiguous_resends;
  prometheus::Family<prometheus::Counter>& dead_letters;
  prometheus::Family<prometheus::Counter>& tasks_suppressed;
  prometheus::Family<prometheus::Counter>& tasks_deferred;
  prometheus::Family<prometheus::Counter>& store_write_retries;
  prometheus::Family<prometheus::Counter>& queue_overflows;
  prometheus::Family<prometheus::Counter>& failovers;
  prometheus::Family<prometheus::Gauge>& circuit_state;
  prometheus::Family<prometheus::Gauge>& retry_queue_depth;
  prometheus::Family<prometheus::Counter>& http_responses;
  prometheus::Family<prometheus::Histogram>& ingest_latency;
  prometheus::Family<prometheus::Histogram>& delivery_latency;
  prometheus::Family<prometheus::Counter>& receipts;
  prometheus::Family<prometheus::Counter>& receipts_rejected;
  prometheus::Family<prometheus::Counter>& reconciled;
  prometheus::Family<prometheus::Counter>& status_queries;
  prometheus::Family<prometheus::Counter>& ambiguous_resolved;
  prometheus::Family<prometheus::Counter>& status_questions_unanswered;
  prometheus::Family<prometheus::Counter>& provider_config_errors;
  prometheus::Family<prometheus::Counter>& provider_token_refreshes;
  prometheus::Family<prometheus::Gauge>& events_pending;
  prometheus::Family<prometheus::Counter>& events_delivered;
  prometheus::Family<prometheus::Gauge>& cluster_members;
  prometheus::Family<prometheus::Gauge>& partitions_owned;
  prometheus::Family<prometheus::Counter>& partition_moves;
  prometheus::Family<prometheus::Counter>& cluster_connections_closed;

  // Unlabelled series, created once so they render (as 0) before the first event.
  prometheus::Counter& messages_received_total;
  prometheus::Gauge& cluster_members_gauge;
  prometheus::Gauge& partitions_owned_gauge;
  prometheus::Counter& partition_moves_total;
  prometheus::Gauge& events_pending_gauge;
  prometheus::Gauge& retry_queue_depth_gauge;
  prometheus::Histogram& ingest_latency_histogram;
};

metrics::metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      families_(std::make_unique<families>(*registry_)) {}

metrics::~metrics() = default;

// Family::Add is thread-safe and returns the existing series for known labels.
void metrics::message_received(std::size_t count) {
  families_->messages_received_total.Increment(static_cast<double>(count));
}

void metrics::task_created(const std::string& channel) {
  families_->tasks_created.Add({{"channel", channel}}).Increment();
}

void metrics::task_duplicate(const std::string& channel) {
  families_->tasks_duplicate.Add({{"channel", channel}}).Increment();
}

void metrics::provider_call(const std::string& channel, call_outcome outcome) {
  families_->provider_calls
      .Add({{"channel", channel}, {"outcome", std::string(to_string(outcome))}})
      .Increment();
}

void metrics::ambiguous_resend(const std::string& channel) {
  families_->ambiguous_resends.Add({{"channel", channel}}).Increment();
}

void metrics::dead_letter(const std::string& channel) {
  families_->dead_letters.Add({{"channel", channel}}).Increment();
}

void metrics::task_suppressed(const std::string& channel, std::string_view reason) {
  families_->tasks_suppressed.Add({{"channel", channel}, {"reason", std::string(reason)}})
      .Increment();
}

void metrics::task_deferred(std::string_view reason) {
  families_->tasks_deferred.Add({{"reason", std::string(reason)}}).Increment();
}

void metrics::store_write_retry(const std::string& channel) {
  families_->store_write_retries.Add({{"channel", channel}}).Increment();
}

void metrics::queue_overflow(const std::string& channel) {
  families_->queue_overflows.Add({{"channel", channel}}).Increment();
}

void metrics::failover(const std::string& from, const std::string& to) {
  families_->failovers.Add({{"from", from}, {"to", to}}).Increment();
}

void metrics::circuit_state(const std::string& channel, int state) {
  families_->circuit_state.Add({{"channel", channel}}).Set(state);
}

void metrics::cluster_members(double count) {
  families_->cluster_members_gauge.Set(count);
}

void metrics::partitions_owned(double count) {
  families_->partitions_owned_gauge.Set(count);
}

void metrics::partition_moves(std::size_t count) {
  families_->partition_moves_total.Increment(static_cast<double>(count));
}

void metrics::cluster_connection_closed(std::string_view reason, std::uint64_t count) {
  families_->cluster_connections_closed.Add({{"reason", std::string(reason)}})
      .Increment(static_cast<double>(count));
}

void metrics::http_response(std::string_view route, unsigned status) {
  families_->http_responses.Add({{"route", std::string(route)}, {"code", std::to_string(status)}})
      .Increment();
}

void metrics::retry_queue_depth(double depth) {
  families_->retry_queue_depth_gauge.Set(depth);
}

void metrics::ingest_latency(double seconds) {
  families_->ingest_latency_histogram.Observe(seconds);
}

void metrics::delivery_latency(const std::string& channel, double seconds) {
  families_->delivery_latency.Add({{"channel", channel}}, delivery_buckets).Observe(seconds);
}

void metrics::receipt(const std::string& channel, std::string_view status) {
  families_->receipts.Add({{"channel", channel}, {"status", std::string(status)}}).Increment();
}

void metrics::receipt_rejected(const std::string& channel, std::string_view reason) {
  families_->receipts_rejected.Add({{"channel", channel}, {"reason", std::string(reason)}})
      .Increment();
}

void metrics::reconciled(const std::string& channel, std::string_view outcome) {
  families_->reconciled.Add({{"channel", channel}, {"outcome", std::string(outcome)}}).Increment();
}

void metrics::status_query(const std::string& channel) {
  families_->status_queries.Add({{"channel", channel}}).Increment();
}

void metrics::ambiguous_resolved(const std::string& channel, std::string_view outcome) {
  families_->ambiguous_resolved.Add({{"channel", channel}, {"outcome", std::string(outcome)}})
      .Increment();
}

void metrics::status_question_unanswered(const std::string& channel, std::string_view then) {
  families_->status_questions_unanswered.Add({{"channel", channel}, {"then", std::string(then)}})
      .Increment();
}

void metrics::provider_config_error(const std::string& channel) {
  families_->provider_config_errors.Add({{"channel", channel}}).Increment();
}

void metrics::provider_token_refresh(const std::string& provider, const std::string& account) {
  families_->provider_token_refreshes.Add({{"provider", provider}, {"account", account}})
      .Increment();
}

void metrics::events_pending(double count) {
  families_->events_pending_gauge.Set(count);
}

void metrics::event_delivered(std::string_view outcome) {
  families_->events_delivered.Add({{"outcome", std::string(outcome)}}).Increment();
}

std::string metrics::render() const {
  const prometheus::TextSerializer serializer;
  return serializer.Serialize(registry_->Collect());
}

prometheus::Registry& metrics::registry() {
  return *registry_;
}

} // namespace herald
