#pragma once

#include "domain/admission.hpp"
#include "persistence/dialect.hpp"
#include "persistence/task_store.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace soci {
class session;
}

namespace herald::persistence {

class statement_cache;

namespace store_detail {
struct receipt_moves;
struct apply_batch;
struct claim_answer;
struct claim_batch;
struct claimed_rows;

/// A state a task entered in the open transaction: its event (if the state has an enabled
/// type) goes into the outbox at that transaction's COMMIT.
struct entered_state {
  std::string task_id;
  domain::task_state state = domain::task_state::pending;
  domain::timestamp at; ///< the change's time: the event's occurred_at
};
} // namespace store_detail

/// task_store over one SOCI connection, for SQLite and PostgreSQL alike: every statement is
/// written once, with the few differing fragments taken from `dialect`. Batches are set-based:
/// a claim or apply of any size is a handful of statements in one transaction.
class sql_task_store final : public task_store {
public:
  sql_task_store(database_url url, std::unique_ptr<soci::session> sql, store_options options = {});
  ~sql_task_store() override;

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
  template <class Body> auto in_transaction(const char* what, Body&& body);
  template <class Body> auto outside_transaction(const char* what, Body&& body);
  void reconnect_if_lost();
  /// Sets this session up for store_options::plans_once.
  void configure_plans();
  void fill_histories(const std::vector<task_view*>& tasks);
  std::unordered_map<std::string, domain::message_record>
  stored_messages(const std::vector<domain::message_plan>& plans,
                  const std::unordered_set<std::string>& written_now);

  // Steps run inside an open transaction (in_transaction); their batch types are in
  // sql_store_internal.hpp, sql_claims.cpp and sql_receipts.cpp.
  // The commands of a unit of work (commit), one step each:
  std::vector<claim_result> claim_step(const std::vector<domain::message_plan>& plans,
                                       const claim_takes& takes);
  /// Notes in `done` the escalation steps it suppressed and the fallbacks its SENT changes
  /// created (applying early UNDELIVERED receipts).
  std::vector<std::string> change_step(const change_group& group, commit_outcome& done);
  /// Sets `pruned_at` (unix seconds) when it dropped the expired seals.
  std::vector<bool> seal_step(const std::vector<domain::push_seal>& seals, domain::timestamp now,
                              std::int64_t& pruned_at);
  std::vector<receipt_outcome> receipt_step(const std::vector<receipt_input>& receipts,
                                            const fallback_routes& failover, domain::timestamp now);
  /// Inserts the batch's messages and new tasks; with `policy`, decides each new task first
  /// and counts the admitted ones against their caps; with `takes`, inserts the new tasks that
  /// may go at once taken, as far as their channels have places.
  store_detail::claimed_rows run_claim(const store_detail::claim_batch& batch,
                                       domain::admission* policy = nullptr,
                                       const claim_takes* takes = nullptr);
  /// Locks the plans' capped users and reads their profiles and cap counters.
  domain::admission read_admission(const std::vector<domain::message_plan>& plans);
  /// Suppresses the escalation steps about to be marked SENDING whose message was read.
  /// Answers the channels of the steps it suppressed, one entry per task.
  std::vector<std::string> run_escalation_checks(const std::vector<state_change>& changes);
  std::vector<std::unordered_set<std::string>> run_changes(const store_detail::apply_batch& batch);
  /// Inserts the batch's attempts that no applied change (`applied_in`, by round) carries.
  void run_attempts(const store_detail::apply_batch& batch,
                    const std::vector<std::unordered_set<std::string>>& applied_in);
  std::unordered_set<std::string> run_moves(const store_detail::receipt_moves& moves,
                                            domain::timestamp at);
  std::vector<std::vector<fallback_link>> claim_fallback_chains(
      std::vector<domain::message_plan> plans, const std::vector<std::string>& failed_channels,
      const fallback_routes& routes, domain::admission* policy, domain::timestamp now, bool again);
  /// Claims the fallbacks of UNDELIVERED tasks; answers those it created to be sent, by the
  /// failed task's id.
  std::unordered_map<std::string, created_fallback>
  claim_fallbacks(const std::vector<std::string>& undelivered, const fallback_routes& failover,
                  domain::timestamp now);
  void run_inbox_marks(const std::vector<receipt_input>& receipts,
                       const std::vector<receipt_outcome>& found);
  /// Answers the fallbacks it created (of tasks an early UNDELIVERED receipt ended).
  std::vector<created_fallback> run_receipt_catch_up(const std::vector<std::string>& sent_ids,
                                                     domain::timestamp at);
  /// Notes that a task entered `state` at `at` in the open transaction; in_transaction writes
  /// the events of what was noted just before it commits. Every step that moves a task notes
  /// it, in the order the states were entered.
  void note_entered(const std::string& task_id, domain::task_state state, domain::timestamp at);
  /// Writes the outbox rows of the states noted in the open transaction (those with an enabled
  /// event type) in ONE statement, ids deterministic and ON CONFLICT DO NOTHING: a change
  /// written twice is one event. A task's events get increasing seq in the order noted.
  void write_events();
  bool writes_event(domain::task_state state) const;

  database_url url_;
  dialect dialect_;
  store_options options_;
  std::unique_ptr<soci::session> sql_;
  std::unique_ptr<statement_cache> statements_; ///< destroyed before the session
  /// The states tasks entered in the open transaction with an event to write (note_entered).
  std::vector<store_detail::entered_state> entered_;
  /// When this connection last dropped expired push seals (unix seconds; 0: never).
  std::int64_t seals_pruned_at_ = 0;
};

} // namespace herald::persistence
