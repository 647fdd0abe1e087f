#include "persistence/installation.hpp"

#include "domain/api_key.hpp"
#include "persistence/connection.hpp"
#include "persistence/sql.hpp"

#include <chrono>
#include <string>

#include <openssl/rand.h>
#include <soci/soci.h>

namespace herald::persistence {

namespace {

constexpr std::size_t id_secret_bytes = 32;

} // namespace

std::string secure_random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(raw.size())) != 1)
    throw store_error("the system's random generator failed");
  return domain::to_hex(raw);
}

domain::id_secret installation_secret(soci::session& sql) {
  try {
    auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    execute(sql,
            "INSERT INTO installation (id, id_secret, created_at) "
            "VALUES (1, :secret, CAST(:now AS BIGINT)) ON CONFLICT (id) DO NOTHING",
            {secure_random_hex(id_secret_bytes), std::to_string(now)});
    auto rows = fetch_rows(sql, "SELECT id_secret FROM installation WHERE id = 1", {}, 1);
    if (rows.empty() || !rows[0][0] || rows[0][0]->empty())
      throw store_error("the installation secret is missing after creating it");
    return domain::id_secret{*rows[0][0]};
  } catch (const soci::soci_error& e) {
    throw store_error("cannot read the installation secret: " + short_message(e.what()));
  }
}

domain::id_secret installation_secret(const database_url& url) {
  auto sql = connect(url);
  return installation_secret(*sql);
}

} // namespace herald::persistence
