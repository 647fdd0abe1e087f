#include "persistence/template_store.hpp"

#include "persistence/connection.hpp"
#include "persistence/sql.hpp"
#include "persistence/template_json.hpp"

#include <boost/json/serialize.hpp>
#include <soci/soci.h>

namespace herald::persistence {

namespace {

constexpr int save_attempts = 3;

std::string micros_text(domain::timestamp at) {
  return std::to_string(domain::to_unix_micros(at));
}

const std::string template_columns = "tenant, code, version, definition_json, created_at";

domain::stored_template template_of(const sql_row& row) {
  domain::stored_template stored;
  stored.tenant = row[0].value_or("");
  stored.code = row[1].value_or("");
  stored.version = static_cast<std::uint32_t>(to_int(row[2]));
  stored.definition = stored_definition(row[3].value_or(""));
  stored.created_at = domain::from_unix_micros(to_int(row[4]));
  return stored;
}

} // namespace

template_store::template_store(const database_url& url) : url_(url), sql_(connect(url)) {}

template_store::~template_store() = default;

template <class Body> auto template_store::guarded(const char* what, Body&& body) {
  try {
    if (lost_) {
      sql_->reconnect();
      configure(*sql_, url_);
      lost_ = false;
    }
    return body();
  } catch (const soci::soci_error& e) {
    lost_ = true;
    throw store_error(std::string(what) + " failed: " + short_message(e.what()));
  }
}

domain::stored_template template_store::save(const std::string& tenant, const std::string& code,
                                             const domain::template_definition& definition,
                                             domain::timestamp now) {
  const auto definition_json = boost::json::serialize(definition_to_json(definition));
  // The next number is read and taken in one statement; two nodes saving the same template
  // at once collide on the primary key, and the loser takes the number after.
  const std::string insert =
      "INSERT INTO templates (" + template_columns +
      ") SELECT :tenant, :code, COALESCE(MAX(version), 0) + 1, :definition, CAST(:now AS BIGINT) "
      "FROM templates WHERE tenant = :tenant2 AND code = :code2 RETURNING version";
  for (int attempt = 1;; ++attempt) {
    try {
      auto rows = guarded("saving a template", [&] {
        return fetch_rows(*sql_, insert,
                          {tenant, code, definition_json, micros_text(now), tenant, code}, 1);
      });
      if (rows.empty())
        throw store_error("saving a template stored nothing");
      return domain::stored_template{tenant, code, static_cast<std::uint32_t>(to_int(rows[0][0])),
                                     definition, now};
    } catch (const store_error&) {
      if (attempt == save_attempts)
        throw;
    }
  }
}

std::optional<domain::stored_template> template_store::find(const std::string& tenant,
                                                            const std::string& code,
                                                            std::optional<std::uint32_t> version) {
  return guarded("reading a template", [&]() -> std::optional<domain::stored_template> {
    std::string query = "SELECT " + template_columns +
                        " FROM templates WHERE tenant = :tenant AND code = :code AND "
                        "deleted_at IS NULL";
    std::vector<std::string> params{tenant, code};
    if (version) {
      query += " AND version = CAST(:version AS INTEGER)";
      params.push_back(std::to_string(*version));
    }
    query += " ORDER BY version DESC LIMIT 1";
    auto rows = fetch_rows(*sql_, query, params, 5);
    if (rows.empty())
      return std::nullopt;
    return template_of(rows[0]);
  });
}

bool template_store::remove(const std::string& tenant, const std::string& code,
                            domain::timestamp now) {
  return guarded("deleting a template", [&] {
    return !fetch_rows(*sql_,
                       "UPDATE templates SET deleted_at = CAST(:now AS BIGINT) WHERE tenant = "
                       ":tenant AND code = :code AND deleted_at IS NULL RETURNING version",
                       {micros_text(now), tenant, code}, 1)
                .empty();
  });
}

std::vector<domain::stored_template> template_store::load_latest() {
  return guarded("loading templates", [&] {
    std::vector<domain::stored_template> latest;
    for (const auto& row : fetch_rows(
             *sql_,
             "SELECT t.tenant, t.code, t.version, t.definition_json, t.created_at FROM templates "
             "t WHERE t.deleted_at IS NULL AND t.version = (SELECT MAX(u.version) FROM templates "
             "u WHERE u.tenant = t.tenant AND u.code = t.code AND u.deleted_at IS NULL)",
             {}, 5))
      latest.push_back(template_of(row));
    return latest;
  });
}

std::string template_store::revision() {
  // Rows are only ever added (a save) or marked deleted (a deletion), never removed: every
  // change moves one of the two counts, whatever the nodes' clocks say.
  return guarded("reading the templates revision", [&] {
    auto rows = fetch_rows(*sql_, "SELECT COUNT(*), COUNT(deleted_at) FROM templates", {}, 2);
    if (rows.empty())
      return std::string();
    return std::to_string(to_int(rows[0][0])) + "/" + std::to_string(to_int(rows[0][1]));
  });
}

} // namespace herald::persistence
