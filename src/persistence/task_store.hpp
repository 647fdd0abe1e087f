#pragma once

#include "domain/message.hpp"
#include "domain/partitions.hpp"
#include "domain/policy.hpp"
#include "domain/push_seal.hpp"
#include "domain/receipt.hpp"
#include "domain/task_state.hpp"
#include "domain/time.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace herald::persistence {

class zoneinfo;

/// A store failure (connection lost, disk full): the batch was rolled back, nothing committed.
class store_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// What claiming one task answered.
struct claim_outcome {
  std::string task_id;
  std::string channel;
  domain::task_state state = domain::task_state::pending; ///< current state in the database
  bool created = false;                                   ///< false: the task already existed
  /// Why policy suppressed or deferred the task when it was created (then `state` is
  /// SUPPRESSED, or PENDING with a later send time); nullopt: sent as asked.
  std::optional<domain::policy_reason> policy_reason;
  /// The address the task was created with: the request's, or the user's stored contact.
  std::string recipient;
  /// Set when this claim created the task taken (SENDING under claim_takes' lease, the
  /// take's token; `state` still answers PENDING, as for any new task): it goes to its
  /// channel's provider without another commit.
  std::optional<std::string> take_token{};
};

/// Places for tasks a claim may insert taken already: SENDING under the lease of the node
/// whose channel offered them (domain::claim_places), so their happy path writes them twice.
/// A task takes one of its channel's places when the claim creates it and it may go at once
/// (domain::goes_at_once at `now`), in plan order while places are left.
struct claim_takes {
  struct channel_places {
    std::size_t places = 0;
    std::string lease_owner;
    domain::timestamp lease_until;
  };
  std::map<std::string, channel_places> by_channel;
  domain::timestamp now;
  std::string token_prefix; ///< a task's take token is this followed by the task's id
};

/// What claiming one message answered: one outcome per planned task, in plan order.
struct claim_result {
  std::string message_id;
  std::vector<claim_outcome> tasks;
  /// The message as stored: the first accepted version wins, so a resubmission that adds a
  /// channel sends that channel the content every other attempt and recovery will use.
  domain::message_record message;
};

/// A guarded state change: applied only if the row is still in `from`. Taking a SENDING task
/// over (`from` and `to` both SENDING) also needs its lease to have run out by `at`, or to be
/// held by `lease_owner` already.
struct state_change {
  std::string task_id;
  domain::task_state from = domain::task_state::pending;
  domain::task_state to = domain::task_state::pending;
  std::uint32_t attempts = 0; ///< provider calls made so far, after this change
  std::optional<domain::timestamp> next_attempt_at;
  std::string last_error; ///< empty keeps none
  domain::timestamp at;
  /// Who holds the task while it is SENDING, and until when: another node (or this one after
  /// a restart) takes a SENDING task over only once its lease has run out. Written as given
  /// (nullopt clears it), so changes away from SENDING release the lease.
  std::optional<std::string> lease_owner;
  std::optional<domain::timestamp> lease_until;
  /// The take this change belongs to: unique per SENDING commit, and carried by the changes
  /// that record its outcome. A change whose answer was lost (a timeout, a failed commit that
  /// did commit) is sent again as it was; finding the row already in `to` with this token, the
  /// store answers it as applied instead of refusing it. nullopt: no take (expiry, failover).
  std::optional<std::string> lease_token;
  /// The provider's own id for the message, from a success answer; kept on the task so a
  /// receipt naming it finds the task. nullopt keeps what the row holds.
  std::optional<std::string> provider_message_id;
  /// The task is a route's escalation step: a PENDING -> SENDING change of it first checks
  /// whether a task of its message was READ, and SUPPRESSES it instead if one was.
  bool escalation = false;
  /// A status question about the task went without an answer: the count of such questions so
  /// far, and when to ask next (nullopt: no more). Written together; nullopt keeps both as the
  /// row holds them. A change that keeps the task in its state (SENT -> SENT) only notes this.
  std::optional<std::uint32_t> status_questions;
  std::optional<domain::timestamp> next_question_at;
};

/// One provider call, as recorded.
struct attempt_record {
  std::string task_id;
  std::uint32_t attempt_no = 0; ///< 1-based
  std::string provider_request_id;
  std::string outcome; ///< success | retryable | permanent | timeout | throttled
  std::string detail;  ///< provider message id on success, error text otherwise
  domain::timestamp started_at;
  domain::timestamp finished_at;
};

