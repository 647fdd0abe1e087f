#include "actors/events_actor.hpp"

#include "actors/logging_handlers.hpp"
#include "domain/masking.hpp"
#include "domain/status_event.hpp"
#include "observability/log.hpp"

#include <utility>

#include <boost/json.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/spawn_options.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

namespace json = boost::json;
using persistence::event_outcome;

std::string events_actor_config::validate() const {
  if (retry.max_attempts == 0)
    return "events.retry.max_attempts must be >= 1";
  if (poll_interval.count() <= 0)
    return "events poll interval must be positive";
  if (max_in_flight == 0)
    return "events max_in_flight must be at least 1";
  if (claim.count() <= 0)
    return "events claim must be positive";
  return {};
}

std::string event_payload(const persistence::status_event& event, std::int64_t unix_seconds) {
  const auto state = domain::state_of_event_type(event.type);
  json::object data;
  data["event_id"] = event.id;
  data["task_id"] = event.task_id;
  data["message_id"] = event.message_id;
  data["tenant"] = event.tenant;
  data["biz_type"] = event.biz_type;
  data["biz_id"] = event.biz_id;
  data["user_id"] = event.user_id;
  data["channel"] = event.channel;
  data["state"] = state ? std::string(domain::to_string(*state)) : std::string();
  data["occurred_at"] = domain::format_rfc3339(event.occurred_at);
  json::object body;
  body["type"] = event.type;
  body["timestamp"] = domain::format_rfc3339(
      std::chrono::system_clock::time_point{std::chrono::seconds{unix_seconds}});
  body["data"] = std::move(data);
  return json::serialize(body);
}

namespace {

using self_pointer = events_actor::stateful_pointer<events_state>;

void post_event(self_pointer self, const persistence::status_event& event,
                domain::timestamp claimed_until) {
  auto& st = self->state;
  // Claimed again while its post is still out (its claim ran out meanwhile, e.g. while this
  // actor was blocked on the database): the claim is this node's again, the post already is.
  const auto [posting, fresh] =
      st.in_flight.emplace(event.id, events_state::post_in_flight{event, claimed_until});
  if (!fresh) {
    posting->second.claimed_until = claimed_until;
    return;
  }
  providers::signed_post post;
  post.id = event.id;
  post.body = [event](std::int64_t now) { return event_payload(event, now); };
  auto handle = caf::actor_cast<events_actor>(self);
  st.post(std::move(post), [handle, id = event.id](providers::post_answer answer) {
    caf::anon_send(handle, result_atom_v, id, std::move(answer.result));
  });
}

// Writes the answered posts' outcomes; false (and they are kept) when the store failed.
bool settle(self_pointer self) {
  auto& st = self->state;
  if (st.unsettled.empty())
    return true;
  try {
    st.store->settle_events(st.unsettled);
  } catch (const std::exception& e) {
    log::error("events.settle_failed", {{"events", std::to_string(st.unsettled.size())},
                                        {"error", domain::mask_free_text(e.what())}});
    return false;
  }
  st.unsettled.clear();
  return true;
}

// Posts what is due, as room allows. Only once every answer is written: an event whose
// answer is still unwritten looks due in the outbox and would be posted twice. With
// `renew_held`, the claims on the posts in flight for over half their claim are extended in the
// same transaction: a post may wait behind others and run up to its timeout, and a claim that
// ran out meanwhile would let the partition's owner post the event again. (Most posts end long
// before: their rows are not written again.)
void poll(self_pointer self, bool renew_held) {
  auto& st = self->state;
  if (!settle(self))
    return;
  const auto now = st.clock->now();
  const auto until = now + st.config.claim;
  const std::size_t bound = st.receiver_failing ? 1 : st.config.max_in_flight;
  const auto room = st.in_flight.size() < bound ? bound - st.in_flight.size() : 0;
  std::vector<std::string> held;
  if (renew_held)
    for (const auto& [id, post] : st.in_flight)
      if (post.claimed_until - now < st.config.claim / 2)
        held.push_back(id);
  if (room == 0 && held.empty())
    return;
  std::vector<persistence::status_event> due;
  try {
    // Events in flight are claimed by this node still, so the claim leaves them out; one whose
    // claim ran out regardless comes back and is not posted again (post_event).
    due = st.store->claim_due_events(
        {st.config.owner, now, until, st.share ? st.share->owned_partitions() : std::nullopt, held},
        room);
  } catch (const std::exception& e) {
    log::error("events.load_failed", {{"error", domain::mask_free_text(e.what())}});
    return;
  }
  for (const auto& id : held)
    st.in_flight.at(id).claimed_until = until;
  for (const auto& event : due)
    post_event(self, event, until);
}

void update_gauge(self_pointer self) {
  try {
    self->state.metrics->events_pending(
        static_cast<double>(self->state.store->count_pending_events()));
  } catch (const std::exception& e) {
    log::warn("events.count_failed", {{"error", domain::mask_free_text(e.what())}});
  }
}

event_outcome outcome_of(events_state& st, const persistence::status_event& event,
                         const providers::provider_result& result) {
  event_outcome outcome;
  outcome.event_id = event.id;
  outcome.attempts = event.attempts + 1;
  outcome.at = st.clock->now();
  if (result.outcome == call_outcome::success) {
    outcome.result = event_outcome::outcome::delivered;
    return outcome;
  }
  outcome.last_error = result.detail;
  const auto unit = std::uniform_real_distribution<double>{0.0, 1.0}(st.jitter_rng);
  if (auto delay = st.config.retry.next_delay(outcome.attempts, unit)) {
    outcome.result = event_outcome::outcome::retry;
    outcome.next_attempt_at = outcome.at + *delay;
  } else {
    outcome.result = event_outcome::outcome::dead;
  }
  return outcome;
}

const char* outcome_name(event_outcome::outcome outcome) {
  switch (outcome) {
  case event_outcome::outcome::delivered:
    return "delivered";
  case event_outcome::outcome::retry:
    return "retry";
  case event_outcome::outcome::dead:
    return "dead";
  }
  return "retry";
}

} // namespace

