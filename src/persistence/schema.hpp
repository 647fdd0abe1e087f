#pragma once

#include "persistence/dialect.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace soci {
class session;
}

namespace herald::persistence {

/// Splits a migration file into statements: a statement ends with a line ending in ";";
/// whole-line "--" comments are dropped.
std::vector<std::string> split_statements(const std::string& sql);

/// The newest migration version herald carries for the dialect.
int latest_schema_version(std::string_view dialect_name);

/// The version recorded in schema_migrations (0 for an empty database).
int schema_version(soci::session& sql, const dialect& dialect);

/// Applies each pending migration in its own transaction, recording its version; safe to run
/// from several processes at once. Returns the version now in force. Throws store_error.
int apply_migrations(soci::session& sql, const dialect& dialect);

} // namespace herald::persistence