/// One receipt of a task, as recorded.
struct receipt_record {
  domain::receipt_status status = domain::receipt_status::delivered;
  domain::receipt_source source = domain::receipt_source::callback;
  domain::timestamp occurred_at; ///< by the provider's clock
  domain::timestamp received_at; ///< by herald's
  std::string detail;            ///< masked
};

/// A task as GET /v1/messages/{id} shows it.
struct task_view {
  std::string task_id;
  std::string channel;
  std::string recipient;
  domain::task_state state = domain::task_state::pending;
  std::uint32_t attempts = 0;
  std::optional<domain::timestamp> next_attempt_at;
  std::string last_error;
  std::string provider_request_id;
  domain::timestamp created_at;
  domain::timestamp updated_at;
  std::vector<attempt_record> attempt_log;
  std::string provider_message_id; ///< empty: the provider gave none
  std::vector<receipt_record> receipts;
  std::optional<domain::policy_reason> policy_reason; ///< why policy suppressed or deferred it
  std::optional<domain::timestamp> send_at;           ///< the deferred send time, if deferred
  /// The task's own title and body when they differ from its message's (a stored template's
  /// channel override, or a fallback's); nullopt: the message's.
  std::optional<domain::content> own_content;
  /// Status questions about it the provider left without an answer (docs/reliability.md).
  std::uint32_t status_questions = 0;
};

/// A message with its tasks, as GET /v1/messages/{id} shows it.
struct message_view {
  domain::message_record message;
  std::vector<task_view> tasks;
};

/// Another task of a dead letter's message, as the dead-letter list shows it.
struct other_task {
  std::string task_id;
  std::string channel;
  domain::task_state state = domain::task_state::pending;
  std::optional<domain::policy_reason> policy_reason;
};

/// A task that will not be sent without an operator: DEAD (attempts exhausted), FAILED
/// (permanent error) or SUPPRESSED (failed over to another channel), with whether its user got
/// the message anyway on another of its tasks (a fallback, or another channel asked for).
struct dead_letter {
  std::string message_id;
  task_view task;
  domain::coverage coverage = domain::coverage::none;
  std::vector<other_task> other_tasks; ///< the message's other tasks, in task-id order
};

/// Which dead letters to list: of one channel (empty: all), of one coverage (none: any).
struct dead_letter_filter {
  std::string channel;
  std::optional<domain::coverage> coverage = std::nullopt;
};

/// What replaying a dead letter did.
struct replay_result {
  enum class outcome {
    replayed,      ///< moved back to PENDING; `task` is ready to dispatch
    not_found,     ///< no such task
    not_replayable ///< not DEAD, FAILED or SUPPRESSED (e.g. already replayed): nothing changed
  };
  outcome result = outcome::not_found;
  std::optional<domain::delivery> task;
  domain::task_state state = domain::task_state::pending; ///< state after the call
};

/// Length of the incarnation a process appends to its node name to form its lease owner
/// (`<node name>/<16 hex digits>`), drawn at each start.
inline constexpr std::size_t lease_incarnation_length = 16;

/// One link of a failover chain: the plan claimed on a fallback channel, and what its claim
/// answered.
struct fallback_link {
  domain::message_plan plan;
  claim_result claim;
};

/// What a failover did.
struct failover_result {
  enum class outcome {
    failed_over,       ///< the change applied and `chain` was claimed (also when the same
                       ///< change, with its token, is sent again after a lost answer)
    moved_on,          ///< the task was no longer in `from`: nothing written
    fallback_exists,   ///< the first fallback's task already existed: nothing written, so the
                       ///< task must wait for its own channel or end as a dead letter
    no_fallback,       ///< no channel along the chain has an address for the message: nothing
                       ///< written
    fallbacks_refused, ///< a never-tried task leaving an open circuit (`to` SUPPRESSED) whose
                       ///< every fallback policy refused: nothing written, it waits instead
  };
  outcome result = outcome::moved_on;
  /// With failed_over: the same failover (change and lease token) had committed before and its
  /// answer was lost; the chain is what that commit created, counted and dispatched then.
  bool repeated = false;
  /// With failed_over: the first fallback's claim, then, while policy refused the last one
  /// (created SUPPRESSED: an opt-out, DND, no contact), the claim of the next channel along the
  /// chain. The last link is the task that will be sent, unless policy refused it too: then
  /// the user gets nothing on any fallback.
  std::vector<fallback_link> chain;
};

