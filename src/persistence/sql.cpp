#include "persistence/sql.hpp"

#include <charconv>

#include <soci/soci.h>

namespace herald::persistence {

namespace {

constexpr std::size_t fetch_chunk = 512;

} // namespace

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
  while (st.fetch()) {
    const std::size_t fetched = values[0].size();
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
