#pragma once

#include "persistence/task_store.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace herald::persistence {

/// Random write failures for drills (config `store.faults`); all zero: none.
struct store_faults {
  double write_failure_rate = 0; ///< share of writes that fail
  /// Of the failing writes, the share that commit first and only then fail — an answer lost on
  /// the way back, the case a caller cannot tell from a rollback.
  double lost_answer_share = 0.5;
  std::uint64_t seed = 1;

  /// An empty string when valid, else the reason.
  std::string validate() const;
};

/// A decorator over a real store that fails or delays chosen writes (commit, fail_over, replay,
/// release_leases, settle_events, deliver_to_inbox, update_user) — for tests, and for drills that
/// load herald while its database misbehaves. Reads and event claims pass through. A failure is a
/// store_error, as the real store throws; "lost answer" failures throw after the inner store
/// committed.
class faulty_task_store final : public task_store {
public:
  enum class fault {
    fail,        ///< throws before the write: nothing committed
    lose_answer, ///< writes, then throws: committed, but the caller hears an error
    delay,       ///< blocks the calling thread, then writes (a slow database)
  };

  faulty_task_store(std::shared_ptr<task_store> real, store_faults faults);

  /// Makes the `nth` write from now (1: the next one) fail, lose its answer or wait `delay`.
  void script(std::size_t nth, fault what, std::chrono::milliseconds delay = {});
  /// Writes so far, and how many of them were made to fail.
  std::uint64_t writes() const;
  std::uint64_t failed_writes() const;

  commit_outcome commit(const unit_of_work& work) override;
  failover_result fail_over(const state_change& change, const std::vector<attempt_record>& attempts,
                            const domain::delivery& failed, const fallback_routes& routes) override;
  std::vector<std::string> deliver_to_inbox(const std::vector<std::string>& task_ids,
                                            domain::timestamp now) override;
  inbox_page list_inbox(const inbox_query& which) override;
  std::optional<domain::user_profile> find_user(const std::string& tenant,
                                                const std::string& user_id) override;
  domain::user_profile update_user(const std::string& tenant, const std::string& user_id,
                                   const domain::user_patch& patch, domain::timestamp now) override;
  std::optional<inbox_item> find_inbox_item(const std::string& tenant,
                                            const std::string& task_id) override;
  std::optional<message_view> find_message(const std::string& tenant,
                                           const std::string& message_id) override;
  std::vector<domain::delivery> load_unfinished(const std::string& after_task_id, std::size_t limit,
                                                domain::timestamp now,
                                                const unfinished_filter& which) override;
  std::vector<domain::delivery> load_deliveries(const std::vector<std::string>& task_ids,
                                                domain::timestamp now) override;
  std::vector<awaiting_receipt> load_awaiting_receipt(const std::string& channel,
                                                      domain::timestamp sent_before,
                                                      const awaiting_cursor& after,
                                                      std::size_t limit,
                                                      const partition_filter& partitions) override;
  std::vector<dead_letter> list_dead_letters(const std::string& tenant,
                                             const dead_letter_filter& filter,
                                             const std::string& after_task_id,
                                             std::size_t limit) override;
  replay_result replay(const std::string& tenant, const std::string& task_id,
                       domain::timestamp now) override;
  std::vector<state_count> count_by_state() override;
  stats_report stats(const stats_query& which) override;
  std::size_t release_leases(const std::string& node_name, domain::timestamp now) override;
  std::vector<status_event> claim_due_events(const event_claim& claim, std::size_t limit) override;
  void settle_events(const std::vector<event_outcome>& outcomes) override;
  std::uint64_t count_pending_events() override;
  void ping() override;

private:
  struct planned {
    std::uint64_t write_no;
    fault what;
    std::chrono::milliseconds delay;
  };

  /// Runs one write with whatever fault falls on it.
  template <class Write> auto write(const char* what, Write&& body);
  /// The fault of the next write, if any (and counts it).
  std::optional<planned> next_fault();

  std::shared_ptr<task_store> real_;
  store_faults faults_;
  mutable std::mutex mutex_;
  std::mt19937_64 rng_;
  std::uint64_t writes_ = 0;
  std::uint64_t failed_ = 0;
  std::deque<planned> scripted_;
};

} // namespace herald::persistence
