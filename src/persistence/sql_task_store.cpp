// The store's connection (opening, reconnecting, pings, migrations) and its unit of work.
#include "persistence/sql_store_internal.hpp"

namespace herald::persistence {

using namespace store_detail;

sql_task_store::sql_task_store(database_url url, std::unique_ptr<soci::session> sql,
                               store_options options)
    : url_(std::move(url)), dialect_(url_.backend), options_(std::move(options)),
      sql_(std::move(sql)),
      statements_(std::make_unique<statement_cache>(*sql_, !options_.plans_once)) {
  configure_plans();
}

void sql_task_store::configure_plans() {
  if (!options_.plans_once || url_.backend != database_url::kind::postgresql)
    return;
  *sql_ << "SET plan_cache_mode = force_generic_plan";
  *sql_ << "SET enable_hashjoin = off";
  *sql_ << "SET enable_mergejoin = off";
}

sql_task_store::~sql_task_store() = default;

void sql_task_store::reconnect_if_lost() {
  if (sql_->is_connected())
    return;
  statements_->clear(); // prepared on the lost connection
  sql_->reconnect();
  configure(*sql_, url_);
  configure_plans();
}

commit_outcome sql_task_store::commit(const unit_of_work& work) {
  if (work.empty())
    return {};
  std::int64_t seals_pruned_at = 0; // the last try's: a rolled-back prune pruned nothing
  auto outcome = in_transaction("commit", [&] {
    commit_outcome done;
    seals_pruned_at = 0;
    if (!work.claims.empty())
      done.claims = claim_step(work.claims, work.takes);
    for (const auto& group : work.changes)
      done.applied.push_back(change_step(group, done));
    if (!work.seals.empty())
      done.seals_admitted = seal_step(work.seals, work.now, seals_pruned_at);
    if (!work.receipts.empty())
      done.receipts = receipt_step(work.receipts, work.receipt_fallbacks, work.now);
    return done;
  });
  if (seals_pruned_at != 0)
    seals_pruned_at_ = seals_pruned_at;
  return outcome;
}

void sql_task_store::ping() {
  outside_transaction("ping", [&] {
    auto rows = statements_->fetch("SELECT 1", {}, 1);
    if (rows.size() != 1 || to_int(rows[0][0]) != 1)
      throw store_error("ping failed: unexpected answer");
    return 0;
  });
}

std::unique_ptr<task_store> open_task_store(const database_url& url, bool migrate,
                                            store_options options) {
  auto sql = connect(url);
  const dialect dialect(url.backend);
  const int latest = latest_schema_version(dialect.name());
  const int version = migrate ? apply_migrations(*sql, dialect) : schema_version(*sql, dialect);
  if (version < latest)
    throw store_error("database schema is at version " + std::to_string(version) +
                      ", herald needs " + std::to_string(latest) + ": run herald migrate");
  if (version > latest)
    throw store_error("database schema is at version " + std::to_string(version) +
                      ", newer than this herald knows (" + std::to_string(latest) +
                      "): upgrade herald");
  return std::make_unique<sql_task_store>(url, std::move(sql), std::move(options));
}

int migrate(const database_url& url) {
  auto sql = connect(url);
  return apply_migrations(*sql, dialect(url.backend));
}

} // namespace herald::persistence
