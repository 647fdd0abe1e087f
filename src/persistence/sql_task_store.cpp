#include "persistence/sql_task_store.hpp"

#include "persistence/connection.hpp"
#include "persistence/schema.hpp"
#include "persistence/sql.hpp"

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <soci/soci.h>

namespace herald::persistence {

namespace {

using text = json_column;
constexpr auto bigint = json_column::type::bigint;

/// How often a transaction that hit a deadlock, a busy database or a unique violation is rerun
/// before the error is reported. A rerun re-reads what the other writer committed.
constexpr int max_tries = 4;

boost::json::value json_time(const std::optional<domain::timestamp>& at) {
  if (!at)
    return nullptr;
  return domain::to_unix_micros(*at);
}

std::optional<domain::timestamp> time_of(const sql_cell& cell) {
  if (!cell)
    return std::nullopt;
  return domain::from_unix_micros(to_int(cell));
}

std::string text_of(const sql_cell& cell) {
  return cell ? *cell : std::string();
}

std::string state_text(domain::task_state state) {
  return std::string(domain::to_string(state));
}

domain::task_state state_of(const sql_cell& cell) {
  auto state = domain::parse_task_state(text_of(cell));
  if (!state)
    throw store_error("unknown task status '" + text_of(cell) + "' in the database");
  return *state;
}

domain::priority priority_of(const sql_cell& cell) {
  auto value = domain::parse_priority(text_of(cell));
  if (!value)
    throw store_error("unknown priority '" + text_of(cell) + "' in the database");
  return *value;
}

domain::category category_of(const sql_cell& cell) {
  auto value = domain::parse_category(text_of(cell));
  if (!value)
    throw store_error("unknown category '" + text_of(cell) + "' in the database");
  return *value;
}

std::string params_json(const std::map<std::string, std::string>& params) {
  boost::json::object object;
  for (const auto& [key, value] : params)
    object[key] = value;
  return boost::json::serialize(object);
}

std::map<std::string, std::string> params_of(const sql_cell& cell) {
  std::map<std::string, std::string> params;
  if (!cell || cell->empty())
    return params;
  boost::system::error_code ec;
  auto value = boost::json::parse(*cell, ec);
  if (ec || !value.is_object())
    throw store_error("params_json is not a JSON object in the database");
  for (const auto& [key, item] : value.as_object())
    params.emplace(std::string(key),
                   item.is_string() ? std::string(item.as_string()) : boost::json::serialize(item));
  return params;
}

std::string unfinished_states() {
  using domain::task_state;
  return "('" + state_text(task_state::pending) + "', '" + state_text(task_state::sending) +
         "', '" + state_text(task_state::retry_wait) + "')";
}

} // namespace

sql_task_store::sql_task_store(database_url url, std::unique_ptr<soci::session> sql)
    : url_(std::move(url)), dialect_(url_.backend), sql_(std::move(sql)) {}

sql_task_store::~sql_task_store() = default;

void sql_task_store::reconnect_if_lost() {
  if (sql_->is_connected())
    return;
  sql_->reconnect();
  configure(*sql_, url_);
}

template <class Body> auto sql_task_store::in_transaction(const char* what, Body&& body) {
  for (int attempt = 1;; ++attempt) {
    try {
      reconnect_if_lost();
      transaction tx(*sql_, dialect_);
      auto result = body();
      tx.commit();
      return result;
    } catch (const soci::soci_error& e) {
      if (dialect_.classify(e) == sql_failure::other || attempt == max_tries)
        throw store_error(std::string(what) + " failed: " + short_message(e.what()));
    }
  }
}

template <class Body> auto sql_task_store::outside_transaction(const char* what, Body&& body) {
  try {
    reconnect_if_lost();
    return body();
  } catch (const soci::soci_error& e) {
    throw store_error(std::string(what) + " failed: " + short_message(e.what()));
  }
}

std::vector<claim_result> sql_task_store::claim(const std::vector<domain::message_plan>& plans) {
  if (plans.empty())
    return {};

  // Each message and task goes to the database once; a key repeated in the batch is answered
  // from its first occurrence.
  boost::json::array messages;
  boost::json::array tasks;
  std::unordered_set<std::string> message_ids;
  std::unordered_map<std::string, std::size_t> task_slot; // task id -> index into `tasks`
  for (const auto& plan : plans) {
    const auto& m = plan.message;
    if (message_ids.insert(m.id).second) {
      messages.push_back(boost::json::object{
          {"m_id", m.id},
          {"tenant", m.key.tenant},
          {"biz_type", m.key.biz_type},
          {"biz_id", m.key.biz_id},
          {"user_id", m.key.user_id},
          {"template_name", m.template_name},
          {"params_json", params_json(m.params)},
          {"title", m.title},
          {"body", m.body},
          {"category", domain::to_string(m.category)},
          {"priority", domain::to_string(m.priority)},
          {"send_at", json_time(m.send_at)},
          {"expire_at", json_time(m.expire_at)},
          {"trace_id", m.trace_id},
          {"created_at", domain::to_unix_micros(m.created_at)},
      });
    }
    for (const auto& t : plan.tasks) {
      if (!task_slot.emplace(t.id, tasks.size()).second)
        continue;
      tasks.push_back(boost::json::object{
          {"t_id", t.id},
          {"message_id", m.id},
          {"tenant", m.key.tenant},
          {"biz_type", m.key.biz_type},
          {"biz_id", m.key.biz_id},
          {"user_id", m.key.user_id},
          {"channel", t.channel},
          {"recipient", t.recipient},
          {"provider_request_id", t.provider_request_id},
          {"priority", domain::to_string(m.priority)},
          {"created_at", domain::to_unix_micros(m.created_at)},
      });
    }
  }

  // Rows are inserted in id order so concurrent claims lock keys in the same order and cannot
  // deadlock each other.
  const std::string insert_messages =
      "INSERT INTO messages (id, tenant, biz_type, biz_id, user_id, template_name, params_json, "
      "title, body, category, priority, send_at, expire_at, trace_id, created_at) "
      "SELECT r.m_id, r.tenant, r.biz_type, r.biz_id, r.user_id, r.template_name, r.params_json, "
      "r.title, r.body, r.category, r.priority, r.send_at, r.expire_at, r.trace_id, r.created_at "
      "FROM " +
      dialect_.json_rows("rows", {text{"m_id"},
                                  text{"tenant"},
                                  text{"biz_type"},
                                  text{"biz_id"},
                                  text{"user_id"},
                                  text{"template_name"},
                                  text{"params_json"},
                                  text{"title"},
                                  text{"body"},
                                  text{"category"},
                                  text{"priority"},
                                  {"send_at", bigint},
                                  {"expire_at", bigint},
                                  text{"trace_id"},
                                  {"created_at", bigint}}) +
      " WHERE true ORDER BY r.m_id ON CONFLICT DO NOTHING";
  const std::string insert_tasks =
      "INSERT INTO tasks (id, message_id, tenant, biz_type, biz_id, user_id, channel, recipient, "
      "provider_request_id, status, priority, attempts, created_at, updated_at) "
      "SELECT r.t_id, r.message_id, r.tenant, r.biz_type, r.biz_id, r.user_id, r.channel, "
      "r.recipient, r.provider_request_id, '" +
      state_text(domain::task_state::pending) +
      "', r.priority, 0, r.created_at, r.created_at "
      "FROM " +
      dialect_.json_rows("rows", {text{"t_id"},
                                  text{"message_id"},
                                  text{"tenant"},
                                  text{"biz_type"},
                                  text{"biz_id"},
                                  text{"user_id"},
                                  text{"channel"},
                                  text{"recipient"},
                                  text{"provider_request_id"},
                                  text{"priority"},
                                  {"created_at", bigint}}) +
      " WHERE true ORDER BY r.t_id ON CONFLICT DO NOTHING RETURNING id";
  // Existing tasks are found by their business key: the unique index every key maps to.
  const std::string select_existing =
      "SELECT r.slot, t.id, t.status FROM " +
      dialect_.json_rows("rows", {{"slot", bigint},
                                  text{"tenant"},
                                  text{"biz_type"},
                                  text{"biz_id"},
                                  text{"user_id"},
                                  text{"channel"}}) +
      " JOIN tasks t ON t.tenant = r.tenant AND t.biz_type = r.biz_type AND t.biz_id = r.biz_id "
      "AND t.user_id = r.user_id AND t.channel = r.channel";

  struct answer {
    std::string task_id;
    domain::task_state state = domain::task_state::pending;
    bool created = false;
  };
  auto answers = in_transaction("claim", [&] {
    std::vector<std::optional<answer>> slots(tasks.size());
    execute(*sql_, insert_messages, {boost::json::serialize(messages)});
    if (tasks.empty())
      return slots;
    for (const auto& row : fetch_rows(*sql_, insert_tasks, {boost::json::serialize(tasks)}, 1))
      if (auto it = task_slot.find(text_of(row[0])); it != task_slot.end())
        slots[it->second] = answer{it->first, domain::task_state::pending, true};
    boost::json::array missing;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (slots[i])
        continue;
      const auto& t = tasks[i].as_object();
      missing.push_back(boost::json::object{{"slot", i},
                                            {"tenant", t.at("tenant")},
                                            {"biz_type", t.at("biz_type")},
                                            {"biz_id", t.at("biz_id")},
                                            {"user_id", t.at("user_id")},
                                            {"channel", t.at("channel")}});
    }
    if (missing.empty())
      return slots;
    for (const auto& row :
         fetch_rows(*sql_, select_existing, {boost::json::serialize(missing)}, 3)) {
      auto slot = static_cast<std::size_t>(to_int(row[0]));
      if (slot < slots.size())
        slots[slot] = answer{text_of(row[1]), state_of(row[2]), false};
    }
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (!slots[i])
        throw store_error("claim failed: task " +
                          std::string(tasks[i].as_object().at("t_id").as_string()) +
                          " was neither inserted nor found (an id used by another key?)");
    return slots;
  });

