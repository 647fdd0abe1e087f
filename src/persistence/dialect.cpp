#include "persistence/dialect.hpp"

#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

namespace herald::persistence {

std::string_view dialect::name() const {
  return backend_ == database_url::kind::sqlite ? "sqlite" : "postgresql";
}

std::string_view dialect::begin_write() const {
  return backend_ == database_url::kind::sqlite ? "BEGIN IMMEDIATE" : "BEGIN";
}

std::string_view dialect::migration_lock() const {
  // Arbitrary constant shared by every herald process: "herald" in ASCII.
  return backend_ == database_url::kind::sqlite
             ? ""
             : "SELECT pg_advisory_xact_lock(104101114097108100)";
}

std::string_view dialect::schema_table_exists() const {
  return backend_ == database_url::kind::sqlite
             ? "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
               "'schema_migrations'"
             : "SELECT CASE WHEN to_regclass('schema_migrations') IS NULL THEN 0 ELSE 1 END";
}

std::string dialect::json_rows(std::string_view parameter,
                               std::initializer_list<json_column> columns,
                               std::string_view alias) const {
  std::string out;
  if (backend_ == database_url::kind::postgresql) {
    out.append("json_to_recordset(CAST(:").append(parameter).append(" AS json)) AS ");
    out.append(alias).append("(");
    bool first = true;
    for (const auto& column : columns) {
      out.append(first ? "" : ", ").append(column.name);
      out.append(column.kind == json_column::type::text ? " text" : " bigint");
      first = false;
    }
    out.append(")");
  } else {
    out.append("(SELECT ");
    bool first = true;
    for (const auto& column : columns) {
      out.append(first ? "" : ", ").append("json_extract(value, '$.").append(column.name);
      out.append("') AS ").append(column.name);
      first = false;
    }
    out.append(" FROM json_each(:").append(parameter).append(")) AS ").append(alias);
  }
  return out;
}

sql_failure dialect::classify(const soci::soci_error& error) const {
  if (const auto* pg = dynamic_cast<const soci::postgresql_soci_error*>(&error)) {
    const std::string state = pg->sqlstate();
    if (state == "23505")
      return sql_failure::unique_violation;
    if (state == "40001" || state == "40P01")
      return sql_failure::transient;
    return sql_failure::other;
  }
  if (const auto* lite = dynamic_cast<const soci::sqlite3_soci_error*>(&error)) {
    const int code = lite->result() & 0xff; // primary code of an extended result code
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
      return sql_failure::transient;
    if (code == SQLITE_CONSTRAINT &&
        std::string_view(error.what()).find("UNIQUE constraint failed") != std::string_view::npos)
      return sql_failure::unique_violation;
  }
  return sql_failure::other;
}

} // namespace herald::persistence
