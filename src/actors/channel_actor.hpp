#pragma once

#include "actors/cluster_share.hpp"
#include "actors/interfaces.hpp"
#include "domain/backoff.hpp"
#include "domain/channel_scheduler.hpp"
#include "domain/claim_places.hpp"
#include "domain/status_questions.hpp"
#include "domain/time.hpp"
#include "observability/health_board.hpp"
#include "observability/metrics.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <caf/typed_response_promise.hpp>

namespace herald::actors {

/// How one channel sends.
struct channel_settings {
  std::string name;
  double rate_per_sec = 1000; ///< token bucket refill; provider calls per second at most
  double burst = 100;         ///< token bucket size
  std::size_t window = 64;    ///< provider calls in flight at most
  domain::retry_policy retry = domain::default_retry_policy();
  /// Channel to fail over to (the store follows the chain beyond it); empty: none.
  std::string fallback;
  std::uint32_t circuit_failure_threshold = 20; ///< consecutive failures that open the circuit
  std::chrono::milliseconds circuit_cool_down{30000};
  std::chrono::milliseconds throttle_pause{1000}; ///< pause after a 429 without Retry-After
  std::chrono::milliseconds lease{60000}; ///< how long a SENDING task is ours; > provider timeout
  /// How long one provider call may take (its timeout, where the adapter has one): a call
  /// starts only while at least this much of its lease is left, so it ends before another node
  /// may take the task over.
  std::chrono::milliseconds call_budget{0};
  std::string node_id; ///< lease owner name of this process
  std::chrono::milliseconds store_timeout{10000};
  /// Tasks queued in memory at most; beyond it they wait in the database for the next sweep.
  std::size_t queue_limit = 10000;
  /// How long after SENT the provider's final receipt may take; past it the reconciler asks
  /// the provider (where it can be asked) or marks the task UNCONFIRMED. Zero: the channel
  /// gives no receipts and SENT is final.
  std::chrono::milliseconds receipt_window{0};
  /// How a provider with a status API is asked about a call or receipt in doubt when it gives
  /// no answer: asked again on this schedule, max_attempts questions in all (config
  /// `status_questions`: schedule_ms, jitter, max); then the task ends UNCONFIRMED, not resent.
  domain::retry_policy questions = domain::default_question_policy();

  /// An empty string when valid, else the reason.
  std::string validate() const;
  /// What the channel's scheduler paces calls by.
  domain::channel_pacing pacing() const;
};

/// One channel's sender. Its scheduler (domain::channel_scheduler) says when a task leaves
/// its lane; the task is then committed as SENDING with a lease (in a batch with its
/// neighbours), and only handed to the provider when the scheduler releases it for a call.
/// While nothing waits in its lanes it offers places to claims instead (domain::claim_places):
/// a new task that may go at once is then inserted SENDING under this channel's lease by the
/// claim that creates it, and comes here ready for its call.
/// Results are committed in batches too; retries wait in the retry timer. While the circuit
/// is open, tasks never tried fail over to the fallback channel — unless that channel has its
/// own task for the message already: then they wait for this channel.
///
/// A task found SENDING by recovery, or whose call timed out, is ambiguous: the provider may
/// have the message. Where the provider can be asked (status API), the channel asks it first,
/// holding the take's lease and a place in the window: if the provider has the message, the
/// task is recorded SENT (and a final status it names as a receipt) without a call; if it says
/// it never got the call, the task is taken again and resent with the same request id; if it
/// gives no answer, the task stays SENDING and is asked again after a backoff (`questions`),
/// and ends UNCONFIRMED, never resent, once its questions are used up or expire_at would pass.
/// Where the provider cannot be asked, the task is resent with the same request id.
///
/// A write whose answer is an error may still have committed (a lost acknowledgement), and a
/// provider's answer is known nowhere else: so a failed write is never dropped nor guessed at.
/// It is sent again, as it was, after a backoff, until the store answers; each SENDING commit
/// carries a token unique to its take, so the store recognises its own earlier commit. While
/// any write is failing, the channel takes no new task and names itself on the health board.
struct channel_state {
  static constexpr const char* name = "channel";

