#include "persistence/sql.hpp"

#include <charconv>

#include <soci/soci.h>

namespace herald::persistence {

namespace {

// Rows per fetch. SOCI shrinks the into vectors to the rows a fetch returned, and they are grown
// back before the next: every row short of the chunk is an empty string and an indicator built
// per column and statement. Most statements return a few rows (RETURNING id, a batch's look-up),
// and at 512 that rebuilding took ~9 % of herald's user CPU under the standard load (perf); a
// large result just takes more fetches.
constexpr std::size_t fetch_chunk = 64;

/// Fetches every row of an executed statement whose intos are `values`/`nulls`.
void read_rows(soci::statement& st, std::vector<std::vector<std::string>>& values,
               std::vector<std::vector<soci::indicator>>& nulls, std::vector<sql_row>& rows) {
  const std::size_t columns = values.size();
  while (st.fetch()) {
    const std::size_t fetched = values[0].size();
    rows.reserve(rows.size() + fetched);
    for (std::size_t r = 0; r < fetched; ++r) {
      sql_row row(columns);
      for (std::size_t c = 0; c < columns; ++c)
        if (nulls[c][r] != soci::i_null)
          row[c] = std::move(values[c][r]);
      rows.push_back(std::move(row));
    }
    for (std::size_t c = 0; c < columns; ++c) {
      values[c].resize(fetch_chunk);
      nulls[c].resize(fetch_chunk);
    }
  }
}

/// A bound statement never holds more than this many distinct queries; past it the cache starts
/// again (queries are a fixed set, so this only guards against a bug).
constexpr std::size_t max_cached_statements = 256;

} // namespace

struct statement_cache::entry {
  explicit entry(soci::session& sql) : st(sql) {}
  soci::statement st;
  std::vector<std::string> params; ///< bound by reference: never resized after prepare
  std::vector<std::vector<std::string>> values;
  std::vector<std::vector<soci::indicator>> nulls;
};

statement_cache::statement_cache(soci::session& sql, bool plan_each_execution)
    : sql_(sql),
      plan_each_execution_(plan_each_execution && sql.get_backend_name() == "postgresql") {}

statement_cache::~statement_cache() = default;

void statement_cache::clear() {
  entries_.clear();
}

statement_cache::entry& statement_cache::prepared(const std::string& query, std::size_t params,
                                                  std::size_t columns) {
  auto it = entries_.find(query);
  if (it != entries_.end()) {
    if (it->second->params.size() != params || it->second->values.size() != columns)
      throw store_error("statement used with another number of parameters or columns");
    return *it->second;
  }
  if (entries_.size() >= max_cached_statements)
    entries_.clear();
  auto e = std::make_unique<entry>(sql_);
  e->params.resize(params);
  e->values.resize(columns);
  e->nulls.resize(columns);
  for (auto& param : e->params)
    e->st.exchange(soci::use(param));
  for (std::size_t i = 0; i < columns; ++i) {
    e->values[i].resize(fetch_chunk);
    e->nulls[i].resize(fetch_chunk);
    e->st.exchange(soci::into(e->values[i], e->nulls[i]));
  }
  e->st.alloc();
  e->st.prepare(query, plan_each_execution_ ? soci::details::st_one_time_query
                                            : soci::details::st_repeatable_query);
  e->st.define_and_bind();
  return *entries_.emplace(query, std::move(e)).first->second;
}

std::vector<sql_row> statement_cache::fetch(const std::string& query,
                                            std::vector<std::string> params, std::size_t columns) {
  entry& e = prepared(query, params.size(), columns);
  for (std::size_t i = 0; i < params.size(); ++i)
    e.params[i].swap(params[i]);
  std::vector<sql_row> rows;
  if (columns == 0) {
    e.st.execute(true);
    return rows;
  }
  for (std::size_t c = 0; c < columns; ++c) {
    e.values[c].resize(fetch_chunk);
    e.nulls[c].resize(fetch_chunk);
  }
  e.st.execute(false);
  read_rows(e.st, e.values, e.nulls, rows);
  return rows;
}

void statement_cache::execute(const std::string& query, std::vector<std::string> params) {
  fetch(query, std::move(params), 0);
}

std::vector<sql_row> fetch_rows(soci::session& sql, const std::string& query,
                                std::vector<std::string> params, std::size_t columns) {
  soci::statement st(sql);
  for (auto& param : params)
    st.exchange(soci::use(param));
  std::vector<std::vector<std::string>> values(columns);
  std::vector<std::vector<soci::indicator>> nulls(columns);
  for (std::size_t i = 0; i < columns; ++i) {
    values[i].resize(fetch_chunk);
    nulls[i].resize(fetch_chunk);
    st.exchange(soci::into(values[i], nulls[i]));
  }
  st.alloc();
  st.prepare(query, soci::details::st_one_time_query);
  st.define_and_bind();
  std::vector<sql_row> rows;
  if (columns == 0) {
    st.execute(true);
    return rows;
  }
  st.execute(false);
  read_rows(st, values, nulls, rows);
  return rows;
}

void execute(soci::session& sql, const std::string& query, std::vector<std::string> params) {
  fetch_rows(sql, query, std::move(params), 0);
}

std::int64_t to_int(const sql_cell& cell) {
  if (!cell)
    throw store_error("unexpected NULL in an integer column");
  std::int64_t value = 0;
  const char* begin = cell->data();
  const char* end = begin + cell->size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc{} || ptr != end)
    throw store_error("not an integer in an integer column: '" + *cell + "'");
  return value;
}

std::string short_message(std::string_view what) {
  auto cut = what.find("while executing");
  if (cut != std::string_view::npos)
    what = what.substr(0, cut);
  std::string out;
  for (char c : what)
    out.push_back(c == '\n' ? ' ' : c);
  while (!out.empty() && (out.back() == ' ' || out.back() == '.'))
    out.pop_back();
  return out;
}

transaction::transaction(soci::session& sql, const dialect& dialect) : sql_(sql) {
  sql_ << std::string(dialect.begin_write());
}

transaction::~transaction() {
  if (!open_)
    return;
  try {
    sql_ << "ROLLBACK";
  } catch (...) {
    // The connection is gone or the transaction already ended; nothing is committed either way.
  }
}

void transaction::commit() {
  sql_ << "COMMIT";
  open_ = false;
}

} // namespace herald::persistence