/// A receipt to record: it names its task by herald's provider request id or by the
/// provider's message id (either is enough), always within one channel; the inbox, which knows
/// its items' tasks, names the task itself.
struct receipt_input {
  std::string channel;
  std::string provider_request_id; ///< empty: find the task by provider_message_id
  std::string provider_message_id; ///< empty: find the task by provider_request_id
  receipt_record receipt;
  std::string task_id; ///< set: the task (of `channel`) is this one, the ids above are unused
};

/// Where tasks fail over to: a channel's fallback (none: it has none), and the installation's
/// secret that keys the fallback task's ids (domain::fallback_plan). A fallback that policy
/// refuses (the user opted out of that channel, DND) hands over to its own fallback, and so on
/// along the chain.
struct fallback_routes {
  std::map<std::string, std::string> fallback_of; ///< channel -> fallback channel
  domain::id_secret secret;
};

/// What recording one receipt did.
struct receipt_outcome {
  enum class outcome {
    applied,      ///< recorded (or found recorded) and the task moved
    unchanged,    ///< recorded (or found recorded); the task is already there or beyond
    waiting,      ///< recorded; the task is not SENT yet (its SENT commit is still on its
                  ///< way): a DELIVERED/READ/CLICKED receipt is applied by that commit, an
                  ///< UNDELIVERED one must be recorded again once the task is SENT
    unknown_task, ///< no task of this channel has that id: nothing recorded
  };
  outcome result = outcome::unknown_task;
  bool first_time = false; ///< this call recorded the receipt (else it was recorded before)
  std::string task_id;
  domain::task_state state = domain::task_state::pending; ///< the task's state after the call
  /// UNDELIVERED with a fallback: the fallback's task, created in the same transaction and
  /// ready to dispatch. None when the fallback channel had its own task already (nothing new
  /// to send), has no recipient, or the channel has no fallback.
  std::optional<domain::delivery> fallback;
};

/// A SENT task past its channel's receipt window, as the reconciler reads it.
struct awaiting_receipt {
  domain::delivery task;           ///< as recovery would read it; state SENT
  std::string provider_message_id; ///< empty: the provider named none
  domain::timestamp sent_at;       ///< when it became SENT (its last change)
  /// Receipts recorded for it and not applied: an UNDELIVERED that came before the SENT commit
  /// (receipt_outcome::waiting). Recording them again settles the task.
  std::vector<receipt_record> receipts;
};

/// Where a page of awaiting tasks starts: after this (sent_at, task id). The default starts
/// at the oldest.
struct awaiting_cursor {
  domain::timestamp sent_at{};
  std::string task_id;
};

/// Counts of tasks per state, for accounting checks.
struct state_count {
  domain::task_state state = domain::task_state::pending;
  std::uint64_t count = 0;
};

/// Which tasks GET /v1/stats counts: those created in [from, to) (either end open), of one
/// tenant and one channel (empty: all).
struct stats_query {
  std::string tenant;
  std::string channel;
  std::optional<domain::timestamp> from;
  std::optional<domain::timestamp> to;
};

/// One channel's tasks counted by state.
struct channel_stats {
  std::string channel;
  std::vector<state_count> states; ///< states with at least one task
  /// Policy's decisions among them, by reason: tasks it suppressed, and tasks it deferred
  /// (whatever their state now).
  std::map<std::string, std::uint64_t> suppressed_by_policy;
  std::map<std::string, std::uint64_t> deferred_by_policy;
};

/// What GET /v1/stats counts: the tasks per channel, and the messages they belong to.
struct stats_report {
  std::vector<channel_stats> channels; ///< by name; channels with at least one task
  std::uint64_t messages = 0;          ///< distinct messages among the counted tasks
};

/// A status event from the outbox (docs/events.md), with what it reports about its task.
struct status_event {
  std::int64_t seq = 0;          ///< orders a task's events
  std::string id;                ///< deterministic: domain::event_id_for(task, state)
  std::string type;              ///< "task.sent", "task.delivered", …
  domain::timestamp occurred_at; ///< when the task entered the state
  std::uint32_t attempts = 0;    ///< posts made so far
  std::string task_id;
  std::string message_id;
  std::string tenant;
  std::string biz_type;
  std::string biz_id;
  std::string user_id;
  std::string channel;
};