  std::vector<claim_result> results;
  results.reserve(plans.size());
  std::vector<bool> answered(answers.size(), false);
  for (const auto& plan : plans) {
    claim_result result{plan.message.id, {}};
    result.tasks.reserve(plan.tasks.size());
    for (const auto& t : plan.tasks) {
      const std::size_t slot = task_slot.at(t.id);
      const answer& a = *answers[slot];
      result.tasks.push_back(
          claim_outcome{a.task_id, t.channel, a.state, a.created && !answered[slot]});
      answered[slot] = true;
    }
    results.push_back(std::move(result));
  }
  return results;
}

std::vector<std::string> sql_task_store::apply(const std::vector<state_change>& changes,
                                               const std::vector<attempt_record>& attempts) {
  if (changes.empty() && attempts.empty())
    return {};

  // A task changed twice in one batch (SENDING, then SENT) needs the first change applied
  // before the second is checked against it: the k-th change of each task goes in round k.
  std::unordered_map<std::string, std::size_t> seen;
  std::vector<boost::json::array> rounds;
  std::vector<std::size_t> round_of(changes.size());
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const auto& c = changes[i];
    const std::size_t round = seen[c.task_id]++;
    if (round == rounds.size())
      rounds.emplace_back();
    round_of[i] = round;
    rounds[round].push_back(boost::json::object{
        {"task_id", c.task_id},
        {"from_status", state_text(c.from)},
        {"to_status", state_text(c.to)},
        {"attempt_count", c.attempts},
        {"next_at", json_time(c.next_attempt_at)},
        {"error_text", c.last_error},
        {"changed_at", domain::to_unix_micros(c.at)},
    });
  }
  boost::json::array attempt_rows;
  for (const auto& a : attempts) {
    attempt_rows.push_back(boost::json::object{
        {"task_id", a.task_id},
        {"attempt_no", a.attempt_no},
        {"provider_request_id", a.provider_request_id},
        {"outcome", a.outcome},
        {"detail", a.detail},
        {"started_at", domain::to_unix_micros(a.started_at)},
        {"finished_at", domain::to_unix_micros(a.finished_at)},
    });
  }

  const std::string update =
      "UPDATE tasks SET status = r.to_status, attempts = r.attempt_count, "
      "next_attempt_at = r.next_at, last_error = COALESCE(NULLIF(r.error_text, ''), "
      "tasks.last_error), updated_at = r.changed_at FROM " +
      dialect_.json_rows("rows", {text{"task_id"},
                                  text{"from_status"},
                                  text{"to_status"},
                                  {"attempt_count", bigint},
                                  {"next_at", bigint},
                                  text{"error_text"},
                                  {"changed_at", bigint}}) +
      " WHERE tasks.id = r.task_id AND tasks.status = r.from_status RETURNING id";
  const std::string insert_attempts =
      "INSERT INTO attempts (task_id, attempt_no, provider_request_id, outcome, detail, "
      "started_at, finished_at) SELECT r.task_id, r.attempt_no, r.provider_request_id, r.outcome, "
      "r.detail, r.started_at, r.finished_at FROM " +
      dialect_.json_rows("rows", {text{"task_id"},
                                  {"attempt_no", bigint},
                                  text{"provider_request_id"},
                                  text{"outcome"},
                                  text{"detail"},
                                  {"started_at", bigint},
                                  {"finished_at", bigint}}) +
      " WHERE true ON CONFLICT DO NOTHING";

  auto applied = in_transaction("apply", [&] {
    std::vector<std::unordered_set<std::string>> applied_in(rounds.size());
    for (std::size_t round = 0; round < rounds.size(); ++round)
      for (const auto& row : fetch_rows(*sql_, update, {boost::json::serialize(rounds[round])}, 1))
        applied_in[round].insert(text_of(row[0]));
    if (!attempt_rows.empty())
      execute(*sql_, insert_attempts, {boost::json::serialize(attempt_rows)});
    return applied_in;
  });

  std::vector<std::string> ids;
  for (std::size_t i = 0; i < changes.size(); ++i)
    if (applied[round_of[i]].count(changes[i].task_id) != 0)
      ids.push_back(changes[i].task_id);
  return ids;
}

