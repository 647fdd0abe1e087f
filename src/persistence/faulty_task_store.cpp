#include "persistence/faulty_task_store.hpp"

#include <algorithm>
#include <thread>

namespace herald::persistence {

std::string store_faults::validate() const {
  if (!(write_failure_rate >= 0 && write_failure_rate <= 1))
    return "store.faults.write_failure_rate must be within [0, 1]";
  if (!(lost_answer_share >= 0 && lost_answer_share <= 1))
    return "store.faults.lost_answer_share must be within [0, 1]";
  return "";
}

faulty_task_store::faulty_task_store(std::shared_ptr<task_store> real, store_faults faults)
    : real_(std::move(real)), faults_(faults), rng_(faults.seed) {}

void faulty_task_store::script(std::size_t nth, fault what, std::chrono::milliseconds delay) {
  std::lock_guard lock{mutex_};
  scripted_.push_back({writes_ + nth, what, delay});
}

std::uint64_t faulty_task_store::writes() const {
  std::lock_guard lock{mutex_};
  return writes_;
}

std::uint64_t faulty_task_store::failed_writes() const {
  std::lock_guard lock{mutex_};
  return failed_;
}

std::optional<faulty_task_store::planned> faulty_task_store::next_fault() {
  std::lock_guard lock{mutex_};
  const auto write_no = ++writes_;
  std::optional<planned> chosen;
  auto due = std::find_if(scripted_.begin(), scripted_.end(),
                          [&](const planned& p) { return p.write_no == write_no; });
  if (due != scripted_.end()) {
    chosen = *due;
    scripted_.erase(due);
  } else if (faults_.write_failure_rate > 0) {
    std::uniform_real_distribution<double> unit{0.0, 1.0};
    if (unit(rng_) < faults_.write_failure_rate)
      chosen = planned{
          write_no, unit(rng_) < faults_.lost_answer_share ? fault::lose_answer : fault::fail, {}};
  }
  if (chosen && chosen->what != fault::delay)
    ++failed_;
  return chosen;
}

template <class Write> auto faulty_task_store::write(const char* what, Write&& body) {
  const auto injected = next_fault();
  const std::string message = std::string{what} + " failed: injected fault";
  if (!injected)
    return body();
  switch (injected->what) {
  case fault::fail:
    throw store_error(message + " (nothing committed)");
  case fault::lose_answer:
    body();
    throw store_error(message + " (committed, answer lost)");
  case fault::delay:
    std::this_thread::sleep_for(injected->delay);
    break;
  }
  return body();
}

commit_outcome faulty_task_store::commit(const unit_of_work& work) {
  return write("commit", [&] { return real_->commit(work); });
}

failover_result faulty_task_store::fail_over(const state_change& change,
                                             const std::vector<attempt_record>& attempts,
                                             const domain::delivery& failed,
                                             const fallback_routes& routes) {
  return write("fail_over", [&] { return real_->fail_over(change, attempts, failed, routes); });
}

std::vector<std::string>
faulty_task_store::deliver_to_inbox(const std::vector<std::string>& task_ids,
                                    domain::timestamp now) {
  return write("deliver_to_inbox", [&] { return real_->deliver_to_inbox(task_ids, now); });
}

inbox_page faulty_task_store::list_inbox(const inbox_query& which) {
  return real_->list_inbox(which);
}

std::optional<domain::user_profile> faulty_task_store::find_user(const std::string& tenant,
                                                                 const std::string& user_id) {
  return real_->find_user(tenant, user_id);
}

domain::user_profile faulty_task_store::update_user(const std::string& tenant,
                                                    const std::string& user_id,
                                                    const domain::user_patch& patch,
                                                    domain::timestamp now) {
  return write("update_user", [&] { return real_->update_user(tenant, user_id, patch, now); });
}

std::optional<inbox_item> faulty_task_store::find_inbox_item(const std::string& tenant,
                                                             const std::string& task_id) {
  return real_->find_inbox_item(tenant, task_id);
}

std::optional<message_view> faulty_task_store::find_message(const std::string& tenant,
                                                            const std::string& message_id) {
  return real_->find_message(tenant, message_id);
}

std::vector<domain::delivery> faulty_task_store::load_unfinished(const std::string& after_task_id,
                                                                 std::size_t limit,
                                                                 domain::timestamp now,
                                                                 const unfinished_filter& which) {
  return real_->load_unfinished(after_task_id, limit, now, which);
}

std::vector<domain::delivery>
faulty_task_store::load_deliveries(const std::vector<std::string>& task_ids,
                                   domain::timestamp now) {
  return real_->load_deliveries(task_ids, now);
}

std::vector<awaiting_receipt>
faulty_task_store::load_awaiting_receipt(const std::string& channel, domain::timestamp sent_before,
                                         const awaiting_cursor& after, std::size_t limit,
                                         const partition_filter& partitions) {
  return real_->load_awaiting_receipt(channel, sent_before, after, limit, partitions);
}

std::vector<dead_letter> faulty_task_store::list_dead_letters(const std::string& tenant,
                                                              const dead_letter_filter& filter,
                                                              const std::string& after_task_id,
                                                              std::size_t limit) {
  return real_->list_dead_letters(tenant, filter, after_task_id, limit);
}

replay_result faulty_task_store::replay(const std::string& tenant, const std::string& task_id,
                                        domain::timestamp now) {
  return write("replay", [&] { return real_->replay(tenant, task_id, now); });
}

std::vector<state_count> faulty_task_store::count_by_state() {
  return real_->count_by_state();
}

stats_report faulty_task_store::stats(const stats_query& which) {
  return real_->stats(which);
}

std::size_t faulty_task_store::release_leases(const std::string& node_name, domain::timestamp now) {
  return write("release_leases", [&] { return real_->release_leases(node_name, now); });
}

std::vector<status_event> faulty_task_store::claim_due_events(const event_claim& claim,
                                                              std::size_t limit) {
  return real_->claim_due_events(claim, limit);
}

void faulty_task_store::settle_events(const std::vector<event_outcome>& outcomes) {
  write("settle_events", [&] {
    real_->settle_events(outcomes);
    return 0;
  });
}

std::uint64_t faulty_task_store::count_pending_events() {
  return real_->count_pending_events();
}

void faulty_task_store::ping() {
  real_->ping();
}

} // namespace herald::persistence
