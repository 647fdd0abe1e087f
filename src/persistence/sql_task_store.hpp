#pragma once

#include "persistence/dialect.hpp"
#include "persistence/task_store.hpp"

#include <memory>

namespace soci {
class session;
}

namespace herald::persistence {

/// task_store over one SOCI connection, for SQLite and PostgreSQL alike: every statement is
/// written once, with the few differing fragments taken from `dialect`. Batches are set-based:
/// a claim or apply of any size is a handful of statements in one transaction.
class sql_task_store final : public task_store {
public:
  sql_task_store(database_url url, std::unique_ptr<soci::session> sql);
  ~sql_task_store() override;

  std::vector<claim_result> claim(const std::vector<domain::message_plan>& plans) override;
  std::vector<std::string> apply(const std::vector<state_change>& changes,
                                 const std::vector<attempt_record>& attempts) override;
  std::optional<message_view> find_message(const std::string& message_id) override;
  std::vector<domain::delivery> load_unfinished(const std::string& after_task_id,
                                                std::size_t limit) override;
  std::vector<state_count> count_by_state() override;
  void ping() override;

private:
  template <class Body> auto in_transaction(const char* what, Body&& body);
  template <class Body> auto outside_transaction(const char* what, Body&& body);
  void reconnect_if_lost();

  database_url url_;
  dialect dialect_;
  std::unique_ptr<soci::session> sql_;
};

} // namespace herald::persistence