/// What posting one event came to, for settle_events.
struct event_outcome {
  enum class outcome {
    delivered, ///< the receiver answered 2xx: done
    retry,     ///< post again at next_attempt_at
    dead,      ///< attempts exhausted: the event's own dead letter
  };
  std::string event_id;
  outcome result = outcome::delivered;
  std::uint32_t attempts = 0;                       ///< posts made so far, this one included
  std::optional<domain::timestamp> next_attempt_at; ///< with retry
  std::string last_error;                           ///< masked by the store
  domain::timestamp at;
};

/// One item of a user's in-app inbox (migration 0006): what an inapp channel's send wrote.
struct inbox_item {
  std::string task_id;
  std::string tenant;
  std::string user_id; ///< the task's recipient
  std::string channel;
  std::string title;
  std::string body;
  domain::timestamp created_at;
  std::optional<domain::timestamp> read_at;    ///< the first READ (or CLICKED) receipt's time
  std::optional<domain::timestamp> clicked_at; ///< the first CLICKED receipt's time
};

/// Where a page of an inbox starts: after this item, newest first.
struct inbox_cursor {
  domain::timestamp created_at{};
  std::string task_id;
};

/// Which items GET /v1/users/{user_id}/inbox pages: one user's of one tenant.
struct inbox_query {
  std::string tenant;
  std::string user_id;
  bool unread_only = false;
  std::optional<inbox_cursor> after; ///< none: from the newest
  std::size_t limit = 20;
};

/// A page of a user's inbox, newest first, and how many of their items are unread.
struct inbox_page {
  std::vector<inbox_item> items;
  std::uint64_t unread_count = 0;
};

/// The policy a claim applies: the installation's rules, and the time zones of its users.
struct claim_policy {
  domain::policy_rules rules;
  std::shared_ptr<zoneinfo> zones;
};

/// What a store opens with.
struct store_options {
  /// The states whose entry writes a status event into the outbox, in the same transaction
  /// as the change (domain::event_states_for). Empty: none, so a node that sends no events
  /// grows no table.
  std::vector<domain::task_state> event_states;
  /// Whether any channel takes receipts: then the commit that makes tasks SENT applies the
  /// receipts that came before it (a fast provider), in the same transaction. false skips that
  /// read on every SENT batch.
  bool takes_receipts = false;
  /// Where a failed task fails over to: at a failover, along the chain past fallbacks policy
  /// refuses; at a SENT commit, for a task an early UNDELIVERED receipt ends.
  fallback_routes fallbacks;
  /// What claims apply to the tasks they create (docs/policy.md); none: every task is sent as
  /// asked (no user look-up at all).
  std::shared_ptr<const claim_policy> policy;
  /// PostgreSQL: whether this connection prepares each statement once (named) and keeps one
  /// generic plan, with hash and merge joins off so every join of a batch probes an index in a
  /// nested loop. For connections that write batches keyed by ids and keys (the store
  /// writers): planning each execution took 13 % of PostgreSQL's CPU under load. The joins are
  /// pinned because a generic plan made while `tasks` was nearly empty (a new database, before
  /// autovacuum's first ANALYZE) hash-joined every later batch with the whole table, ~90 ms per
  /// UPDATE at 60k rows. false: every execution is planned against the tables as they are now,
  /// for connections whose reads need the planner's judgement (stats, pages, recovery).
  bool plans_once = false;
  /// Options writing the events of `states` and nothing else beyond the defaults.
  static store_options writing_events(std::vector<domain::task_state> states) {
    store_options options;
    options.event_states = std::move(states);
    return options;
  }
};

/// Which partitions a read of a node's own work covers (domain/partitions.hpp: those a cluster
/// node owns); nullopt: every partition's (a node without a cluster).
using partition_filter = std::optional<std::vector<domain::partition>>;

/// Status events a node claims for posting: of its partitions only, each claimed by `owner`
/// until `until`, so no other node posts it meanwhile (docs/events.md).
struct event_claim {
  std::string owner;       ///< the node's lease owner (`<node name>/<incarnation>`)
  domain::timestamp now;   ///< due by then; claims that ran out by then may be taken
  domain::timestamp until; ///< the claim holds until then: longer than a post may take
  partition_filter partitions;
  /// Events `owner` is posting still: their claims are extended to `until`, so a post that
  /// waits or runs long is not taken over (and posted again) by another node meanwhile.
  std::vector<std::string> held;
};

