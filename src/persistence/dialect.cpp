#include "persistence/dialect.hpp"

#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

namespace herald::persistence {

std::string_view dialect::name() const {
  return backend_ == database_url::kind::sqlite ? "sqlite" : "postgresql";
}

std::string_view dialect::begin_write() const {
  // READ COMMITTED whatever the server's default: a claim reads frequency counters after
  // waiting for a user's lock, and must see what the transaction it waited for committed.
  return backend_ == database_url::kind::sqlite ? "BEGIN IMMEDIATE"
                                                : "BEGIN ISOLATION LEVEL READ COMMITTED";
}

std::string_view dialect::migration_lock() const {
  // Arbitrary constant shared by every herald process: "herald" in ASCII.
  return backend_ == database_url::kind::sqlite
             ? ""
             : "SELECT pg_advisory_xact_lock(104101114097108100)";
}

std::string_view dialect::lock_tasks() const {
  return backend_ == database_url::kind::sqlite ? "" : " FOR UPDATE OF t";
}

std::string_view dialect::lock_row() const {
  return backend_ == database_url::kind::sqlite ? "" : " FOR UPDATE";
}

std::string dialect::skip_locked(std::string_view alias) const {
  if (backend_ == database_url::kind::sqlite)
    return "";
  return " FOR UPDATE OF " + std::string(alias) + " SKIP LOCKED";
}

std::string dialect::lock_keys() const {
  if (backend_ == database_url::kind::sqlite)
    return "";
  // OFFSET 0 keeps the sorted subquery from being flattened: the aggregate then takes the
  // locks in key order.
  // The two-key form is a lock space of its own: a user's key never meets the single-key
  // locks of migrations and node names. 1751477356 is "herl" (herald's users).
  return "SELECT count(pg_advisory_xact_lock(1751477356, CAST(s.k AS INTEGER))) FROM (SELECT "
         "r.k FROM " +
         json_rows("keys", {{"k", json_column::type::bigint}}, "r") +
         " ORDER BY r.k OFFSET 0) AS s";
}

std::string_view dialect::schema_table_exists() const {
  return backend_ == database_url::kind::sqlite
             ? "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
               "'schema_migrations'"
             : "SELECT CASE WHEN to_regclass('schema_migrations') IS NULL THEN 0 ELSE 1 END";
}

std::string dialect::json_rows(std::string_view parameter, const std::vector<json_column>& columns,
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
    // One row is one JSON array; SQLite parses it once per row (its parse cache serves the
    // other columns).
    out.append("(SELECT ");
    for (std::size_t i = 0; i < columns.size(); ++i) {
      out.append(i == 0 ? "" : ", ").append("json_extract(value, '$[").append(std::to_string(i));
      out.append("]') AS ").append(columns[i].name);
    }
    out.append(" FROM json_each(:").append(parameter).append(")) AS ").append(alias);
  }
  return out;
}

json_batch::json_batch(const dialect& dialect, const std::vector<json_column>& columns)
    : columns_(columns), objects_(dialect.json_rows_as_objects()), json_("[") {}

void json_batch::add_row() {
  if (rows_ != 0 && column_ != columns_.size())
    throw store_error("json_batch: a row is missing values");
  if (rows_ != 0)
    json_.append(objects_ ? "}," : "],");
  json_.push_back(objects_ ? '{' : '[');
  ++rows_;
  column_ = 0;
}

void json_batch::next_value() {
  if (column_ >= columns_.size())
    throw store_error("json_batch: more values than columns");
  if (column_ != 0)
    json_.push_back(',');
  if (objects_) {
    json_.push_back('"');
    json_.append(columns_[column_].name);
    json_.append("\":");
  }
  ++column_;
}

json_batch& json_batch::text(std::string_view value) {
  next_value();
  append_json_string(json_, value);
  return *this;
}

json_batch& json_batch::number(std::int64_t value) {
  next_value();
  json_.append(std::to_string(value));
  return *this;
}

json_batch& json_batch::null() {
  next_value();
  json_.append("null");
  return *this;
}

json_batch& json_batch::time(const std::optional<std::int64_t>& micros) {
  return micros ? number(*micros) : null();
}

std::string json_batch::finish() const {
  if (rows_ == 0)
    return "[]";
  if (column_ != columns_.size())
    throw store_error("json_batch: a row is missing values");
  return json_ + (objects_ ? "}]" : "]]");
}

void append_json_string(std::string& out, std::string_view value) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t run = 0; // start of the bytes not yet copied
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto byte = static_cast<unsigned char>(value[i]);
    if (byte >= 0x20 && byte != '"' && byte != '\\')
      continue;
    out.append(value.data() + run, i - run);
    run = i + 1;
    switch (byte) {
    case '"':
      out.append("\\\"");
      break;
    case '\\':
      out.append("\\\\");
      break;
    case '\n':
      out.append("\\n");
      break;
    case '\r':
      out.append("\\r");
      break;
    case '\t':
      out.append("\\t");
      break;
    default:
      out.append("\\u00");
      out.push_back(hex[byte >> 4]);
      out.push_back(hex[byte & 0xf]);
    }
  }
  out.append(value.data() + run, value.size() - run);
  out.push_back('"');
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
