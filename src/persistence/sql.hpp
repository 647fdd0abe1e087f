#pragma once

#include "persistence/dialect.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace soci {
class session;
}

namespace herald::persistence {

/// One value of a result row as text (both backends render numbers in decimal); nullopt is NULL.
using sql_cell = std::optional<std::string>;
using sql_row = std::vector<sql_cell>;

/// Runs `query` with text parameters bound in order of appearance and returns its rows, each
/// with `columns` cells. One round trip; no SOCI vector binds are used (see caf-0.17.md).
std::vector<sql_row> fetch_rows(soci::session& sql, const std::string& query,
                                std::vector<std::string> params, std::size_t columns);

/// Runs a statement that returns no rows.
void execute(soci::session& sql, const std::string& query, std::vector<std::string> params = {});

/// The statements of one session, each set up once (bindings, buffers) and executed again with
/// new parameter values: SQLite parses and plans a statement only the first time; PostgreSQL
/// plans each execution for its parameters (an unnamed statement; see the constructor). Only scalar
/// text parameters are bound (re-executing SOCI vector binds loses data on PostgreSQL). Results
/// come back in chunks of `into(vector)`.
class statement_cache {
public:
  /// `plan_each_execution`: PostgreSQL plans every execution against the tables as they are now
  /// (statements are sent unnamed); otherwise a statement is prepared once (named on
  /// PostgreSQL) and keeps its plan. SQLite always keeps its plan.
  statement_cache(soci::session& sql, bool plan_each_execution);
  statement_cache(const statement_cache&) = delete;
  statement_cache& operator=(const statement_cache&) = delete;
  ~statement_cache();

  /// As fetch_rows, with the statement prepared on first use.
  std::vector<sql_row> fetch(const std::string& query, std::vector<std::string> params,
                             std::size_t columns);

  /// As execute, with the statement prepared on first use.
  void execute(const std::string& query, std::vector<std::string> params = {});

  /// Forgets every statement: after an error (a statement may be left half-way) and before the
  /// session reconnects (the statements belong to the old connection).
  void clear();

private:
  struct entry;
  entry& prepared(const std::string& query, std::size_t params, std::size_t columns);

  soci::session& sql_;
  bool plan_each_execution_;
  std::unordered_map<std::string, std::unique_ptr<entry>> entries_;
};

/// The cell as an integer; throws store_error if NULL or not a number.
std::int64_t to_int(const sql_cell& cell);

/// A SOCI error message without the statement text and bound values SOCI appends (they can be
/// megabytes of JSON holding recipients).
std::string short_message(std::string_view what);

/// A write transaction that rolls back unless committed; rollback errors are swallowed (the
/// connection may be gone, which ends the transaction anyway).
class transaction {
public:
  transaction(soci::session& sql, const dialect& dialect);
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;
  ~transaction();

  void commit();

private:
  soci::session& sql_;
  bool open_ = true;
};

} // namespace herald::persistence