/// Which unfinished tasks a recovery read wants; by default every one.
struct unfinished_filter {
  std::string channel; ///< only this channel's tasks; empty: every channel's
  /// RETRY_WAIT tasks, and PENDING ones policy deferred, only when due by then (a sweep: later
  /// ones wait, and a later sweep reads them before they are due); none: however far ahead.
  std::optional<domain::timestamp> due_by;
  /// Only tasks of these partitions; nullopt: every partition's.
  partition_filter partitions;
};

/// State changes applied together, with the attempts they record: no task is changed twice in
/// one group, so "this task's change applied" names one change.
struct change_group {
  std::vector<state_change> changes;
  std::vector<attempt_record> attempts;
};

/// What one commit writes, run in this order in one transaction (task_store::commit): what a
/// store writer collected while the previous commit ran (design.md §6). Later commands see
/// what earlier ones wrote: a receipt finds the SENT its task's change group just made.
struct unit_of_work {
  std::vector<domain::message_plan> claims;
  claim_takes takes; ///< places the claims may insert new tasks taken into
  std::vector<change_group> changes;
  std::vector<domain::push_seal> seals;
  std::vector<receipt_input> receipts;
  fallback_routes receipt_fallbacks; ///< where a receipt's UNDELIVERED task fails over to
  domain::timestamp now;             ///< of the seals and receipts

  bool empty() const {
    return claims.empty() && changes.empty() && seals.empty() && receipts.empty();
  }
};

/// A fallback task a commit created for a task a receipt made UNDELIVERED.
struct created_fallback {
  std::string failed_task_id; ///< the UNDELIVERED task
  std::string failed_channel; ///< its channel
  domain::delivery task;      ///< ready to dispatch
};

/// What one commit did: the answers to its commands, in their order, and what happened beside
/// them that whoever commits follows up (counts, dispatch). Tasks the commit created are in
/// `claims` (created), in `receipts` (a fallback of an UNDELIVERED task) and in
/// `caught_up_fallbacks`.
struct commit_outcome {
  std::vector<claim_result> claims;
  std::vector<std::vector<std::string>> applied; ///< per change group: ids whose change applied
  std::vector<bool> seals_admitted;
  std::vector<receipt_outcome> receipts;
  /// The channel of each escalation step a change group suppressed in the store itself (its
  /// message was READ first): policy's read_before_escalation, one entry per task.
  std::vector<std::string> suppressed_escalations;
  /// Fallbacks of tasks that a SENT change made UNDELIVERED at once, applying an UNDELIVERED
  /// receipt that came before it (a fast provider).
  std::vector<created_fallback> caught_up_fallbacks;
};

/// The database behind herald. Every call is one transaction and blocks: callers run it off
/// the actor scheduler's threads (store actors are detached). One instance is one connection
/// and is used by one thread at a time.
class task_store {
public:
  virtual ~task_store() = default;

  /// Runs the unit of work in ONE transaction, in its order (claims, change groups, push seals,
  /// receipts), and answers what that commit did: each command's answers and what happened
  /// beside them (commit_outcome). A failure throws (store_error from the database); it
  /// committed nothing, unless only the answer was lost after COMMIT.
  virtual commit_outcome commit(const unit_of_work& work) = 0;

  /// Inserts the messages and their tasks in one transaction; a task whose key exists is
  /// answered as "existing" with its current state, never as an error. Results in input order.
  /// The same key twice in one batch: the first is created, the later ones are duplicates.
  /// New tasks that may go at once are inserted taken as far as `takes` has places.
  std::vector<claim_result> claim(const std::vector<domain::message_plan>& plans,
                                  const claim_takes& takes = {});

  /// Applies the changes and appends the attempts in one transaction. Returns the ids of the
  /// tasks whose change applied (the row was still in `from`); the others were left alone.
  std::vector<std::string> apply(const std::vector<state_change>& changes,
                                 const std::vector<attempt_record>& attempts);

