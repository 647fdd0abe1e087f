#pragma once

#include "domain/template_definition.hpp"
#include "persistence/task_store.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace soci {
class session;
}

namespace herald::persistence {

/// The templates table (migration 0010) over a connection of its own: stored templates,
/// tenant-scoped and versioned. Every call is one statement and blocks; throws store_error when
/// the database fails (the next call reconnects).
class template_store {
public:
  /// Connects; the schema must be migrated.
  explicit template_store(const database_url& url);
  ~template_store();
  template_store(const template_store&) = delete;
  template_store& operator=(const template_store&) = delete;

  /// Saves `definition` (already checked) as the template's next version — one more than any
  /// version it ever had, deleted ones included — and answers it as stored.
  domain::stored_template save(const std::string& tenant, const std::string& code,
                               const domain::template_definition& definition,
                               domain::timestamp now);

  /// The latest live version of the template, or the live `version` when given; nullopt when
  /// there is none (never saved, deleted, or no such version).
  std::optional<domain::stored_template> find(const std::string& tenant, const std::string& code,
                                              std::optional<std::uint32_t> version = {});

  /// Marks every version of the template deleted at `now`; false when none was live.
  bool remove(const std::string& tenant, const std::string& code, domain::timestamp now);

  /// The latest live version of every template of every tenant: what a node's catalog holds.
  std::vector<domain::stored_template> load_latest();

  /// A cheap fingerprint of the table (its rows, its deleted rows): it changes with every save
  /// and deletion, so a catalog is reloaded only when something changed.
  std::string revision();

private:
  template <class Body> auto guarded(const char* what, Body&& body);

  database_url url_;
  std::unique_ptr<soci::session> sql_;
  bool lost_ = false; ///< a statement failed: reconnect before the next one
};

} // namespace herald::persistence
