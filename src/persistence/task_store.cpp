#include "persistence/task_store.hpp"

namespace herald::persistence {

// One command alone is a unit of work of its own.

std::vector<claim_result> task_store::claim(const std::vector<domain::message_plan>& plans,
                                            const claim_takes& takes) {
  if (plans.empty())
    return {};
  unit_of_work work;
  work.claims = plans;
  work.takes = takes;
  return commit(work).claims;
}

std::vector<std::string> task_store::apply(const std::vector<state_change>& changes,
                                           const std::vector<attempt_record>& attempts) {
  if (changes.empty() && attempts.empty())
    return {};
  unit_of_work work;
  work.changes.push_back({changes, attempts});
  return std::move(commit(work).applied.at(0));
}

std::vector<receipt_outcome> task_store::record_receipts(const std::vector<receipt_input>& receipts,
                                                         const fallback_routes& failover,
                                                         domain::timestamp now) {
  if (receipts.empty())
    return {};
  unit_of_work work;
  work.receipts = receipts;
  work.receipt_fallbacks = failover;
  work.now = now;
  return commit(work).receipts;
}

std::vector<bool> task_store::admit_pushes(const std::vector<domain::push_seal>& seals,
                                           domain::timestamp now) {
  if (seals.empty())
    return {};
  unit_of_work work;
  work.seals = seals;
  work.now = now;
  return commit(work).seals_admitted;
}

} // namespace herald::persistence
