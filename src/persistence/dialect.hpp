#pragma once

#include "persistence/task_store.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

class dialect;

/// The rows of one batch, written straight into the JSON text that dialect::json_rows expands:
/// an array of objects keyed by column name for PostgreSQL (json_to_recordset reads it in one
/// pass), an array of arrays for SQLite (json_extract by index is about twice as fast there as
/// by key). Values are added in column order, every row complete.
class json_batch {
public:
  json_batch(const dialect& dialect, const std::vector<json_column>& columns);

  void add_row();
  json_batch& text(std::string_view value);
  json_batch& number(std::int64_t value);
  json_batch& null();
  json_batch& time(const std::optional<std::int64_t>& micros);

  std::size_t rows() const { return rows_; }
  bool empty() const { return rows_ == 0; }

  /// The JSON text ("[]" when empty).
  std::string finish() const;

private:
  void next_value();

  const std::vector<json_column>& columns_;
  bool objects_;
  std::string json_;
  std::size_t rows_ = 0;
  std::size_t column_ = 0;
};

/// Appends `value` as a JSON string (quoted, escaped; bytes above 0x7f are copied as they are).
void append_json_string(std::string& out, std::string_view value);

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

  /// Appended to a SELECT reading the `tasks t` rows a transaction is about to change, so a
  /// concurrent writer waits for it (PostgreSQL); empty where writers are serialised (SQLite).
  std::string_view lock_tasks() const;

  /// Appended to a SELECT of one row a transaction will change (PostgreSQL: FOR UPDATE);
  /// empty where writers are serialised (SQLite).
  std::string_view lock_row() const;

  /// Appended to a SELECT of the rows a claim takes from table alias `alias` (PostgreSQL: FOR
  /// UPDATE OF alias SKIP LOCKED): rows another claim is taking right now are passed over, not
  /// waited for; empty where writers are serialised (SQLite).
  std::string skip_locked(std::string_view alias) const;

  /// A statement that takes, in ascending order, a transaction-scoped lock on each 32-bit key
  /// of the JSON rows bound to `:keys` (column "k"), so transactions locking overlapping sets
  /// cannot deadlock; empty where writers are serialised (SQLite).
  std::string lock_keys() const;

  /// A query answering one row, one column: 1 if table `schema_migrations` exists, else 0.
  std::string_view schema_table_exists() const;

  /// A table expression, usable after FROM or JOIN, that expands the JSON array of objects bound
  /// to `:<parameter>` into rows named `alias` with the given columns (missing keys are NULL).
  /// The rows are written with json_batch over the same columns.
  std::string json_rows(std::string_view parameter, const std::vector<json_column>& columns,
                        std::string_view alias = "r") const;

  /// Whether json_batch writes rows as objects (else as arrays).
  bool json_rows_as_objects() const { return backend_ == database_url::kind::postgresql; }

  /// What a failed statement means.
  sql_failure classify(const soci::soci_error& error) const;

private:
  database_url::kind backend_;
};

} // namespace herald::persistence
