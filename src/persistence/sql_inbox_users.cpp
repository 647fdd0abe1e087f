// The in-app inbox, signed-push seals and user profiles.
#include "persistence/sql_store_internal.hpp"

namespace herald::persistence {

using namespace store_detail;

namespace {

std::string strings_json(const std::vector<std::string_view>& values) {
  boost::json::array array;
  for (auto value : values)
    array.emplace_back(value);
  return boost::json::serialize(array);
}

} // namespace

// --- The in-app inbox ------------------------------------------------------------------------

namespace {

/// Columns of an inbox_item: inbox `i` (see inbox_item_of).
const std::string inbox_columns = "i.task_id, i.tenant, i.user_id, i.channel, i.title, i.body, "
                                  "i.created_at, i.read_at, i.clicked_at";
constexpr std::size_t inbox_column_count = 9;

inbox_item inbox_item_of(const sql_row& i) {
  inbox_item item;
  item.task_id = text_of(i[0]);
  item.tenant = text_of(i[1]);
  item.user_id = text_of(i[2]);
  item.channel = text_of(i[3]);
  item.title = text_of(i[4]);
  item.body = text_of(i[5]);
  item.created_at = domain::from_unix_micros(to_int(i[6]));
  item.read_at = time_of(i[7]);
  item.clicked_at = time_of(i[8]);
  return item;
}

} // namespace

// ---- seals of signed pushes (migration 0011) ----

namespace {

const std::vector<json_column> seal_columns = {
    text{"channel"}, {"signed_at", bigint}, text{"nonce"}, text{"digest"}, {"kept_until", bigint}};

/// How often one connection drops the seals that expired: a seal outlives its expiry by at most
/// this, and a push never waits on the delete more than once this often.
constexpr std::int64_t seal_prune_interval_s = 60;

/// A seal's primary key.
using seal_key = std::tuple<std::string, std::int64_t, std::string>;

seal_key key_of(const domain::push_seal& seal) {
  return {seal.channel, seal.signed_at, seal.nonce};
}

seal_key key_of(const sql_row& row) {
  return {text_of(row[0]), to_int(row[1]), text_of(row[2])};
}

void add_seal(json_batch& rows, const domain::push_seal& seal) {
  rows.add_row();
  rows.text(seal.channel)
      .number(seal.signed_at)
      .text(seal.nonce)
      .text(seal.digest)
      .number(seal.kept_until);
}

} // namespace

std::vector<bool> sql_task_store::seal_step(const std::vector<domain::push_seal>& seals,
                                            domain::timestamp now, std::int64_t& pruned_at) {
  json_batch rows(dialect_, seal_columns);
  for (const auto& seal : seals)
    add_seal(rows, seal);
  const auto new_rows = rows.finish();
  const std::string prune = "DELETE FROM push_seals WHERE kept_until < CAST(:now AS BIGINT)";
  // One statement decides each key: the insert that finds it taken (a racing node's uncommitted
  // row too: PostgreSQL waits for that transaction) writes nothing and returns nothing.
  const std::string insert =
      "INSERT INTO push_seals (channel, signed_at, nonce, digest, kept_until) SELECT r.channel, "
      "r.signed_at, r.nonce, r.digest, r.kept_until FROM " +
      dialect_.json_rows("rows", seal_columns) +
      " WHERE true ON CONFLICT DO NOTHING RETURNING channel, signed_at, nonce, digest";
  const std::string known = "SELECT s.channel, s.signed_at, s.nonce, s.digest FROM " +
                            dialect_.json_rows("rows", seal_columns) +
                            " JOIN push_seals s ON s.channel = r.channel AND s.signed_at = "
                            "r.signed_at AND s.nonce = r.nonce";
  const auto now_s = domain::to_unix_micros(now) / 1000000;
  if (now_s - seals_pruned_at_ >= seal_prune_interval_s) {
    statements_->execute(prune, {std::to_string(now_s)});
    pruned_at = now_s;
  }
  std::map<seal_key, std::string> stored; // -> the digest stored under the key
  for (const auto& row : statements_->fetch(insert, {new_rows}, 4))
    stored.emplace(key_of(row), text_of(row[3]));
  json_batch taken(dialect_, seal_columns);
  for (const auto& seal : seals)
    if (stored.count(key_of(seal)) == 0)
      add_seal(taken, seal);
  if (!taken.empty())
    for (const auto& row : statements_->fetch(known, {taken.finish()}, 4))
      stored.emplace(key_of(row), text_of(row[3]));
  std::vector<bool> verdicts;
  verdicts.reserve(seals.size());
  for (const auto& seal : seals) {
    auto found = stored.find(key_of(seal));
    verdicts.push_back(found != stored.end() && found->second == seal.digest);
  }
  return verdicts;
}

std::vector<std::string> sql_task_store::deliver_to_inbox(const std::vector<std::string>& task_ids,
                                                          domain::timestamp now) {
  json_batch ids(dialect_, id_columns);
  std::unordered_set<std::string_view> seen;
  for (const auto& id : task_ids)
    if (domain::is_plausible_provider_id(id) && seen.insert(id).second) {
      ids.add_row();
      ids.text(id);
    }
  if (ids.empty())
    return {};
  // The item is the task's own: its tenant, recipient and channel, its message's text.
  const std::string insert =
      "INSERT INTO inbox (task_id, tenant, user_id, channel, title, body, created_at) "
      "SELECT t.id, t.tenant, t.recipient, t.channel, COALESCE(t.content_title, m.title), "
      "COALESCE(t.content_body, m.body), CAST(:now AS BIGINT) FROM " +
      dialect_.json_rows("ids", id_columns) +
      " JOIN tasks t ON t.id = r.task_id JOIN messages m ON m.id = t.message_id "
      "WHERE true ON CONFLICT DO NOTHING";
  const std::string present = "SELECT i.task_id FROM " + dialect_.json_rows("ids", id_columns) +
                              " JOIN inbox i ON i.task_id = r.task_id";
  const auto rows = ids.finish();
  return in_transaction("deliver_to_inbox", [&] {
    statements_->execute(insert, {micros_text(now), rows});
    std::vector<std::string> delivered;
    for (const auto& row : statements_->fetch(present, {rows}, 1))
      delivered.push_back(text_of(row[0]));
    return delivered;
  });
}

inbox_page sql_task_store::list_inbox(const inbox_query& which) {
  if (which.limit == 0)
    return {};
  const std::string of_user = " FROM inbox i WHERE i.tenant = :tenant AND i.user_id = :user_id";
  const std::string unread = " AND i.read_at IS NULL";
  std::string page_query = "SELECT " + inbox_columns + of_user;
  std::vector<std::string> params{which.tenant, which.user_id};
  if (which.unread_only)
    page_query += unread;
  if (which.after) {
    page_query += " AND (i.created_at, i.task_id) < (CAST(:created_at AS BIGINT), :task_id)";
    params.push_back(micros_text(which.after->created_at));
    params.push_back(which.after->task_id);
  }
  page_query += " ORDER BY i.created_at DESC, i.task_id DESC LIMIT " + std::to_string(which.limit);
  return outside_transaction("list_inbox", [&] {
    inbox_page page;
    for (const auto& row : statements_->fetch(page_query, params, inbox_column_count))
      page.items.push_back(inbox_item_of(row));
    const auto count =
        statements_->fetch("SELECT COUNT(*)" + of_user + unread, {which.tenant, which.user_id}, 1);
    page.unread_count = count.empty() ? 0 : static_cast<std::uint64_t>(to_int(count[0][0]));
    return page;
  });
}

std::optional<domain::user_profile> sql_task_store::find_user(const std::string& tenant,
                                                              const std::string& user_id) {
  return outside_transaction("find_user", [&]() -> std::optional<domain::user_profile> {
    auto rows = statements_->fetch("SELECT " + user_columns +
                                       " FROM users u WHERE u.tenant = :tenant AND u.user_id = :id",
                                   {tenant, user_id}, user_column_count);
    if (rows.empty())
      return std::nullopt;
    return user_of(rows[0]);
  });
}

domain::user_profile sql_task_store::update_user(const std::string& tenant,
                                                 const std::string& user_id,
                                                 const domain::user_patch& patch,
                                                 domain::timestamp now) {
  return in_transaction("update_user", [&] {
    // The row exists before it is read for update, so two first changes of one user queue
    // on it instead of both starting from nothing.
    const bool created =
        !statements_
             ->fetch("INSERT INTO users (tenant, user_id, updated_at) VALUES (:tenant, :id, "
                     "CAST(:at AS BIGINT)) ON CONFLICT DO NOTHING RETURNING user_id",
                     {tenant, user_id, micros_text(now)}, 1)
             .empty();
    auto rows = statements_->fetch(
        "SELECT " + user_columns + " FROM users u WHERE u.tenant = :tenant AND u.user_id = :id" +
            std::string(dialect_.lock_row()),
        {tenant, user_id}, user_column_count);
    if (rows.empty())
      throw store_error("update_user: the user row vanished inside its transaction");
    auto user = domain::apply_patch(created ? std::nullopt : std::optional(user_of(rows[0])),
                                    tenant, user_id, patch, now);
    std::vector<std::string_view> channels(user.opted_out_channels.begin(),
                                           user.opted_out_channels.end());
    std::vector<std::string_view> categories;
    for (auto category : user.opted_out_categories)
      categories.push_back(domain::to_string(category));
    statements_->execute(
        "UPDATE users SET contacts_json = :contacts, time_zone = :zone, locale = :locale, "
        "opted_out_channels_json = :channels, opted_out_categories_json = :categories, "
        "dnd = CAST(:dnd AS INTEGER), dnd_until = CAST(NULLIF(:until, '') AS BIGINT), "
        "updated_at = CAST(:at AS BIGINT) WHERE tenant = :tenant AND user_id = :id",
        {params_json(user.contacts), user.time_zone, user.locale, strings_json(channels),
         strings_json(categories), user.dnd ? "1" : "0",
         user.dnd && user.dnd->until ? micros_text(*user.dnd->until) : std::string(),
         micros_text(now), tenant, user_id});
    return user;
  });
}

std::optional<inbox_item> sql_task_store::find_inbox_item(const std::string& tenant,
                                                          const std::string& task_id) {
  return outside_transaction("find_inbox_item", [&]() -> std::optional<inbox_item> {
    auto rows = statements_->fetch("SELECT " + inbox_columns +
                                       " FROM inbox i WHERE i.task_id = :id" + of_tenant("i."),
                                   {task_id, tenant, tenant}, inbox_column_count);
    if (rows.empty())
      return std::nullopt;
    return inbox_item_of(rows[0]);
  });
}

} // namespace herald::persistence
