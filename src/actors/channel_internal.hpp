#pragma once

// What the channel actor's two files share (channel_actor.cpp: taking, marking, calling and
// recording; channel_questions.cpp: asking a provider about calls in doubt). Internal to
// src/actors.

#include "actors/channel_actor.hpp"

#include <functional>
#include <string>

namespace herald::actors::channel_detail {

using self_pointer = channel_actor::stateful_pointer<channel_state>;
using domain::task_state;

/// A guarded change of `task` from its current state; the lease is released unless set.
persistence::state_change change_of(const domain::delivery& task, task_state to,
                                    std::uint32_t attempts, domain::timestamp now,
                                    std::string last_error = {});

/// Takes new tasks as the scheduler allows and calls the committed ones.
void pump(self_pointer self);
/// Puts a task this channel held back into its lane, and pumps.
void requeue(self_pointer self, domain::delivery task);

/// Commits one change with its attempts, until the store answers; `then` runs once it applied.
void record(self_pointer self, domain::delivery task, persistence::state_change change,
            attempt_records attempts, bool was_failing = false, std::function<void()> then = {});
/// A failed write, kept and sent again as it was after a backoff.
void rewrite_later(self_pointer self, std::function<void()> write, const caf::error& err,
                   bool was_failing);
/// A write went to the store (`settles`: it settles a call, holding the task's window place).
void write_sent(channel_state& st, bool settles);
/// Its answer came back.
void write_ended(channel_state& st, bool settles);
/// A write answered: the window may have room, a failing store may be well again.
void write_answered(self_pointer self, bool was_failing);
/// Answers a drain once nothing is in flight or held.
void answer_drain_if_idle(channel_state& st);

/// Asks the provider whether it got the earlier call of a task found SENDING, holding the take
/// (lease, token) and a place in the window meanwhile.
void ask_provider(self_pointer self, domain::delivery task, std::string take_token);
/// The provider's answer to a status question.
void on_status(self_pointer self, const std::string& task_id,
               const providers::status_answer& answer);

} // namespace herald::actors::channel_detail
