#include "domain/status_questions.hpp"

namespace herald::domain {

retry_policy default_question_policy() {
  using namespace std::chrono_literals;
  retry_policy policy;
  policy.schedule = {10s, 1min, 5min, 30min};
  policy.jitter = 0.2;
  policy.max_attempts = 6;
  return policy;
}

unanswered_question after_unanswered_question(const retry_policy& questions,
                                              std::uint32_t asked_before, timestamp now,
                                              std::optional<timestamp> expire_at,
                                              double unit_random) {
  unanswered_question verdict;
  verdict.asked = asked_before + 1;
  const auto of_questions = std::to_string(verdict.asked) + " status question" +
                            (verdict.asked == 1 ? "" : "s") + " without an answer";
  const auto delay = questions.next_delay(verdict.asked, unit_random);
  if (!delay) {
    verdict.why_stopped = of_questions + ", the last allowed";
    return verdict;
  }
  const auto at = now + *delay;
  if (expire_at && at > *expire_at) {
    verdict.why_stopped = of_questions + "; expire_at passes before the next one";
    return verdict;
  }
  verdict.ask_again_at = at;
  return verdict;
}

} // namespace herald::domain