  struct call {
    domain::delivery task;
    domain::timestamp started_at;
    std::string take_token; ///< of the SENDING commit; the outcome's change carries it too
    bool asking = false;    ///< a status query of a recovered SENDING task, not a send
  };

  channel_settings settings;
  std::shared_ptr<providers::provider_adapter> provider;
  store_writer_actor store;
  dispatcher_actor dispatcher; ///< takes fallback tasks, and retries (it hands them to the timer)
  std::shared_ptr<herald::metrics> metrics;
  std::shared_ptr<const domain::clock> clock;
  std::shared_ptr<health_board> health;
  /// Lanes, buckets, window, breaker and pauses; committed tasks waiting for a call.
  std::optional<domain::channel_scheduler> scheduler;
  std::unordered_set<std::string> known; ///< queued, being marked, in flight or being recorded
  /// Tasks no fallback takes (it has its own task already, or policy refuses every one).
  std::unordered_set<std::string> no_failover;
  /// Recovered SENDING tasks the provider said it never got: resent without asking again.
  std::unordered_set<std::string> asked;
  std::unordered_map<std::string, call> calls; ///< in flight, by task id
  std::size_t marking = 0;                     ///< waiting for the SENDING commit
  std::size_t writing = 0;                     ///< changes waiting for their commit
  std::size_t settling = 0; ///< of those, calls' results: their tasks SENDING until then
  std::string take_prefix;  ///< unique to this actor: tokens never repeat
  std::uint64_t takes = 0;
  std::vector<std::function<void()>> rewrites; ///< failed writes, to be sent again as they were
  std::size_t failing = 0;                     ///< writes failed and not yet answered since
  std::chrono::milliseconds rewrite_delay{0};
  std::optional<domain::timestamp> tick_due; ///< when the soonest tick on its way arrives
  bool draining = false;
  std::vector<caf::typed_response_promise<bool>> drain_waiters;
  std::mt19937_64 jitter_rng{std::random_device{}()};
  /// Shared with the cluster member: this node's part of the rate, and the node's calls in
  /// flight, which this actor's count into. May be null (tests).
  std::shared_ptr<cluster_share> share;
  std::int64_t in_flight_shown = 0; ///< calls this actor has counted into the share
  /// Places offered to claims (shared with the store writer), in this actor's epoch; may be null.
  std::shared_ptr<domain::claim_places> places;
  std::uint64_t places_epoch = 0;
  /// Places claims took and the store writer has not yet given over (as tasks or unused): they
  /// hold their window places meanwhile.
  std::size_t in_transit = 0;

  channel_state() = default;
  channel_state(const channel_state&) = delete;
  channel_state& operator=(const channel_state&) = delete;
  ~channel_state() {
    if (share) // a stopped or restarted channel has nothing in flight any more
      share->add_in_flight(-in_flight_shown);
  }
};

/// Who a channel works with.
struct channel_peers {
  store_writer_actor store;
  dispatcher_actor dispatcher; ///< takes fallback tasks, and retries (it hands them to the timer)
  std::shared_ptr<herald::metrics> metrics;
  std::shared_ptr<const domain::clock> clock;
  std::shared_ptr<health_board> health; ///< where the channel says it stopped; may be null
  std::shared_ptr<cluster_share> share; ///< this node's part of the rate; may be null
  /// Where the channel offers places for tasks taken in their claim; may be null (none are).
  std::shared_ptr<domain::claim_places> places{};
};

channel_actor::behavior_type channel(channel_actor::stateful_pointer<channel_state> self,
                                     channel_settings settings,
                                     std::shared_ptr<providers::provider_adapter> provider,
                                     channel_peers peers);

} // namespace herald::actors