std::optional<message_view> sql_task_store::find_message(const std::string& message_id) {
  return outside_transaction("find_message", [&]() -> std::optional<message_view> {
    auto messages = fetch_rows(
        *sql_,
        "SELECT id, tenant, biz_type, biz_id, user_id, template_name, params_json, title, body, "
        "category, priority, send_at, expire_at, trace_id, created_at FROM messages WHERE id = :id",
        {message_id}, 15);
    if (messages.empty())
      return std::nullopt;
    const auto& m = messages[0];
    message_view view;
    auto& record = view.message;
    record.id = text_of(m[0]);
    record.key = domain::message_key{text_of(m[1]), text_of(m[2]), text_of(m[3]), text_of(m[4])};
    record.template_name = text_of(m[5]);
    record.params = params_of(m[6]);
    record.title = text_of(m[7]);
    record.body = text_of(m[8]);
    record.category = category_of(m[9]);
    record.priority = priority_of(m[10]);
    record.send_at = time_of(m[11]);
    record.expire_at = time_of(m[12]);
    record.trace_id = text_of(m[13]);
    record.created_at = domain::from_unix_micros(to_int(m[14]));

    std::unordered_map<std::string, std::size_t> index;
    for (const auto& t : fetch_rows(*sql_,
                                    "SELECT id, channel, recipient, status, attempts, "
                                    "next_attempt_at, last_error, provider_request_id, "
                                    "created_at, updated_at FROM tasks WHERE message_id = :id "
                                    "ORDER BY channel, id",
                                    {message_id}, 10)) {
      task_view task;
      task.task_id = text_of(t[0]);
      task.channel = text_of(t[1]);
      task.recipient = text_of(t[2]);
      task.state = state_of(t[3]);
      task.attempts = static_cast<std::uint32_t>(to_int(t[4]));
      task.next_attempt_at = time_of(t[5]);
      task.last_error = text_of(t[6]);
      task.provider_request_id = text_of(t[7]);
      task.created_at = domain::from_unix_micros(to_int(t[8]));
      task.updated_at = domain::from_unix_micros(to_int(t[9]));
      index.emplace(task.task_id, view.tasks.size());
      view.tasks.push_back(std::move(task));
    }
    for (const auto& a :
         fetch_rows(*sql_,
                    "SELECT a.task_id, a.attempt_no, a.provider_request_id, a.outcome, a.detail, "
                    "a.started_at, a.finished_at FROM attempts a JOIN tasks t ON t.id = a.task_id "
                    "WHERE t.message_id = :id ORDER BY a.task_id, a.attempt_no",
                    {message_id}, 7)) {
      auto it = index.find(text_of(a[0]));
      if (it == index.end())
        continue;
      attempt_record record_of_attempt;
      record_of_attempt.task_id = text_of(a[0]);
      record_of_attempt.attempt_no = static_cast<std::uint32_t>(to_int(a[1]));
      record_of_attempt.provider_request_id = text_of(a[2]);
      record_of_attempt.outcome = text_of(a[3]);
      record_of_attempt.detail = text_of(a[4]);
      record_of_attempt.started_at = domain::from_unix_micros(to_int(a[5]));
      record_of_attempt.finished_at = domain::from_unix_micros(to_int(a[6]));
      view.tasks[it->second].attempt_log.push_back(std::move(record_of_attempt));
    }
    return view;
  });
}

