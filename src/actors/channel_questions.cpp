// The channel's questions to a provider about calls in doubt (a task found SENDING after a
// crash, a call that timed out): asked before any resend, and what each answer leads to.
#include "actors/channel_internal.hpp"
#include "domain/masking.hpp"
#include "observability/log.hpp"

#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors::channel_detail {

// A recovered SENDING task whose provider can be asked: asks whether the provider got the
// earlier call, holding the take (lease, token) and a place in the window meanwhile.
void ask_provider(self_pointer self, domain::delivery task, std::string take_token) {
  auto& st = self->state;
  // A task found SENDING never got the provider's answer, so it has no provider message id.
  providers::provider_status_query query{
      task.task_id, task.channel, task.provider_request_id, task.trace_id, {}};
  auto task_id = task.task_id;
  st.calls.emplace(
      task_id, channel_state::call{std::move(task), st.clock->now(), std::move(take_token), true});
  auto handle = caf::actor_cast<channel_actor>(self);
  auto done = [handle, task_id](providers::status_answer answer) {
    caf::anon_send(handle, status_atom_v, task_id, std::move(answer));
  };
  try {
    st.provider->query_status(std::move(query), done);
  } catch (const std::exception& e) { // adapters must not throw; if one does, it cannot say
    done({providers::status_answer::kind::unknown,
          providers::provider_status::accepted,
          {},
          std::string{"adapter threw: "} + e.what()});
  }
}

// Records a final status the provider named when asked (source query), once the task is SENT;
// an UNDELIVERED one fails over in the same transaction, and the fallback task is dispatched.
void record_query_receipt(self_pointer self, domain::delivery task, domain::receipt_status status,
                          domain::timestamp at, bool was_failing = false) {
  write_sent(self->state, false); // the task is SENT already
  persistence::receipt_input input;
  input.channel = task.channel;
  input.provider_request_id = task.provider_request_id;
  input.receipt = {status, domain::receipt_source::query, at, at,
                   "status query of an unanswered call"};
  self->request(self->state.store, self->state.settings.store_timeout, receipt_atom_v,
                receipt_inputs{input}, at)
      .then(
          // A fallback the receipt's transaction created was dispatched by the writer.
          [self, was_failing](receipt_outcomes&) {
            write_ended(self->state, false);
            write_answered(self, was_failing);
          },
          [self, task, status, at, was_failing](caf::error& err) mutable {
            auto& st = self->state;
            write_ended(st, false);
            log::error("channel.receipt_failed", {{"channel", st.settings.name},
                                                  {"task_id", task.task_id},
                                                  {"trace_id", task.trace_id},
                                                  {"error", describe(err)}});
            rewrite_later(
                self,
                [self, task = std::move(task), status, at]() mutable {
                  record_query_receipt(self, std::move(task), status, at, true);
                },
                err, was_failing);
          });
}

// The provider has the message an ambiguous task was sent with: the earlier call reached it.
// Records it SENT under the take's token (no call), and a final status as its receipt.
void record_found(self_pointer self, channel_state::call asked,
                  const providers::status_answer& answer) {
  auto& st = self->state;
  const auto now = st.clock->now();
  auto& task = asked.task;
  auto change = change_of(task, task_state::sent, task.attempts + 1, now);
  change.lease_token = asked.take_token;
  // The call is settled: the reconciler's questions about the receipt are counted afresh.
  change.status_questions = 0;
  if (!answer.message_id.empty())
    change.provider_message_id = answer.message_id;
  attempt_records attempts{{task.task_id, change.attempts, task.provider_request_id,
                            std::string{to_string(call_outcome::success)},
                            "found by status query: " + std::string{to_string(answer.status)},
                            asked.started_at, now}};
  std::function<void()> then;
  if (auto receipt = providers::receipt_of(answer.status))
    then = [self, task, status = *receipt, now] { record_query_receipt(self, task, status, now); };
  record(self, std::move(task), std::move(change), std::move(attempts), false, std::move(then));
}

// The provider gave no answer (a timeout, an error), which is not "not sent": it may have the
// message. The task stays SENDING under this take, its lease held until the next question is
// due (as a timed-out call's is), and is asked again then; its questions used up, or expire_at
// passing first, it ends UNCONFIRMED and is never resent. The count survives a restart.
void ask_again_later(self_pointer self, channel_state::call asked,
                     const providers::status_answer& answer) {
  auto& st = self->state;
  const auto now = st.clock->now();
  auto& task = asked.task;
  const auto unit = std::uniform_real_distribution<double>{0.0, 1.0}(st.jitter_rng);
  const auto verdict = domain::after_unanswered_question(
      st.settings.questions, task.status_questions, now, task.expire_at, unit);
  auto change = change_of(task, task_state::unconfirmed, task.attempts, now);
  change.lease_token = asked.take_token;
  change.status_questions = verdict.asked;
  change.next_question_at = verdict.ask_again_at;
  if (verdict.ask_again_at) {
    change.to = task_state::sending;
    change.lease_owner = st.settings.node_id;
    change.lease_until = verdict.ask_again_at;
    change.next_attempt_at = verdict.ask_again_at;
    change.last_error = "status query without an answer: " + answer.detail;
  } else {
    change.last_error =
        verdict.why_stopped +
        "; the provider may have the message, so it is not sent again; last: " + answer.detail;
  }
  const std::string_view then = verdict.ask_again_at ? "asked_again" : "unconfirmed";
  st.metrics->status_question_unanswered(st.settings.name, then);
  log::write(verdict.ask_again_at ? log::level::info : log::level::warn,
             "channel.status_question_unanswered",
             {{"channel", st.settings.name},
              {"task_id", task.task_id},
              {"trace_id", task.trace_id},
              {"questions", std::to_string(verdict.asked)},
              {"then", std::string{then}},
              {"detail", domain::mask_free_text(answer.detail)}});
  task.status_questions = verdict.asked;
  task.next_question_at = verdict.ask_again_at;
  record(self, std::move(task), std::move(change), {});
}

void on_status(self_pointer self, const std::string& task_id,
               const providers::status_answer& answer) {
  auto& st = self->state;
  auto found = st.calls.find(task_id);
  if (found == st.calls.end() || !found->second.asking)
    return;
  auto asked = std::move(found->second);
  st.calls.erase(found);
  st.scheduler->abandon_probe(task_id); // a query proves little about sending: let a send probe
  const auto outcome = to_string(answer.result);
  st.metrics->ambiguous_resolved(st.settings.name, outcome);
  const bool has_it = answer.result == providers::status_answer::kind::found;
  log::info("channel.ambiguous_resolved",
            {{"channel", st.settings.name},
             {"task_id", task_id},
             {"provider_request_id", asked.task.provider_request_id},
             {"trace_id", asked.task.trace_id},
             {"outcome", std::string{outcome}},
             {"status", has_it ? std::string{to_string(answer.status)} : std::string{}},
             {"detail", domain::mask_free_text(answer.detail)}});
  if (has_it) {
    record_found(self, std::move(asked), answer);
  } else if (answer.result == providers::status_answer::kind::not_found) {
    // The provider's own word that it never got the call: taken again (a fresh lease for the
    // call) and resent.
    st.asked.insert(task_id);
    requeue(self, std::move(asked.task));
  } else {
    ask_again_later(self, std::move(asked), answer);
  }
  answer_drain_if_idle(st);
  pump(self);
}

} // namespace herald::actors::channel_detail