  /// Failover in one transaction: applies the guarded `change` to the `failed` task (with its
  /// `attempts`) and claims its fallback along `routes` — the first channel of its chain the
  /// message has an address for (domain::first_fallback_plan) — exactly as claim() would,
  /// policy judging it by the message's category; a fallback policy refuses hands over to the
  /// next channel of the chain, in the same transaction. Commits only when the change applied
  /// and the first fallback's task is new (else the fallback channel has, or had, its own task
  /// for this message, and failing over would send nothing new); a never-tried task leaving an
  /// open circuit also needs a fallback that will be sent. Otherwise nothing is written.
  virtual failover_result fail_over(const state_change& change,
                                    const std::vector<attempt_record>& attempts,
                                    const domain::delivery& failed,
                                    const fallback_routes& routes) = 0;

  /// Records the receipts and moves their tasks forward (domain::state_after_receipt) in one
  /// transaction; an UNDELIVERED task whose channel has a fallback claims the fallback's task
  /// in that same transaction, along the chain as fail_over() does. Outcomes in input order.
  /// Idempotent: the same receipt again writes nothing and answers where the task stands. A READ or
  /// CLICKED receipt from the inbox (source inbox) also marks the task's inbox item read (and
  /// clicked), once.
  std::vector<receipt_outcome> record_receipts(const std::vector<receipt_input>& receipts,
                                               const fallback_routes& failover,
                                               domain::timestamp now);

  /// Admits signed pushes (domain::push_seal) in one transaction: a seal whose (channel,
  /// signed_at, nonce) is new is stored (insert-if-absent on the primary key, so of two nodes
  /// racing with different requests one wins) and admitted; a known one is admitted only if it
  /// names the same request. Answers in input order. Drops the seals whose kept_until passed by
  /// `now`, at most once a minute per connection.
  std::vector<bool> admit_pushes(const std::vector<domain::push_seal>& seals,
                                 domain::timestamp now);

  /// Puts each task into its user's inbox (inapp channels) in one transaction: tenant, user (the
  /// task's recipient), channel, title and body come from the task and its message, created_at
  /// is `now`. A task already in the inbox keeps its item, so a resend writes nothing. Returns
  /// the ids that are in the inbox now (an id no task has is not).
  virtual std::vector<std::string> deliver_to_inbox(const std::vector<std::string>& task_ids,
                                                    domain::timestamp now) = 0;

  /// A page of one user's inbox, newest first (unread items only if asked), and the user's
  /// unread count, read one after the other (index inbox (tenant, user_id, created_at)).
  virtual inbox_page list_inbox(const inbox_query& which) = 0;

  /// The inbox item of `task_id` if it is `tenant`'s (empty: any tenant's).
  virtual std::optional<inbox_item> find_inbox_item(const std::string& tenant,
                                                    const std::string& task_id) = 0;

  /// The stored profile of `user_id` of `tenant`; nullopt when none was stored.
  virtual std::optional<domain::user_profile> find_user(const std::string& tenant,
                                                        const std::string& user_id) = 0;

  /// Applies `patch` to the user (created when absent) in one transaction, so concurrent
  /// changes do not lose each other, and answers the profile as committed.
  virtual domain::user_profile update_user(const std::string& tenant, const std::string& user_id,
                                           const domain::user_patch& patch,
                                           domain::timestamp now) = 0;

  /// The message, its tasks and their attempts; nullopt if unknown or of another tenant than
  /// `tenant` (empty: any tenant, for auth mode none).
  virtual std::optional<message_view> find_message(const std::string& tenant,
                                                   const std::string& message_id) = 0;

  /// Non-terminal tasks (PENDING, RETRY_WAIT, and SENDING whose lease has run out by `now`),
  /// after `after_task_id` in task-id order for paging (empty: from the start), narrowed by
  /// `which`; for recovery at start, after a restart, and the sweep.
  virtual std::vector<domain::delivery> load_unfinished(const std::string& after_task_id,
                                                        std::size_t limit, domain::timestamp now,
                                                        const unfinished_filter& which = {}) = 0;

  /// The unfinished tasks among `task_ids` (PENDING, RETRY_WAIT, and SENDING whose lease has
  /// run out by `now`), in task-id order; finished and unknown ids are left out. For the retry
  /// timer, which holds due tasks by id only and reads them whole when they are due.
  virtual std::vector<domain::delivery> load_deliveries(const std::vector<std::string>& task_ids,
                                                        domain::timestamp now) = 0;

