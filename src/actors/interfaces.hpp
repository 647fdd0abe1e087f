#pragma once

// Every typed actor interface of herald, in one place (data flow: design.md §2).

#include "actors/atoms.hpp"
#include "actors/cluster_messages.hpp"
#include "domain/cluster_view.hpp"
#include "domain/partitions.hpp"
#include "providers/provider.hpp"

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

namespace herald::actors {

/// Partitions a node owns, ascending.
using partition_list = std::vector<domain::partition>;
/// Tasks with their partitions: task id by partition of its message.
using partitioned_tasks = std::vector<std::pair<domain::partition, std::string>>;

/// Reads on a connection of its own, so reads never queue behind group commits.
using store_reader_actor = caf::typed_actor<
    /// A tenant's (empty: any tenant's) message, its tasks and attempts, or none.
    caf::replies_to<find_atom, std::string, std::string>::with<maybe_message_view>,
    /// Unfinished tasks after a task id (paging), at most a limit, whose lease, if any, ran out
    /// by the given time, narrowed by the filter (one channel; retries due by a horizon).
    caf::replies_to<recover_atom, std::string, std::uint64_t, domain::timestamp,
                    persistence::unfinished_filter>::with<deliveries>,
    /// The unfinished tasks among these ids (a SENDING one only when its lease ran out by the
    /// given time), read whole: the retry timer holds only ids.
    caf::replies_to<load_atom, task_ids, domain::timestamp>::with<deliveries>,
    /// Task counts per state.
    caf::replies_to<count_atom>::with<state_counts>,
    /// SENT tasks of a channel and of some partitions sent by a time, oldest first after a
    /// cursor, at most a limit, with their recorded receipts (the reconciler's page).
    caf::replies_to<awaiting_atom, awaiting_query>::with<awaiting_receipts>,
    /// Dead letters of a tenant that pass a filter, after a task id, at most a limit.
    caf::replies_to<letters_atom, std::string, persistence::dead_letter_filter, std::string,
                    std::uint64_t>::with<dead_letters>,
    /// Task counts per channel and state (GET /v1/stats).
    caf::replies_to<stats_atom, persistence::stats_query>::with<stats_report>,
    /// A page of one user's inbox and their unread count.
    caf::replies_to<inbox_atom, persistence::inbox_query>::with<persistence::inbox_page>,
    /// A tenant's (empty: any tenant's) inbox item by task id, or none.
    caf::replies_to<item_atom, std::string, std::string>::with<maybe_inbox_item>,
    /// A tenant's user profile (tenant, user id), or none.
    caf::replies_to<user_atom, std::string, std::string>::with<maybe_user_profile>,
    /// Proves the database answers.
    caf::replies_to<ping_atom>::with<bool>>;

/// Stored templates on a connection of its own; keeps the node's catalog of their latest
/// versions (template_registry.hpp).
using template_registry_actor = caf::typed_actor<
    /// Saves a checked definition as the next version of a tenant's template (tenant, code) at
    /// the given time; answers it after COMMIT, and the node renders it from then on.
    caf::replies_to<put_atom, std::string, std::string, domain::template_definition,
                    domain::timestamp>::with<domain::stored_template>,
    /// A tenant's template (tenant, code): the given version, or the latest when 0.
    caf::replies_to<template_atom, std::string, std::string,
                    std::uint32_t>::with<maybe_stored_template>,
    /// Deletes every version of a tenant's template (tenant, code) at the given time; answers
    /// whether a live template was deleted.
    caf::replies_to<delete_atom, std::string, std::string, domain::timestamp>::with<bool>,
    /// Reloads the catalog when the database changed (sent to itself every interval).
    caf::reacts_to<refresh_atom>>;

/// Serialises all claims of one message key (and so of each of its task keys).
using dedup_shard_actor = caf::typed_actor<
    /// Claims a message; concurrent claims of the same key share one database round trip.
    caf::replies_to<claim_atom, domain::message_plan>::with<persistence::claim_result>,
    /// Answers the claims whose store did not answer within the claim timeout (sent to itself
    /// at the earliest such deadline).
    caf::reacts_to<tick_atom>>;

/// Holds tasks until they are due — retries at next_attempt_at, future sends at send_at — in
/// one priority queue behind one re-arming timer, and hands their ids to the dispatcher.
using retry_timer_actor = caf::typed_actor<
    /// Holds each task (its due time and id) until it is due; a task already held is
    /// rescheduled, not duplicated.
    caf::reacts_to<schedule_atom, deliveries>,
    /// Drops a held task.
    caf::reacts_to<cancel_atom, std::string>,
    /// The timer of the given generation fired (sent to itself).
    caf::reacts_to<tick_atom, std::uint64_t>>;

/// Sends one channel's tasks: priority lanes, token bucket, in-flight window, circuit breaker.
using channel_actor = caf::typed_actor<
    /// Takes tasks to send (new, recovered or due again).
    caf::reacts_to<dispatch_atom, deliveries>,
    /// Takes tasks a claim created taken in the places this channel offered (committed SENDING
    /// under its lease already), and gets back the places the claim did not use.
    caf::reacts_to<taken_atom, taken_in_claim>,
    /// A provider call finished (sent by the adapter's callback).
    caf::reacts_to<result_atom, std::string, providers::provider_result>,
    /// The provider answered whether it has a recovered SENDING task (sent by the adapter's
    /// callback).
    caf::reacts_to<status_atom, std::string, providers::status_answer>,
    /// The rate limiter may have tokens again (sent to itself).
    caf::reacts_to<tick_atom>,
    /// Sends the writes that failed again, as they were (sent to itself after a backoff).
    caf::reacts_to<rewrite_atom>,
    /// Stops starting calls; answers once every call in flight is recorded.
    caf::replies_to<drain_atom>::with<bool>>;

/// Settles SENT tasks whose channel's receipt window passed without a final receipt: asks the
/// provider where it can and records its word as a receipt, else marks them UNCONFIRMED.
using reconciler_actor = caf::typed_actor<
    /// Starts a pass over every channel not in one already (sent to itself every interval).
    caf::reacts_to<tick_atom>,
    /// A channel's rate limit may allow more status queries (sent to itself).
    caf::reacts_to<tick_atom, std::string>,
    /// A status query of a channel's task finished (sent by the adapter's callback): channel,
    /// task id, answer.
    caf::reacts_to<status_atom, std::string, std::string, providers::status_answer>>;

/// What a cluster member shows other nodes (published through the middleman): only messages
/// that travel, each with an inspect() overload.
using cluster_peer_actor = caf::typed_actor<
    /// A peer's heartbeat; the peer's member is the sender.
    caf::reacts_to<beat_atom, member_beat>,
    /// Tasks of this node's partitions that a peer accepted.
    caf::reacts_to<handoff_atom, task_handoff>>;

/// A node's member of its cluster (actors/cluster_member.hpp): its peer face, and what the
/// node itself asks of it.
using cluster_member_actor = cluster_peer_actor::extend<
    /// New tasks of other nodes' partitions, from this node's dispatcher: handed to their owners.
    caf::reacts_to<forward_atom, partitioned_tasks>,
    /// Beats, forgets peers silent for the timeout (sent to itself every heartbeat interval).
    caf::reacts_to<tick_atom>,
    /// Connects to the peer at this address (sent to itself, and again after each loss).
    caf::reacts_to<dial_atom, std::string>,
    /// This node's view of its cluster (GET /v1/cluster).
    caf::replies_to<cluster_atom>::with<domain::cluster_view>>;

/// Routes tasks to channel actors (or to the retry timer until they are due) and recovers
/// unfinished tasks; the node supervisor tells it which actors to route to.
using dispatcher_actor = caf::typed_actor<
    /// Hands tasks to their channels.
    caf::reacts_to<dispatch_atom, deliveries>,
    /// Hands tasks a claim created taken to the channel whose places they took.
    caf::reacts_to<taken_atom, taken_in_claim>,
    /// Routes a channel's tasks to this channel actor from now on (a new or restarted one).
    caf::reacts_to<attach_atom, std::string, channel_actor>,
    /// Holds tasks that are not yet due in this retry timer from now on.
    caf::reacts_to<attach_atom, retry_timer_actor>,
    /// Loads the unfinished tasks of one channel (empty: all) from the database, one paced
    /// page at a time, and dispatches them (at start, and after a restart lost some).
    caf::reacts_to<recover_atom, std::string>,
    /// Reads these tasks (come due in the retry timer) from the database and hands them to
    /// their channels; answers how long the channels need to send them.
    caf::replies_to<due_atom, task_ids>::with<caf::timespan>,
    /// Reads the next recovery page (sent to itself once the channels have room for it).
    caf::reacts_to<page_atom>,
    /// Re-reads unfinished tasks (sent to itself every sweep interval).
    caf::reacts_to<sweep_atom>,
    /// Hands new tasks of partitions it does not own to this cluster member from now on.
    caf::reacts_to<attach_atom, cluster_member_actor>,
    /// Dispatches, sweeps and recovers only these partitions from now on (a cluster's
    /// membership changed); newly owned ones are swept at once.
    caf::reacts_to<own_atom, partition_list>,
    /// Drains every channel; answers when all are idle.
    caf::replies_to<drain_atom>::with<bool>,
    /// Liveness probe.
    caf::replies_to<ping_atom>::with<bool>>;

/// Group-commits writes: many requests, one transaction (design.md §6). What a commit did is
/// followed up here, once for every caller: the tasks it created are counted and handed to the
/// dispatcher (store_writer.hpp).
using store_writer_actor = caf::typed_actor<
    /// Claims one planned message; answers after COMMIT.
    caf::replies_to<claim_atom, domain::message_plan>::with<persistence::claim_result>,
    /// Claims planned messages in one transaction; answers one result per plan after COMMIT.
    caf::replies_to<claim_atom, message_plans>::with<claim_results>,
    /// Applies guarded state changes and records attempts; answers the ids that applied.
    caf::replies_to<apply_atom, state_changes, attempt_records>::with<task_ids>,
    /// Applies a failed task's change and claims its fallback along the chain in one
    /// transaction, or writes nothing (persistence::task_store::fail_over).
    caf::replies_to<failover_atom, persistence::state_change, attempt_records,
                    domain::delivery>::with<persistence::failover_result>,
    /// Moves a dead letter of a tenant (empty: any) back to PENDING at the given time
    /// (replaying twice replays once).
    caf::replies_to<replay_atom, std::string, std::string,
                    domain::timestamp>::with<persistence::replay_result>,
    /// Records receipts (as of the given time) and moves their tasks, in the next group
    /// commit; answers one outcome per receipt after COMMIT.
    caf::replies_to<receipt_atom, receipt_inputs, domain::timestamp>::with<receipt_outcomes>,
    /// Admits a signed push's seal (as of the given time) in the next group commit; answers
    /// after COMMIT whether the push may be acted on (its seal is new, or names the same request).
    caf::replies_to<seal_atom, domain::push_seal, domain::timestamp>::with<bool>,
    /// Applies a change to a user of a tenant (tenant, user id), creating it when absent, in
    /// one transaction stamped with the given time; answers the profile after COMMIT.
    caf::replies_to<update_atom, std::string, std::string, domain::user_patch,
                    domain::timestamp>::with<domain::user_profile>,
    /// Hands the tasks its commits create (and replay) to this dispatcher from now on.
    caf::reacts_to<attach_atom, dispatcher_actor>,
    /// Commits what has been collected (sent to itself).
    caf::reacts_to<flush_atom>>;

/// The HTTP layer's entry point (app/actor_service.cpp asks it; HTTP threads never block).
using ingest_actor = caf::typed_actor<
    /// Lists dead letters (tenant, filter, after task id, limit).
    caf::replies_to<letters_atom, std::string, persistence::dead_letter_filter, std::string,
                    std::uint64_t>::with<dead_letters>,
    /// Replays a tenant's dead letter (tenant, task id); the writer dispatches it.
    caf::replies_to<replay_atom, std::string, std::string>::with<persistence::replay_result>,
    /// Claims a planned message through its shard; answers after COMMIT.
    caf::replies_to<submit_atom, domain::message_plan>::with<persistence::claim_result>,
    /// Claims a batch's planned messages in one group commit; answers after COMMIT.
    caf::replies_to<submit_atom, message_plans>::with<claim_results>,
    /// Looks a tenant's message up (tenant, message id).
    caf::replies_to<find_atom, std::string, std::string>::with<maybe_message_view>,
    /// Counts tasks per channel and state (GET /v1/stats).
    caf::replies_to<stats_atom, persistence::stats_query>::with<stats_report>,
    /// Reads a page of one user's inbox (GET /v1/users/{user_id}/inbox).
    caf::replies_to<inbox_atom, persistence::inbox_query>::with<persistence::inbox_page>,
    /// Looks a tenant's inbox item up (tenant, task id).
    caf::replies_to<item_atom, std::string, std::string>::with<maybe_inbox_item>,
    /// Looks a tenant's user profile up (tenant, user id; GET /v1/users/{user_id}).
    caf::replies_to<user_atom, std::string, std::string>::with<maybe_user_profile>,
    /// Changes a tenant's user profile (tenant, user id, checked patch) at the clock's time;
    /// answers the profile after COMMIT.
    caf::replies_to<update_atom, std::string, std::string,
                    domain::user_patch>::with<domain::user_profile>,
    /// Readiness: no problem on the health board, the database answers, the dispatcher runs;
    /// answers whether the node is ready and, when not, why.
    caf::replies_to<ready_atom>::with<bool, std::string>>;

/// Takes providers' receipts and records them (see receipt_actor.hpp).
using receipt_actor = caf::typed_actor<
    /// A verified receipt from a provider's callback; answered after COMMIT.
    caf::replies_to<receipt_atom, persistence::receipt_input>::with<persistence::receipt_outcome>,
    /// Looks the task of a waiting receipt up again (sent to itself; the receipt's number).
    caf::reacts_to<rewrite_atom, std::uint64_t>,
    /// A signed push's seal: answers after COMMIT whether the push may be acted on.
    caf::replies_to<seal_atom, domain::push_seal>::with<bool>>;
/// Posts status events from the outbox to the calling system (docs/events.md), on a store
/// connection of its own: a receiver that is down never holds up the store writer or a channel.
using events_actor = caf::typed_actor<
    /// Reads due events and posts them, as the in-flight bound allows (sent to itself every
    /// poll interval; anyone may send it when new events exist).
    caf::reacts_to<tick_atom>,
    /// A post finished (sent by the poster's callback): the event id and its answer.
    caf::reacts_to<result_atom, std::string, providers::provider_result>,
    /// Writes the finished posts' outcomes in one transaction (sent to itself).
    caf::reacts_to<flush_atom>>;

/// Registers and monitors every long-lived actor of a node: restarts what can be restarted
/// (within a budget), reports what cannot on the health board, and stops them all in order.
using node_supervisor_actor = caf::typed_actor<
    /// Stops every component, stage by stage, each with a grace period and then a kill
    /// timeout; answers once all are gone.
    caf::replies_to<shutdown_atom>::with<bool>,
    /// The grace period (false) or kill timeout (true) of a shutdown stage ran out (sent to
    /// itself; the number tells stale deadlines apart).
    caf::reacts_to<deadline_atom, std::uint64_t, bool>>;

} // namespace herald::actors
