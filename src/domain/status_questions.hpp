#pragma once

#include "domain/backoff.hpp"
#include "domain/time.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace herald::domain {

/// The channel's usual spacing of status questions: asked at once, then again after 10 s,
/// 1 min, 5 min and 30 min; six questions in all.
retry_policy default_question_policy();

/// What follows a status question the provider did not answer (a timeout, an error): "no
/// answer" is not "not sent", so the question is asked again after a backoff, until the
/// channel's questions are used up or the message's expire_at would pass first. Then the task
/// ends UNCONFIRMED: the provider may have the message, so it is never sent again.
/// (`why_stopped` says which bound ended the asking; the caller adds what it means.)
struct unanswered_question {
  std::uint32_t asked = 0; ///< questions without an answer so far, this one included
  /// When to ask again; nullopt: stop asking (see `why_stopped`).
  std::optional<timestamp> ask_again_at;
  std::string why_stopped; ///< for last_error; empty while asking again
};

/// The verdict after `asked_before` unanswered questions and one more now. `questions` spaces
/// them (schedule) and bounds them (max_attempts: questions in all); `unit_random` in [0, 1)
/// picks the jitter.
unanswered_question after_unanswered_question(const retry_policy& questions,
                                              std::uint32_t asked_before, timestamp now,
                                              std::optional<timestamp> expire_at,
                                              double unit_random);

} // namespace herald::domain