std::vector<domain::delivery> sql_task_store::load_unfinished(const std::string& after_task_id,
                                                              std::size_t limit) {
  if (limit == 0)
    return {};
  return outside_transaction("load_unfinished", [&] {
    std::vector<domain::delivery> deliveries;
    for (const auto& row : fetch_rows(
             *sql_,
             "SELECT t.id, t.message_id, t.channel, t.recipient, t.provider_request_id, m.title, "
             "m.body, m.trace_id, m.priority, t.status, t.attempts, m.send_at, m.expire_at, "
             "m.created_at FROM tasks t JOIN messages m ON m.id = t.message_id WHERE t.status IN " +
                 unfinished_states() + " AND t.id > :after ORDER BY t.id LIMIT " +
                 std::to_string(limit),
             {after_task_id}, 14)) {
      domain::delivery d;
      d.task_id = text_of(row[0]);
      d.message_id = text_of(row[1]);
      d.channel = text_of(row[2]);
      d.recipient = text_of(row[3]);
      d.provider_request_id = text_of(row[4]);
      d.title = text_of(row[5]);
      d.body = text_of(row[6]);
      d.trace_id = text_of(row[7]);
      d.priority = priority_of(row[8]);
      d.state = state_of(row[9]);
      d.attempts = static_cast<std::uint32_t>(to_int(row[10]));
      d.send_at = time_of(row[11]);
      d.expire_at = time_of(row[12]);
      d.accepted_at = domain::from_unix_micros(to_int(row[13]));
      deliveries.push_back(std::move(d));
    }
    return deliveries;
  });
}

