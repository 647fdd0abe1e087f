#pragma once

#include "persistence/task_store.hpp"

#include <initializer_list>
#include <string>
#include <string_view>

namespace soci {
class soci_error;
}

namespace herald::persistence {

/// How a failed statement should be treated.
enum class sql_failure {
  unique_violation, ///< SQLSTATE 23505 / SQLITE_CONSTRAINT on a unique index: re-read, it exists
  transient,        ///< deadlock, serialization failure, busy database: the transaction may rerun
  other,            ///< anything else: give up
};

/// One column of a JSON batch expanded into rows (see dialect::json_rows).
struct json_column {
  enum class type { text, bigint };
  std::string_view name;
  type kind = type::text;
};

/// Every SQL fragment that differs between SQLite and PostgreSQL; the repositories write
/// everything else once. Batches travel as ONE JSON text parameter expanded in SQL, which avoids
/// SOCI's vector binds (data-losing on PostgreSQL in SOCI 4.0.3) and keeps one code path.
class dialect {
public:
  explicit dialect(database_url::kind backend) : backend_(backend) {}

  database_url::kind backend() const { return backend_; }

  /// The folder name of this dialect's migrations ("sqlite" or "postgresql").
  std::string_view name() const;

  /// Starts a transaction that will write. SQLite takes the write lock up front, so a
  /// transaction never fails to upgrade from reading to writing halfway through.
  std::string_view begin_write() const;

  /// Run first in every migration transaction so concurrent migrators queue; empty if the
  /// database serialises writers anyway.
  std::string_view migration_lock() const;

  /// A query answering one row, one column: 1 if table `schema_migrations` exists, else 0.
  std::string_view schema_table_exists() const;

  /// A table expression, usable after FROM or JOIN, that expands the JSON array of objects bound
  /// to `:<parameter>` into rows named `alias` with the given columns (missing keys are NULL).
  std::string json_rows(std::string_view parameter, std::initializer_list<json_column> columns,
                        std::string_view alias = "r") const;

  /// What a failed statement means.
  sql_failure classify(const soci::soci_error& error) const;

private:
  database_url::kind backend_;
};

} // namespace herald::persistence
