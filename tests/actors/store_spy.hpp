#pragma once

// A thin decorator around the real SQLite task_store that counts the transactions the store
// actors start and remembers the state changes they ask for, then forwards every call.

#include "persistence/task_store.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace herald::test {

class store_spy final : public persistence::task_store {
public:
  explicit store_spy(std::unique_ptr<persistence::task_store> real) : real_(std::move(real)) {}

  std::size_t commits = 0;       ///< commit() calls, i.e. write transactions of batches
  std::size_t claim_batches = 0; ///< commits with claims
  std::size_t claimed_plans = 0;
  std::size_t apply_batches = 0;                  ///< commits with state changes, and failovers
  std::size_t change_groups = 0;                  ///< change groups of all commits
  std::vector<persistence::state_change> changes; ///< every change asked for, in order
  std::vector<std::string> recovery_reads;        ///< channel of each load_unfinished (empty: all)
  std::vector<std::vector<std::string>> id_reads; ///< task ids of each load_deliveries
  std::vector<std::string> awaiting_reads;        ///< channel of each load_awaiting_receipt
  std::vector<persistence::partition_filter> awaiting_partitions; ///< and its partitions
  std::vector<persistence::event_claim> event_claims;             ///< each claim_due_events
  std::size_t receipt_batches = 0;                                ///< commits with receipts
  std::vector<persistence::receipt_input> receipts; ///< every receipt recorded, in order
  std::size_t seal_batches = 0;                     ///< commits with push seals

  persistence::commit_outcome commit(const persistence::unit_of_work& work) override {
    ++commits;
    if (!work.claims.empty())
      ++claim_batches;
    claimed_plans += work.claims.size();
    if (!work.changes.empty())
      ++apply_batches;
    change_groups += work.changes.size();
    for (const auto& group : work.changes)
      changes.insert(changes.end(), group.changes.begin(), group.changes.end());
    if (!work.seals.empty())
      ++seal_batches;
    if (!work.receipts.empty())
      ++receipt_batches;
    receipts.insert(receipts.end(), work.receipts.begin(), work.receipts.end());
    return real_->commit(work);
  }

  persistence::failover_result fail_over(const persistence::state_change& change,
                                         const std::vector<persistence::attempt_record>& attempts,
                                         const domain::delivery& failed,
                                         const persistence::fallback_routes& routes) override {
    ++apply_batches;
    changes.push_back(change);
    return real_->fail_over(change, attempts, failed, routes);
  }

  std::vector<std::string> deliver_to_inbox(const std::vector<std::string>& task_ids,
                                            domain::timestamp now) override {
    return real_->deliver_to_inbox(task_ids, now);
  }

  persistence::inbox_page list_inbox(const persistence::inbox_query& which) override {
    return real_->list_inbox(which);
  }

  std::optional<domain::user_profile> find_user(const std::string& tenant,
                                                const std::string& user_id) override {
    return real_->find_user(tenant, user_id);
  }

  domain::user_profile update_user(const std::string& tenant, const std::string& user_id,
                                   const domain::user_patch& patch,
                                   domain::timestamp now) override {
    return real_->update_user(tenant, user_id, patch, now);
  }

  std::optional<persistence::inbox_item> find_inbox_item(const std::string& tenant,
                                                         const std::string& task_id) override {
    return real_->find_inbox_item(tenant, task_id);
  }

  std::optional<persistence::message_view> find_message(const std::string& tenant,
                                                        const std::string& message_id) override {
    return real_->find_message(tenant, message_id);
  }

  std::vector<domain::delivery>
  load_unfinished(const std::string& after_task_id, std::size_t limit, domain::timestamp now,
                  const persistence::unfinished_filter& which) override {
    recovery_reads.push_back(which.channel);
    return real_->load_unfinished(after_task_id, limit, now, which);
  }

  std::vector<domain::delivery> load_deliveries(const std::vector<std::string>& task_ids,
                                                domain::timestamp now) override {
    id_reads.push_back(task_ids);
    return real_->load_deliveries(task_ids, now);
  }

  std::vector<persistence::awaiting_receipt>
  load_awaiting_receipt(const std::string& channel, domain::timestamp sent_before,
                        const persistence::awaiting_cursor& after, std::size_t limit,
                        const persistence::partition_filter& partitions) override {
    awaiting_reads.push_back(channel);
    awaiting_partitions.push_back(partitions);
    return real_->load_awaiting_receipt(channel, sent_before, after, limit, partitions);
  }

  std::vector<persistence::dead_letter>
  list_dead_letters(const std::string& tenant, const persistence::dead_letter_filter& filter,
                    const std::string& after_task_id, std::size_t limit) override {
    return real_->list_dead_letters(tenant, filter, after_task_id, limit);
  }

  persistence::replay_result replay(const std::string& tenant, const std::string& task_id,
                                    domain::timestamp now) override {
    return real_->replay(tenant, task_id, now);
  }

  std::vector<persistence::state_count> count_by_state() override {
    return real_->count_by_state();
  }

  persistence::stats_report stats(const persistence::stats_query& which) override {
    return real_->stats(which);
  }

  std::size_t release_leases(const std::string& lease_owner, domain::timestamp now) override {
    return real_->release_leases(lease_owner, now);
  }

  std::vector<persistence::status_event> claim_due_events(const persistence::event_claim& claim,
                                                          std::size_t limit) override {
    event_claims.push_back(claim);
    return real_->claim_due_events(claim, limit);
  }

  void settle_events(const std::vector<persistence::event_outcome>& outcomes) override {
    real_->settle_events(outcomes);
  }

  std::uint64_t count_pending_events() override { return real_->count_pending_events(); }

  void ping() override { real_->ping(); }

private:
  std::unique_ptr<persistence::task_store> real_;
};

} // namespace herald::test