std::vector<state_count> sql_task_store::count_by_state() {
  return outside_transaction("count_by_state", [&] {
    std::vector<state_count> counts;
    for (const auto& row : fetch_rows(
             *sql_, "SELECT status, COUNT(*) FROM tasks GROUP BY status ORDER BY status", {}, 2))
      counts.push_back(state_count{state_of(row[0]), static_cast<std::uint64_t>(to_int(row[1]))});
    return counts;
  });
}

void sql_task_store::ping() {
  outside_transaction("ping", [&] {
    auto rows = fetch_rows(*sql_, "SELECT 1", {}, 1);
    if (rows.size() != 1 || to_int(rows[0][0]) != 1)
      throw store_error("ping failed: unexpected answer");
    return 0;
  });
}

std::unique_ptr<task_store> open_task_store(const database_url& url, bool migrate) {
  auto sql = connect(url);
  const dialect dialect(url.backend);
  const int latest = latest_schema_version(dialect.name());
  const int version = migrate ? apply_migrations(*sql, dialect) : schema_version(*sql, dialect);
  if (version < latest)
    throw store_error("database schema is at version " + std::to_string(version) +
                      ", herald needs " + std::to_string(latest) + ": run herald migrate");
  if (version > latest)
    throw store_error("database schema is at version " + std::to_string(version) +
                      ", newer than this herald knows (" + std::to_string(latest) +
                      "): upgrade herald");
  return std::make_unique<sql_task_store>(url, std::move(sql));
}

int migrate(const database_url& url) {
  auto sql = connect(url);
  return apply_migrations(*sql, dialect(url.backend));
}

} // namespace herald::persistence