  /// SENT tasks of `channel` and of `partitions` that became SENT at or before `sent_before`,
  /// oldest first (by that time, then id), after `after`, at most `limit`, each with the
  /// receipts recorded for it; for the reconciler (index tasks(status, channel, updated_at)).
  virtual std::vector<awaiting_receipt>
  load_awaiting_receipt(const std::string& channel, domain::timestamp sent_before,
                        const awaiting_cursor& after, std::size_t limit,
                        const partition_filter& partitions) = 0;

  /// DEAD, FAILED and SUPPRESSED tasks of `tenant` (empty: any tenant) that pass `filter`,
  /// after `after_task_id` in task-id order (paging).
  virtual std::vector<dead_letter> list_dead_letters(const std::string& tenant,
                                                     const dead_letter_filter& filter,
                                                     const std::string& after_task_id,
                                                     std::size_t limit) = 0;

  /// Moves a DEAD, FAILED or SUPPRESSED task of `tenant` (empty: any tenant) back to PENDING
  /// (same key, same id, attempt count kept), in one guarded statement: replaying twice
  /// replays once. Another tenant's task is not_found.
  virtual replay_result replay(const std::string& tenant, const std::string& task_id,
                               domain::timestamp now) = 0;

  /// Task counts per state.
  virtual std::vector<state_count> count_by_state() = 0;

  /// Task counts per channel and state and the messages they belong to, in one read (a
  /// consistent snapshot), channels by name.
  virtual stats_report stats(const stats_query& which) = 0;

  /// Ends every lease held on a SENDING task by node `node_name` — lease owner `node_name` or
  /// `node_name/<incarnation>` (lease_incarnation_length characters) — as of `now`: a node
  /// restarting under its old name does this before recovery, so the calls its previous processes
  /// left unanswered are resent at once (with their provider request ids) instead of after the
  /// lease. Its claims on status events end the same way, so they are posted again at once. Only
  /// safe while no live process holds that name. Returns how many tasks' leases were released.
  virtual std::size_t release_leases(const std::string& node_name, domain::timestamp now) = 0;

  /// Claims status events to post (docs/events.md), in one statement: of each task only its
  /// PENDING event of lowest seq, and only when that one is due by `claim.now`, of
  /// `claim.partitions`, and not claimed by anyone (or its claim ran out by `claim.now`), so a
  /// task's events go out in order and each is posted by one node at a time; lowest seq first,
  /// at most `limit`. Each event returned is claimed by `claim.owner` until `claim.until`. In the
  /// same transaction the claims `claim.owner` holds on `claim.held` are extended to
  /// `claim.until` (also when `limit` is 0).
  virtual std::vector<status_event> claim_due_events(const event_claim& claim,
                                                     std::size_t limit) = 0;

  /// Records what posting events came to, in one transaction, and ends their claims; an event
  /// that is no longer PENDING is left alone.
  virtual void settle_events(const std::vector<event_outcome>& outcomes) = 0;

  /// PENDING events (delivered later or dead later), for the events_pending gauge.
  virtual std::uint64_t count_pending_events() = 0;

  /// Cheap round trip proving the database answers; throws store_error if not.
  virtual void ping() = 0;
};

/// Where the database is: "sqlite:PATH" or "postgresql://user@host:port/db".
struct database_url {
  enum class kind { sqlite, postgresql };
  /// SQLite's `PRAGMA synchronous` in WAL mode: `full` syncs the WAL at every commit, so a
  /// commit survives a power loss; `normal` syncs at checkpoints only, so the last commits
  /// before a power loss (not a crash of herald) may be lost.
  enum class sqlite_sync { full, normal };
  kind backend = kind::sqlite;
  std::string sqlite_path;                            ///< for sqlite
  sqlite_sync sqlite_synchronous = sqlite_sync::full; ///< for sqlite (config sqlite.synchronous)
  std::string connection_string;                      ///< for postgresql: what SOCI/libpq is given
  std::string text;                                   ///< as given, for logs (password masked)
};

/// Parses the --db argument; throws std::invalid_argument with a one-line reason.
database_url parse_database_url(const std::string& text);

/// Opens one connection. Applies pending migrations first when `migrate` is set. Only a
/// connection that writes state changes needs `options.event_states`.
/// Throws store_error when the database cannot be reached or migrated.
std::unique_ptr<task_store> open_task_store(const database_url& url, bool migrate,
                                            store_options options = {});

/// Applies every pending migration; returns the schema version now in force.
int migrate(const database_url& url);

} // namespace herald::persistence
