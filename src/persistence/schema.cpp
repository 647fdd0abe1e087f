#include "persistence/schema.hpp"

#include "persistence/migrations.hpp"
#include "persistence/sql.hpp"

#include <algorithm>
#include <chrono>
#include <sstream>

#include <soci/soci.h>

namespace herald::persistence {

namespace {

std::string_view trim(std::string_view text) {
  const auto space = " \t\r\n";
  auto begin = text.find_first_not_of(space);
  if (begin == std::string_view::npos)
    return {};
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

/// Created by the migrator itself (it must exist to record migration 1); checked first rather
/// than "IF NOT EXISTS", which makes PostgreSQL print a NOTICE on every start.
const std::string create_schema_table =
    "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
    "applied_at BIGINT NOT NULL)";

std::int64_t now_micros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

std::vector<std::string> split_statements(const std::string& sql) {
  std::vector<std::string> statements;
  std::string current;
  std::istringstream in(sql);
  std::string line;
  while (std::getline(in, line)) {
    std::string_view text = trim(line);
    if (text.empty() || text.substr(0, 2) == "--")
      continue;
    bool ends = text.back() == ';';
    if (ends)
      text.remove_suffix(1);
    if (!current.empty())
      current.push_back('\n');
    current.append(text);
    if (ends) {
      if (!trim(current).empty())
        statements.push_back(current);
      current.clear();
    }
  }
  if (!trim(current).empty())
    statements.push_back(current);
  return statements;
}

int latest_schema_version(std::string_view dialect_name) {
  int latest = 0;
  for (const auto& m : all_migrations())
    if (m.dialect == dialect_name)
      latest = std::max(latest, m.version);
  return latest;
}

int schema_version(soci::session& sql, const dialect& dialect) {
  try {
    auto exists = fetch_rows(sql, std::string(dialect.schema_table_exists()), {}, 1);
    if (exists.empty() || to_int(exists[0][0]) == 0)
      return 0;
    auto rows = fetch_rows(sql, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations", {}, 1);
    return static_cast<int>(to_int(rows.at(0)[0]));
  } catch (const soci::soci_error& e) {
    throw store_error("cannot read the schema version: " + short_message(e.what()));
  }
}

int apply_migrations(soci::session& sql, const dialect& dialect) {
  std::vector<const migration*> pending;
  for (const auto& m : all_migrations())
    if (m.dialect == dialect.name())
      pending.push_back(&m);
  std::sort(pending.begin(), pending.end(),
            [](const migration* a, const migration* b) { return a->version < b->version; });

  for (;;) {
    const migration* next = nullptr;
    try {
      transaction tx(sql, dialect);
      if (!dialect.migration_lock().empty())
        execute(sql, std::string(dialect.migration_lock()));
      auto exists = fetch_rows(sql, std::string(dialect.schema_table_exists()), {}, 1);
      if (exists.empty() || to_int(exists[0][0]) == 0)
        execute(sql, create_schema_table);
      auto rows = fetch_rows(sql, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations", {}, 1);
      const int current = static_cast<int>(to_int(rows.at(0)[0]));
      auto it = std::find_if(pending.begin(), pending.end(),
                             [&](const migration* m) { return m->version > current; });
      if (it == pending.end()) {
        tx.commit();
        return current;
      }
      next = *it;
      for (const auto& statement : split_statements(next->sql))
        execute(sql, statement);
      execute(sql,
              "INSERT INTO schema_migrations (version, name, applied_at) VALUES (" +
                  std::to_string(next->version) + ", :name, " + std::to_string(now_micros()) + ")",
              {next->name});
      tx.commit();
    } catch (const soci::soci_error& e) {
      throw store_error(next ? "migration " + std::to_string(next->version) + " (" + next->name +
                                   ") failed: " + short_message(e.what())
                             : "cannot migrate: " + short_message(e.what()));
    }
  }
}

} // namespace herald::persistence