events_actor::behavior_type
events(self_pointer self, std::shared_ptr<persistence::task_store> store, event_poster post,
       std::shared_ptr<herald::metrics> metrics, std::shared_ptr<const domain::clock> clock,
       std::shared_ptr<const cluster_share> share, events_actor_config config) {
  install_logging_handlers(self);
  auto& init = self->state;
  init.store = std::move(store);
  init.post = std::move(post);
  init.metrics = std::move(metrics);
  init.clock = std::move(clock);
  init.share = std::move(share);
  init.config = std::move(config);
  self->send(self, tick_atom_v);
  return {
      [self](tick_atom) {
        auto& st = self->state;
        poll(self, true);
        update_gauge(self);
        // Only the actor's own tick re-arms: a "new events" nudge from outside must not add a
        // second timer.
        if (const auto& sender = self->current_sender(); sender && sender.get() == self->ctrl())
          self->delayed_send(self, st.config.poll_interval, tick_atom_v);
      },
      [self](result_atom, const std::string& event_id, const providers::provider_result& result) {
        auto& st = self->state;
        auto found = st.in_flight.find(event_id);
        if (found == st.in_flight.end())
          return; // not ours (an answer to a predecessor of this actor)
        auto event = std::move(found->second.event);
        st.in_flight.erase(found);
        auto outcome = outcome_of(st, event, result);
        st.receiver_failing = outcome.result != event_outcome::outcome::delivered;
        st.metrics->event_delivered(outcome_name(outcome.result));
        if (outcome.result == event_outcome::outcome::dead)
          log::warn("events.dead", {{"event_id", event.id},
                                    {"task_id", event.task_id},
                                    {"type", event.type},
                                    {"attempts", std::to_string(outcome.attempts)},
                                    {"error", domain::mask_free_text(outcome.last_error)}});
        st.unsettled.push_back(std::move(outcome));
        // Answers that arrive meanwhile are written in the same transaction.
        if (!st.flush_queued) {
          st.flush_queued = true;
          self->send(self, flush_atom_v);
        }
      },
      [self](flush_atom) {
        auto& st = self->state;
        st.flush_queued = false;
        // A delivered event may free its task's next one: look at once, not at the next tick.
        // While the receiver fails, only write the answers; the tick sends the next probe.
        if (st.receiver_failing)
          settle(self);
        else
          poll(self, false);
      },
  };
}

supervised_component start_events(caf::actor_system& sys,
                                  std::shared_ptr<persistence::task_store> store, event_poster post,
                                  std::shared_ptr<herald::metrics> metrics,
                                  std::shared_ptr<const domain::clock> clock,
                                  std::shared_ptr<const cluster_share> share,
                                  events_actor_config config) {
  // Detached: it blocks on its own store connection. A restart reuses connection and poster;
  // the dead actor's posts still in flight answer to nobody, so those events stay PENDING
  // and are posted again once their claims run out (receivers dedupe by webhook-id).
  auto start = [store, post, metrics, clock, share, config](caf::actor_system& system) {
    return caf::actor_cast<caf::actor>(
        system.spawn<caf::detached>(events, store, post, metrics, clock, share, config));
  };
  return {"events", shutdown_stage::timer, start(sys), start};
}

} // namespace herald::actors
