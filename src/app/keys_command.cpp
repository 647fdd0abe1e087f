#include "app/keys_command.hpp"

#include "domain/api_key.hpp"
#include "persistence/api_key_store.hpp"
#include "persistence/installation.hpp"

#include <algorithm>
#include <iostream>

namespace herald::app {

namespace {

constexpr std::size_t max_tenant_length = 128;

bool is_tenant_name(const std::string& tenant) {
  return !tenant.empty() && tenant.size() <= max_tenant_length &&
         std::all_of(tenant.begin(), tenant.end(), [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '-' || c == ':';
         });
}

int create_key(persistence::api_key_store& keys, const command_line& cmd, domain::timestamp now) {
  if (!is_tenant_name(*cmd.tenant)) {
    std::cerr << "herald: --tenant must be 1-128 characters of A-Z, a-z, 0-9, _ . : -\n";
    return 2;
  }
  auto scopes = domain::parse_scopes(*cmd.scopes);
  if (!scopes) {
    std::cerr << "herald: --scopes must list submit, read, admin and/or ops, comma-separated, "
                 "each once\n";
    return 2;
  }
  auto created = keys.create(*cmd.tenant, *scopes, now);
  std::cout << created.key_text << "\n";
  std::cerr << "created key " << created.record.id << " for tenant " << created.record.tenant
            << " with scopes " << domain::to_string(created.record.scopes)
            << "; the key is shown only this once\n";
  return 0;
}

int list_keys(persistence::api_key_store& keys) {
  std::cout << "id\ttenant\tscopes\tcreated_at\trevoked_at\n";
  for (const auto& key : keys.list())
    std::cout << key.id << "\t" << key.tenant << "\t" << domain::to_string(key.scopes) << "\t"
              << domain::format_rfc3339(key.created_at) << "\t"
              << (key.revoked_at ? domain::format_rfc3339(*key.revoked_at) : "-") << "\n";
  return 0;
}

int revoke_key(persistence::api_key_store& keys, const std::string& id, domain::timestamp now) {
  if (!keys.revoke(id, now)) {
    std::cerr << "herald: no unrevoked key with id '" << id << "'\n";
    return 1;
  }
  std::cout << "revoked " << id << "\n";
  return 0;
}

} // namespace

int run_keys_command(const command_line& cmd, const config& cfg) {
  try {
    auto url = database_url_of(cfg);
    persistence::migrate(url);
    persistence::installation_secret(url);
    persistence::api_key_store keys{url};
    auto now = domain::system_clock{}.now();
    switch (cmd.keys) {
    case command_line::keys_action::create:
      return create_key(keys, cmd, now);
    case command_line::keys_action::list:
      return list_keys(keys);
    case command_line::keys_action::revoke:
      return revoke_key(keys, cmd.key_id, now);
    }
  } catch (const std::invalid_argument& e) { // the database URL
    std::cerr << "herald: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "herald: " << e.what() << "\n";
  }
  return 1;
}

} // namespace herald::app
