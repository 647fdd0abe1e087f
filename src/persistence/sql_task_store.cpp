#include "persistence/sql_task_store.hpp"

#include "domain/masking.hpp"
#include "domain/status_event.hpp"
#include "observability/log.hpp"
#include "persistence/connection.hpp"
#include "persistence/schema.hpp"
#include "persistence/sql.hpp"
#include "persistence/zoneinfo.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
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

std::map<std::string, std::string> params_of(const sql_cell& cell, const char* column) {
  std::map<std::string, std::string> params;
  if (!cell || cell->empty())
    return params;
  boost::system::error_code ec;
  auto value = boost::json::parse(*cell, ec);
  if (ec || !value.is_object())
    throw store_error(std::string(column) + " is not a JSON object in the database");
  for (const auto& [key, item] : value.as_object())
    params.emplace(std::string(key),
                   item.is_string() ? std::string(item.as_string()) : boost::json::serialize(item));
  return params;
}

std::string strings_json(const std::vector<std::string_view>& values) {
  boost::json::array array;
  for (auto value : values)
    array.emplace_back(value);
  return boost::json::serialize(array);
}

std::vector<std::string> strings_of(const sql_cell& cell, const char* column) {
  std::vector<std::string> values;
  if (!cell || cell->empty())
    return values;
  boost::system::error_code ec;
  auto value = boost::json::parse(*cell, ec);
  if (ec || !value.is_array())
    throw store_error(std::string(column) + " is not a JSON array in the database");
  for (const auto& item : value.as_array())
    if (item.is_string())
      values.emplace_back(item.as_string());
  return values;
}

/// Columns of a user (see user_of), table `users u`.
const std::string user_columns =
    "u.tenant, u.user_id, u.contacts_json, u.time_zone, u.locale, u.opted_out_channels_json, "
    "u.opted_out_categories_json, u.dnd, u.dnd_until, u.updated_at";
constexpr std::size_t user_column_count = 10;

domain::user_profile user_of(const sql_row& row) {
  domain::user_profile user;
  user.tenant = text_of(row[0]);
  user.user_id = text_of(row[1]);
  user.contacts = params_of(row[2], "contacts_json");
  user.time_zone = text_of(row[3]);
  user.locale = text_of(row[4]);
  for (auto& channel : strings_of(row[5], "opted_out_channels_json"))
    user.opted_out_channels.insert(std::move(channel));
  for (const auto& name : strings_of(row[6], "opted_out_categories_json"))
    if (auto value = domain::parse_category(name))
      user.opted_out_categories.insert(*value);
  if (to_int(row[7]) != 0)
    user.dnd = domain::do_not_disturb{time_of(row[8])};
  user.updated_at = domain::from_unix_micros(to_int(row[9]));
  return user;
}

/// Ids of the tasks in the given states (each with an extra condition, may be empty) after
/// `:after` in id order, at most `limit`: one range of index tasks (status, id) per state, each
/// stopping at `limit` rows, so a page costs the same however many tasks are finished. Each
/// part binds its own parameters: the condition's, then `after`. SQLite binds a name used twice
/// once, so "#" in a condition becomes the part's number.
std::string numbered(std::string condition, const std::string& n) {
  for (auto at = condition.find('#'); at != std::string::npos;
       at = condition.find('#', at + n.size()))
    condition.replace(at, 1, n);
  return condition;
}

std::string page_of_ids(const std::vector<std::pair<domain::task_state, std::string>>& parts,
                        std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto n = std::to_string(i);
    out.append(i == 0 ? "" : " UNION ALL ");
    out.append("SELECT id FROM (SELECT id FROM tasks WHERE status = '")
        .append(state_text(parts[i].first))
        .append("'")
        .append(numbered(parts[i].second, n))
        .append(" AND id > :after" + n + " ORDER BY id LIMIT " + std::to_string(limit) + ") AS s" +
                n);
  }
  return out;
}

/// Whether tasks `a` and `b` are of one message. A message's tasks share its business key: the
/// unique key's index finds them.
std::string same_message(const std::string& a, const std::string& b) {
  return a + ".tenant = " + b + ".tenant AND " + a + ".biz_type = " + b + ".biz_type AND " + a +
         ".biz_id = " + b + ".biz_id AND " + a + ".user_id = " + b + ".user_id";
}

/// `'A', 'B', …`: the states for which `pick` holds, for an SQL IN list.
template <class Pick> std::string states_where(Pick pick) {
  std::string list;
  for (auto state : domain::all_task_states())
    if (pick(state))
      list.append(list.empty() ? "'" : ", '").append(state_text(state)).append("'");
  return list;
}

/// The condition that a dead letter `tasks` has `wanted` coverage (domain::coverage_of).
std::string coverage_condition(domain::coverage wanted) {
  const auto others_in = [](const std::string& states) {
    return "EXISTS (SELECT 1 FROM tasks o WHERE " + same_message("o", "tasks") +
           " AND o.id <> tasks.id AND o.status IN (" + states + "))";
  };
  const auto reached = others_in(states_where(domain::reached_user));
  const auto waiting =
      others_in(states_where([](domain::task_state s) { return !domain::is_terminal(s); }));
  const auto unconfirmed = others_in(
      states_where([](domain::task_state s) { return s == domain::task_state::unconfirmed; }));
  switch (wanted) {
  case domain::coverage::covered:
    return " AND " + reached;
  case domain::coverage::pending:
    return " AND NOT " + reached + " AND " + waiting;
  case domain::coverage::unknown:
    return " AND NOT " + reached + " AND NOT " + waiting + " AND " + unconfirmed;
  case domain::coverage::none:
    break;
  }
  return " AND NOT " + reached + " AND NOT " + waiting + " AND NOT " + unconfirmed;
}

/// Columns of a delivery: tasks `t` joined with their message `m` (see delivery_of).
const std::string delivery_columns =
    "t.id, t.message_id, t.tenant, t.biz_type, t.biz_id, t.user_id, m.recipients_json, "
    "t.channel, t.recipient, t.provider_request_id, COALESCE(t.content_title, m.title), "
    "COALESCE(t.content_body, m.body), m.trace_id, m.priority, "
    "t.status, t.attempts, t.next_attempt_at, COALESCE(t.send_at, m.send_at), m.expire_at, "
    "m.created_at, t.escalation, m.category, t.status_questions, t.next_question_at";
constexpr std::size_t delivery_column_count = 24;

domain::delivery delivery_of(const sql_row& row) {
  domain::delivery d;
  d.task_id = text_of(row[0]);
  d.message_id = text_of(row[1]);
  d.key = domain::message_key{text_of(row[2]), text_of(row[3]), text_of(row[4]), text_of(row[5])};
  d.recipients = params_of(row[6], "recipients_json");
  d.channel = text_of(row[7]);
  d.recipient = text_of(row[8]);
  d.provider_request_id = text_of(row[9]);
  d.title = text_of(row[10]);
  d.body = text_of(row[11]);
  d.trace_id = text_of(row[12]);
  d.priority = priority_of(row[13]);
  d.state = state_of(row[14]);
  d.attempts = static_cast<std::uint32_t>(to_int(row[15]));
  d.next_attempt_at = time_of(row[16]);
  d.send_at = time_of(row[17]);
  d.expire_at = time_of(row[18]);
  d.accepted_at = domain::from_unix_micros(to_int(row[19]));
  d.escalation = to_int(row[20]) != 0;
  d.category = category_of(row[21]);
  d.status_questions = static_cast<std::uint32_t>(to_int(row[22]));
  d.next_question_at = time_of(row[23]);
  return d;
}

/// Columns of a message row `m` (see message_of).
const std::string message_select_columns =
    "m.id, m.tenant, m.biz_type, m.biz_id, m.user_id, m.template_name, m.params_json, m.title, "
    "m.body, m.category, m.priority, m.send_at, m.expire_at, m.trace_id, m.created_at, "
    "m.recipients_json, m.template_version";
constexpr std::size_t message_column_count = 17;

domain::message_record message_of(const sql_row& m) {
  domain::message_record record;
  record.id = text_of(m[0]);
  record.key = domain::message_key{text_of(m[1]), text_of(m[2]), text_of(m[3]), text_of(m[4])};
  record.template_name = text_of(m[5]);
  record.params = params_of(m[6], "params_json");
  record.title = text_of(m[7]);
  record.body = text_of(m[8]);
  record.category = category_of(m[9]);
  record.priority = priority_of(m[10]);
  record.send_at = time_of(m[11]);
  record.expire_at = time_of(m[12]);
  record.trace_id = text_of(m[13]);
  record.created_at = domain::from_unix_micros(to_int(m[14]));
  record.recipients = params_of(m[15], "recipients_json");
  if (m[16])
    record.template_version = static_cast<std::uint32_t>(to_int(m[16]));
  return record;
}

/// Columns of a task_view: tasks `t` (see task_view_of).
const std::string task_view_columns =
    "t.id, t.channel, t.recipient, t.status, t.attempts, t.next_attempt_at, t.last_error, "
    "t.provider_request_id, t.created_at, t.updated_at, t.provider_message_id, t.policy_reason, "
    "t.send_at, t.content_title, t.content_body, t.status_questions";
constexpr std::size_t task_view_column_count = 16;

task_view task_view_of(const sql_row& t) {
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
  task.provider_message_id = text_of(t[10]);
  task.policy_reason = domain::parse_policy_reason(text_of(t[11]));
  task.send_at = time_of(t[12]);
  if (t[14]) // a task with text of its own (a stored template's channel override)
    task.own_content = domain::content{text_of(t[13]), text_of(t[14])};
  task.status_questions = static_cast<std::uint32_t>(to_int(t[15]));
  return task;
}

/// Columns of an attempt_record: attempts `a` (see attempt_of).
const std::string attempt_columns = "a.task_id, a.attempt_no, a.provider_request_id, a.outcome, "
                                    "a.detail, a.started_at, a.finished_at";
constexpr std::size_t attempt_column_count = 7;

attempt_record attempt_of(const sql_row& a) {
  attempt_record record;
  record.task_id = text_of(a[0]);
  record.attempt_no = static_cast<std::uint32_t>(to_int(a[1]));
  record.provider_request_id = text_of(a[2]);
  record.outcome = text_of(a[3]);
  record.detail = text_of(a[4]);
  record.started_at = domain::from_unix_micros(to_int(a[5]));
  record.finished_at = domain::from_unix_micros(to_int(a[6]));
  return record;
}

/// The condition limiting rows of `table_prefix` ("m.", "t." or "") to the tenant bound twice
/// next (an empty tenant: every tenant); `suffix` numbers the parameters inside page_of_ids.
std::string of_tenant(const std::string& table_prefix, const std::string& suffix = "") {
  return " AND (CAST(:tenant" + suffix + " AS TEXT) = '' OR " + table_prefix +
         "tenant = :same_tenant" + suffix + ")";
}

std::string micros_text(domain::timestamp at) {
  return std::to_string(domain::to_unix_micros(at));
}

} // namespace

sql_task_store::sql_task_store(database_url url, std::unique_ptr<soci::session> sql,
                               store_options options)
    : url_(std::move(url)), dialect_(url_.backend), options_(std::move(options)),
      sql_(std::move(sql)), statements_(std::make_unique<statement_cache>(*sql_)) {}

sql_task_store::~sql_task_store() = default;

void sql_task_store::reconnect_if_lost() {
  if (sql_->is_connected())
    return;
  statements_->clear(); // prepared on the lost connection
  sql_->reconnect();
  configure(*sql_, url_);
}

template <class Body> auto sql_task_store::in_transaction(const char* what, Body&& body) {
  for (int attempt = 1;; ++attempt) {
    try {
      reconnect_if_lost();
      transaction tx(*sql_, dialect_);
      entered_.clear(); // a rerun notes its states again
      auto result = body();
      write_events();
      tx.commit();
      return result;
    } catch (const soci::soci_error& e) {
      statements_->clear(); // the failed statement may be left half-way; rolled back by now
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
    statements_->clear();
    throw store_error(std::string(what) + " failed: " + short_message(e.what()));
  }
}

namespace {

std::optional<std::int64_t> micros_of(const std::optional<domain::timestamp>& at) {
  if (!at)
    return std::nullopt;
  return domain::to_unix_micros(*at);
}

const std::vector<json_column> message_columns = {text{"m_id"},
                                                  text{"tenant"},
                                                  text{"biz_type"},
                                                  text{"biz_id"},
                                                  text{"user_id"},
                                                  text{"template_name"},
                                                  text{"params_json"},
                                                  text{"recipients_json"},
                                                  text{"title"},
                                                  text{"body"},
                                                  text{"category"},
                                                  text{"priority"},
                                                  {"send_at", bigint},
                                                  {"expire_at", bigint},
                                                  text{"trace_id"},
                                                  {"created_at", bigint},
                                                  {"template_version", bigint}};

const std::vector<json_column> task_columns = {
    text{"t_id"},     text{"message_id"},      text{"tenant"},
    text{"biz_type"}, text{"biz_id"},          text{"user_id"},
    text{"channel"},  text{"recipient"},       text{"provider_request_id"},
    text{"priority"}, {"created_at", bigint},  text{"status"},
    text{"reason"},   {"deferred_to", bigint}, {"escalation", bigint},
    text{"counted"},  text{"content_title"},   text{"content_body"}};

const std::vector<json_column> user_key_columns = {
    text{"tenant"}, text{"user_id"}, {"since", bigint}};

const std::vector<json_column> lock_key_columns = {{"k", bigint}};

const std::vector<json_column> count_columns = {
    text{"tenant"}, text{"user_id"}, text{"counter"}, {"window_start", bigint}, {"added", bigint}};

/// (tenant, user, counter, window start in µs) -> how many places a statement adds or gives back.
using cap_counts =
    std::map<std::tuple<std::string, std::string, std::string, std::int64_t>, std::int64_t>;

/// `counts` as the rows of a `json_rows(…, count_columns)` source.
std::string cap_count_rows(const dialect& sql_dialect, const cap_counts& counts) {
  json_batch rows(sql_dialect, count_columns);
  for (const auto& [counter, places] : counts) {
    rows.add_row();
    rows.text(std::get<0>(counter))
        .text(std::get<1>(counter))
        .text(std::get<2>(counter))
        .number(std::get<3>(counter))
        .number(places);
  }
  return rows.finish();
}

// A user's key for the claim's transaction-scoped lock (FNV-1a 64 of tenant NUL user_id,
// folded to 32 bits): the same on every node, so two nodes admitting tasks of one user take
// turns. Two users sharing a key only take turns too.
std::int64_t user_lock_key(const std::string& tenant, const std::string& user_id) {
  std::uint64_t hash = 14695981039346656037ULL;
  const auto mix = [&hash](unsigned char byte) {
    hash ^= byte;
    hash *= 1099511628211ULL;
  };
  for (unsigned char c : tenant)
    mix(c);
  mix(0);
  for (unsigned char c : user_id)
    mix(c);
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(hash ^ (hash >> 32)));
}

const std::vector<json_column> key_columns = {{"slot", bigint}, text{"tenant"},  text{"biz_type"},
                                              text{"biz_id"},   text{"user_id"}, text{"channel"}};

const std::vector<json_column> change_columns = {text{"task_id"},
                                                 text{"from_status"},
                                                 text{"to_status"},
                                                 {"attempt_count", bigint},
                                                 {"next_at", bigint},
                                                 text{"error_text"},
                                                 {"changed_at", bigint},
                                                 text{"lease_owner"},
                                                 {"lease_until", bigint},
                                                 text{"lease_token"},
                                                 text{"provider_message_id"},
                                                 {"status_questions", bigint},
                                                 {"next_question_at", bigint}};

const std::vector<json_column> attempt_row_columns = {
    text{"task_id"}, {"attempt_no", bigint}, text{"provider_request_id"}, text{"outcome"},
    text{"detail"},  {"started_at", bigint}, {"finished_at", bigint}};

const std::vector<json_column> id_columns = {text{"task_id"}};

/// `ids` as the JSON rows bound to a `json_rows(…, id_columns)` source.
std::string id_json_rows(const dialect& sql_dialect, const std::vector<std::string>& ids) {
  json_batch rows(sql_dialect, id_columns);
  for (const auto& id : ids) {
    rows.add_row();
    rows.text(id);
  }
  return rows.finish();
}

const std::vector<json_column> event_columns = {
    text{"event_id"}, text{"task_id"}, text{"type"}, {"occurred_at", bigint}, {"ord", bigint}};

const std::vector<json_column> event_outcome_columns = {
    text{"event_id"},   text{"status"},          {"attempt_count", bigint}, {"next_at", bigint},
    text{"error_text"}, {"finished_at", bigint}, {"changed_at", bigint}};

} // namespace

namespace store_detail {

/// A claim's messages and tasks, each once (a key repeated in the batch is answered from its
/// first occurrence), written as JSON for one statement per table.
struct claim_batch {
  claim_batch(const dialect& dialect, const std::vector<domain::message_plan>& plans)
      : messages(dialect, message_columns) {
    std::unordered_set<std::string_view> message_ids;
    for (const auto& plan : plans) {
      const auto& m = plan.message;
      if (message_ids.insert(m.id).second) {
        messages.add_row();
        messages.text(m.id)
            .text(m.key.tenant)
            .text(m.key.biz_type)
            .text(m.key.biz_id)
            .text(m.key.user_id)
            .text(m.template_name)
            .text(params_json(m.params))
            .text(params_json(m.recipients))
            .text(m.title)
            .text(m.body)
            .text(domain::to_string(m.category))
            .text(domain::to_string(m.priority))
            .time(micros_of(m.send_at))
            .time(micros_of(m.expire_at))
            .text(m.trace_id)
            .number(domain::to_unix_micros(m.created_at))
            .time(m.template_version ? std::optional<std::int64_t>(*m.template_version)
                                     : std::nullopt);
      }
      for (const auto& t : plan.tasks) {
        if (!slot_of.emplace(t.id, slots.size()).second)
          continue;
        slots.push_back({&m, &t, plan.in_quiet_hours, plan.over_cap});
      }
    }
  }

  /// The task rows of the slots `wanted(index)` picks, in slot order, for one INSERT: PENDING
  /// as asked, or as policy decided (`admitted`, one per slot); an escalation step at its time.
  template <typename Wanted>
  json_batch task_rows(const dialect& dialect, const Wanted& wanted,
                       const std::vector<domain::admitted_task>& admitted) const {
    json_batch rows(dialect, task_columns);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (!wanted(i))
        continue;
      const auto& m = *slots[i].message;
      const auto& t = *slots[i].task;
      rows.add_row();
      rows.text(t.id)
          .text(m.id)
          .text(m.key.tenant)
          .text(m.key.biz_type)
          .text(m.key.biz_id)
          .text(m.key.user_id)
          .text(t.channel)
          .text(t.recipient)
          .text(t.provider_request_id)
          .text(domain::to_string(m.priority))
          .number(domain::to_unix_micros(m.created_at));
      const auto* verdict = admitted[i].verdict ? &*admitted[i].verdict : nullptr;
      const bool suppressed =
          verdict != nullptr && verdict->decision == domain::policy_verdict::kind::suppress;
      rows.text(
          state_text(suppressed ? domain::task_state::suppressed : domain::task_state::pending));
      if (verdict != nullptr && verdict->reason)
        rows.text(domain::to_string(*verdict->reason));
      else
        rows.null();
      // A task's own send time: policy's deferral (decided for the step's time already), else
      // its escalation step's time; the message's send_at covers the rest.
      const bool deferred = verdict != nullptr && !suppressed && verdict->reason;
      rows.time(deferred ? std::optional(domain::to_unix_micros(verdict->send_at))
                         : micros_of(admitted[i].step_time));
      rows.number(t.escalation ? 1 : 0);
      // What a step used of its caps, given back if a read suppresses it (escalation checks).
      if (t.escalation && verdict != nullptr && !verdict->counted.empty()) {
        boost::json::array counted;
        for (const auto& [counter, start] : verdict->counted)
          counted.push_back(
              boost::json::array{boost::json::string(counter), domain::to_unix_micros(start)});
        rows.text(boost::json::serialize(counted));
      } else {
        rows.null();
      }
      if (t.own_content)
        rows.text(t.own_content->title).text(t.own_content->body);
      else
        rows.null().null();
    }
    return rows;
  }

  json_batch messages;
  std::vector<domain::claim_slot> slots;                     // one per distinct task
  std::unordered_map<std::string_view, std::size_t> slot_of; // task id -> index into `slots`
};

struct claim_answer {
  std::string task_id;
  domain::task_state state = domain::task_state::pending;
  bool created = false;
  std::optional<domain::policy_reason> policy_reason; ///< policy's, when this claim created it
};

/// What a claim wrote: one answer per distinct task, and the messages it inserted (their
/// content is the plan's; only the others need reading back).
struct claimed_rows {
  std::vector<claim_answer> answers;
  std::unordered_set<std::string> new_messages;
};

/// One answer per planned task, in plan order, each with its message as stored.
std::vector<claim_result>
claim_results(const std::vector<domain::message_plan>& plans, const claim_batch& batch,
              const std::vector<claim_answer>& answers,
              const std::unordered_map<std::string, domain::message_record>& stored) {
  std::vector<claim_result> results;
  results.reserve(plans.size());
  std::vector<bool> answered(answers.size(), false);
  for (const auto& plan : plans) {
    auto found = stored.find(plan.message.id);
    claim_result result{plan.message.id, {}, found != stored.end() ? found->second : plan.message};
    result.tasks.reserve(plan.tasks.size());
    for (const auto& t : plan.tasks) {
      const std::size_t slot = batch.slot_of.at(t.id);
      const claim_answer& a = answers[slot];
      const bool created = a.created && !answered[slot];
      result.tasks.push_back(claim_outcome{a.task_id, t.channel, a.state, created, a.policy_reason,
                                           batch.slots[slot].task->recipient});
      answered[slot] = true;
    }
    results.push_back(std::move(result));
  }
  return results;
}

/// State changes in rounds (the k-th change of each task goes in round k, so a task changed
/// twice in one batch, SENDING then SENT, has the first change applied before the second is
/// checked against it), and attempts, as JSON.
struct apply_batch {
  apply_batch(const dialect& dialect, const std::vector<state_change>& changes,
              const std::vector<attempt_record>& attempt_records)
      : attempts(dialect, attempt_row_columns) {
    std::unordered_map<std::string_view, std::size_t> seen;
    round_of.reserve(changes.size());
    for (const auto& c : changes) {
      const std::size_t round = seen[c.task_id]++;
      if (round == rounds.size())
        rounds.emplace_back(dialect, change_columns);
      round_of.push_back(round);
      auto& rows = rounds[round];
      rows.add_row();
      rows.text(c.task_id)
          .text(domain::to_string(c.from))
          .text(domain::to_string(c.to))
          .number(c.attempts)
          .time(micros_of(c.next_attempt_at))
          .text(domain::mask_free_text(c.last_error))
          .number(domain::to_unix_micros(c.at));
      if (c.lease_owner)
        rows.text(*c.lease_owner);
      else
        rows.null();
      rows.time(micros_of(c.lease_until));
      if (c.lease_token)
        rows.text(*c.lease_token);
      else
        rows.null();
      if (c.provider_message_id)
        rows.text(*c.provider_message_id);
      else
        rows.null();
      if (c.status_questions)
        rows.number(*c.status_questions);
      else
        rows.null();
      rows.time(micros_of(c.next_question_at));
    }
    for (const auto& a : attempt_records) {
      attempts.add_row();
      attempts.text(a.task_id)
          .number(a.attempt_no)
          .text(a.provider_request_id)
          .text(a.outcome)
          // Error text comes from providers and may quote the recipient or a credential; a
          // success's detail is the provider's message id and stays as it is.
          .text(a.outcome == "success" ? a.detail : domain::mask_free_text(a.detail))
          .number(domain::to_unix_micros(a.started_at))
          .number(domain::to_unix_micros(a.finished_at));
    }
  }

  std::vector<json_batch> rounds;
  std::vector<std::size_t> round_of; // per change
  json_batch attempts;
};

} // namespace store_detail

using store_detail::apply_batch;
using store_detail::claim_answer;
using store_detail::claim_batch;
using store_detail::claimed_rows;

claimed_rows sql_task_store::run_claim(const claim_batch& batch, domain::admission* policy) {
  // Rows are inserted in id order so concurrent claims lock keys in the same order and cannot
  // deadlock each other.
  static const std::string message_list =
      "id, tenant, biz_type, biz_id, user_id, template_name, params_json, recipients_json, title, "
      "body, category, priority, send_at, expire_at, trace_id, created_at, template_version";
  const std::string insert_messages =
      "INSERT INTO messages (" + message_list +
      ") SELECT r.m_id, r.tenant, r.biz_type, r.biz_id, r.user_id, r.template_name, "
      "r.params_json, r.recipients_json, r.title, r.body, r.category, r.priority, r.send_at, "
      "r.expire_at, r.trace_id, r.created_at, r.template_version FROM " +
      dialect_.json_rows("rows", message_columns) +
      " WHERE true ORDER BY r.m_id ON CONFLICT DO NOTHING RETURNING id";
  const std::string insert_tasks =
      "INSERT INTO tasks (id, message_id, tenant, biz_type, biz_id, user_id, channel, recipient, "
      "provider_request_id, status, priority, attempts, created_at, updated_at, policy_reason, "
      "send_at, escalation, counted_json, content_title, content_body) SELECT r.t_id, "
      "r.message_id, r.tenant, r.biz_type, r.biz_id, r.user_id, r.channel, r.recipient, "
      "r.provider_request_id, r.status, r.priority, 0, r.created_at, r.created_at, r.reason, "
      "r.deferred_to, r.escalation, r.counted, r.content_title, r.content_body FROM " +
      dialect_.json_rows("rows", task_columns) +
      " WHERE true ORDER BY r.t_id ON CONFLICT DO NOTHING RETURNING id";
  // Existing tasks are found by their business key: the unique index every key maps to.
  const std::string select_existing =
      "SELECT r.slot, t.id, t.status, t.policy_reason FROM " +
      dialect_.json_rows("rows", key_columns) +
      " JOIN tasks t ON t.tenant = r.tenant AND t.biz_type = r.biz_type AND t.biz_id = r.biz_id "
      "AND t.user_id = r.user_id AND t.channel = r.channel";

  claimed_rows claimed;
  std::vector<std::optional<claim_answer>> slots(batch.slots.size());
  if (!batch.messages.empty())
    for (const auto& row : statements_->fetch(insert_messages, {batch.messages.finish()}, 1))
      claimed.new_messages.insert(text_of(row[0]));
  // Answers the unanswered slots `wanted` picks with the tasks stored under their keys.
  const auto find_existing = [&](const auto& wanted) {
    json_batch keys(dialect_, key_columns);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (slots[i] || !wanted(i))
        continue;
      const auto* m = batch.slots[i].message;
      const auto* t = batch.slots[i].task;
      keys.add_row();
      keys.number(static_cast<std::int64_t>(i))
          .text(m->key.tenant)
          .text(m->key.biz_type)
          .text(m->key.biz_id)
          .text(m->key.user_id)
          .text(t->channel);
    }
    if (keys.empty())
      return;
    for (const auto& row : statements_->fetch(select_existing, {keys.finish()}, 4)) {
      auto slot = static_cast<std::size_t>(to_int(row[0]));
      if (slot < slots.size())
        slots[slot] = claim_answer{text_of(row[1]), state_of(row[2]), false,
                                   domain::parse_policy_reason(text_of(row[3]))};
    }
  };
  // A resubmission's tasks (its message was there already) mostly exist: read them first.
  // Left to the INSERT, each would be a conflict on the unique key, and a conflict with a row
  // the state writer is updating waits for that transaction's COMMIT (fsync included): on
  // PostgreSQL that made claims with resubmissions take ~1 ms per row.
  find_existing(
      [&](std::size_t i) { return claimed.new_messages.count(batch.slots[i].message->id) == 0; });
  // Policy decides the tasks about to be created (domain::admit).
  std::vector<bool> stored(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i)
    stored[i] = slots[i].has_value();
  const auto admitted = domain::admit(batch.slots, stored, policy);
  json_batch new_tasks = batch.task_rows(
      dialect_, [&](std::size_t i) { return !slots[i]; }, admitted);
  cap_counts admissions; // what the admitted tasks add to their counters
  if (!new_tasks.empty())
    for (const auto& row : statements_->fetch(insert_tasks, {new_tasks.finish()}, 1)) {
      auto it = batch.slot_of.find(text_of(row[0]));
      if (it == batch.slot_of.end())
        continue;
      claim_answer answer{std::string(it->first), domain::task_state::pending, true, std::nullopt};
      if (const auto& verdict = admitted[it->second].verdict) {
        const auto& key = batch.slots[it->second].message->key;
        answer.policy_reason = verdict->reason;
        if (verdict->decision == domain::policy_verdict::kind::suppress) {
          answer.state = domain::task_state::suppressed;
          note_entered(answer.task_id, answer.state, batch.slots[it->second].message->created_at);
        }
        for (const auto& [counter, start] : verdict->counted)
          ++admissions[{key.tenant, key.user_id, counter, domain::to_unix_micros(start)}];
      }
      slots[it->second] = std::move(answer);
    }
  if (!admissions.empty())
    statements_->execute(
        "INSERT INTO frequency_counts (tenant, user_id, counter, window_start, used) SELECT "
        "r.tenant, r.user_id, r.counter, r.window_start, r.added FROM " +
            dialect_.json_rows("rows", count_columns) +
            " WHERE true ON CONFLICT (tenant, user_id, counter, window_start) DO UPDATE SET "
            "used = frequency_counts.used + excluded.used",
        {cap_count_rows(dialect_, admissions)});
  // What the INSERT found taken was claimed by a concurrent claim (another node) meanwhile.
  find_existing([](std::size_t) { return true; });
  claimed.answers.reserve(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i])
      throw store_error("claim failed: task " + batch.slots[i].task->id +
                        " was neither inserted nor found (an id used by another key?)");
    claimed.answers.push_back(std::move(*slots[i]));
  }
  return claimed;
}

namespace {

const std::vector<json_column> escalation_check_columns = {text{"task_id"}, {"changed_at", bigint}};

} // namespace

// The escalation steps among `changes` about to be marked SENDING for their first call whose
// message has a task READ (or CLICKED) become SUPPRESSED read_before_escalation instead, with
// their events, and give back what they used of their caps; the SENDING change then finds them
// moved on. PostgreSQL: the message's tasks are locked first, so a READ commits either before
// the check (which sees it: nothing is sent) or after the mark (the send stands).
std::vector<std::string>
sql_task_store::run_escalation_checks(const std::vector<state_change>& changes) {
  json_batch rows(dialect_, escalation_check_columns);
  for (const auto& c : changes)
    if (c.escalation && c.to == domain::task_state::sending && c.attempts == 0 &&
        (c.from == domain::task_state::pending || c.from == domain::task_state::retry_wait)) {
      rows.add_row();
      rows.text(c.task_id).number(domain::to_unix_micros(c.at));
    }
  if (rows.empty())
    return {};
  const auto rows_json = rows.finish();
  if (!dialect_.lock_tasks().empty())
    statements_->fetch("SELECT t.id FROM " + dialect_.json_rows("rows", escalation_check_columns) +
                           " JOIN tasks s ON s.id = r.task_id JOIN tasks t ON " +
                           same_message("t", "s") + " WHERE s.escalation = 1 ORDER BY t.id" +
                           std::string(dialect_.lock_tasks()),
                       {rows_json}, 1);
  const std::string suppress =
      "UPDATE tasks SET status = '" + state_text(domain::task_state::suppressed) +
      "', policy_reason = '" +
      std::string(domain::to_string(domain::policy_reason::read_before_escalation)) +
      "', updated_at = r.changed_at, next_attempt_at = NULL FROM " +
      dialect_.json_rows("rows", escalation_check_columns) +
      " WHERE tasks.id = r.task_id AND tasks.escalation = 1 AND tasks.attempts = 0 AND "
      "tasks.status IN ('" +
      state_text(domain::task_state::pending) + "', '" +
      state_text(domain::task_state::retry_wait) + "') AND EXISTS (SELECT 1 FROM tasks o WHERE " +
      same_message("o", "tasks") + " AND o.status IN ('" + state_text(domain::task_state::read) +
      "', '" + state_text(domain::task_state::clicked) +
      "')) RETURNING id, updated_at, tenant, user_id, counted_json, channel";
  std::vector<std::string> channels;
  // Places given back: one row per counter, as an UPDATE changes a row once however many
  // source rows match it.
  cap_counts unused;
  for (const auto& row : statements_->fetch(suppress, {rows_json}, 6)) {
    note_entered(text_of(row[0]), domain::task_state::suppressed,
                 domain::from_unix_micros(to_int(row[1])));
    channels.push_back(text_of(row[5]));
    boost::system::error_code ec;
    const auto counted = boost::json::parse(text_of(row[4]), ec);
    if (ec || !counted.is_array())
      continue; // counted against no cap
    for (const auto& use : counted.as_array())
      ++unused[{text_of(row[2]), text_of(row[3]), std::string(use.at(0).as_string()),
                use.at(1).to_number<std::int64_t>()}];
  }
  if (!unused.empty())
    statements_->execute("UPDATE frequency_counts SET used = used - r.added FROM " +
                             dialect_.json_rows("rows", count_columns) +
                             " WHERE frequency_counts.tenant = r.tenant AND "
                             "frequency_counts.user_id = r.user_id AND frequency_counts.counter = "
                             "r.counter AND frequency_counts.window_start = r.window_start",
                         {cap_count_rows(dialect_, unused)});
  return channels;
}

std::vector<std::unordered_set<std::string>> sql_task_store::run_changes(const apply_batch& batch) {
  const std::string update =
      "UPDATE tasks SET status = r.to_status, attempts = r.attempt_count, "
      "next_attempt_at = r.next_at, last_error = COALESCE(NULLIF(r.error_text, ''), "
      "tasks.last_error), "
      // A SENT task's updated_at is when it became SENT (the reconciler's window runs from it):
      // noting a status question (SENT -> SENT) leaves it.
      "updated_at = CASE WHEN r.from_status = r.to_status AND r.to_status = '" +
      state_text(domain::task_state::sent) +
      "' THEN tasks.updated_at ELSE r.changed_at END, "
      "status_questions = COALESCE(r.status_questions, tasks.status_questions), "
      "next_question_at = CASE WHEN r.status_questions IS NULL THEN tasks.next_question_at "
      "ELSE r.next_question_at END, "
      // Moved to a fallback after policy deferred it: the reason it is not sent is the failover.
      "policy_reason = CASE WHEN r.to_status = '" +
      state_text(domain::task_state::suppressed) +
      "' THEN NULL ELSE tasks.policy_reason END, lease_owner = r.lease_owner, "
      "lease_until = r.lease_until, lease_token = r.lease_token, "
      "provider_message_id = COALESCE(r.provider_message_id, tasks.provider_message_id) FROM " +
      dialect_.json_rows("rows", change_columns) +
      " WHERE tasks.id = r.task_id AND ((tasks.status = r.from_status"
      // A take for a call sees the attempts its taker read: a stale copy of the task (another
      // node sent it since, and it came back to the same state with more attempts) must not
      // resend it early, nor count its attempts back.
      " AND (r.to_status <> '" +
      state_text(domain::task_state::sending) +
      "' OR tasks.attempts = r.attempt_count)"
      // Taking a SENDING task over (SENDING -> SENDING) needs its lease to have run out, or
      // to be ours already: of two nodes sweeping one expired lease, one wins.
      " AND (r.from_status <> '" +
      state_text(domain::task_state::sending) + "' OR r.to_status <> '" +
      state_text(domain::task_state::sending) +
      "' OR tasks.lease_until IS NULL OR tasks.lease_until <= r.changed_at"
      " OR tasks.lease_owner = r.lease_owner)"
      // An outcome (SENDING -> anything else) belongs to one take: once another take holds
      // the task, a late outcome of the old one must not overwrite it.
      " AND (r.from_status <> '" +
      state_text(domain::task_state::sending) + "' OR r.to_status = '" +
      state_text(domain::task_state::sending) +
      "' OR r.lease_token IS NULL OR tasks.lease_token = r.lease_token))"
      // The same change again, its first answer lost: the row is where it took it. Also how an
      // outcome that keeps the task SENDING under the same take applies (a timed-out call left
      // to be asked about): no other take can hold that token.
      " OR (r.lease_token IS NOT NULL AND tasks.status = r.to_status"
      " AND tasks.lease_token = r.lease_token)) RETURNING id";
  std::vector<std::unordered_set<std::string>> applied_in(batch.rounds.size());
  for (std::size_t round = 0; round < batch.rounds.size(); ++round)
    for (const auto& row : statements_->fetch(update, {batch.rounds[round].finish()}, 1))
      applied_in[round].insert(text_of(row[0]));
  return applied_in;
}

void sql_task_store::run_attempts(const apply_batch& batch) {
  if (batch.attempts.empty())
    return;
  const std::string insert_attempts =
      "INSERT INTO attempts (task_id, attempt_no, provider_request_id, outcome, detail, "
      "started_at, finished_at) SELECT r.task_id, r.attempt_no, r.provider_request_id, "
      "r.outcome, r.detail, r.started_at, r.finished_at FROM " +
      dialect_.json_rows("rows", attempt_row_columns) + " WHERE true ON CONFLICT DO NOTHING";
  statements_->execute(insert_attempts, {batch.attempts.finish()});
}

// ---- status events (the transactional outbox, docs/events.md) ----

bool sql_task_store::writes_event(domain::task_state state) const {
  const auto& states = options_.event_states;
  return std::find(states.begin(), states.end(), state) != states.end();
}

void sql_task_store::note_entered(const std::string& task_id, domain::task_state state,
                                  domain::timestamp at) {
  if (writes_event(state) && domain::event_type_of(state))
    entered_.push_back({task_id, state, at});
}

void sql_task_store::write_events() {
  if (entered_.empty())
    return;
  json_batch rows(dialect_, event_columns);
  for (const auto& e : entered_) {
    const auto type = domain::event_type_of(e.state);
    rows.add_row();
    rows.text(domain::event_id_for(e.task_id, e.state))
        .text(e.task_id)
        .text(*type)
        .number(domain::to_unix_micros(e.at))
        .number(static_cast<std::int64_t>(rows.rows()));
  }
  entered_.clear();
  // The tenant comes from the task row, so the outbox can be split by tenant later; ordered by
  // `ord` so a task entering two states in one batch gets their seq in that order.
  const std::string insert_events =
      "INSERT INTO events (id, task_id, tenant, type, occurred_at, status, attempts) "
      "SELECT r.event_id, r.task_id, t.tenant, r.type, r.occurred_at, 'PENDING', 0 FROM " +
      dialect_.json_rows("rows", event_columns) +
      " JOIN tasks t ON t.id = r.task_id WHERE true ORDER BY r.ord ON CONFLICT DO NOTHING";
  statements_->execute(insert_events, {rows.finish()});
}

domain::admission sql_task_store::read_admission(const std::vector<domain::message_plan>& plans) {
  domain::admission state(
      options_.policy->rules,
      [zones = options_.policy->zones](const std::string& name) { return zones->find(name); });
  json_batch users(dialect_, user_key_columns);
  json_batch capped(dialect_, user_key_columns);
  json_batch lock_keys(dialect_, lock_key_columns);
  std::set<std::pair<std::string_view, std::string_view>> seen, seen_capped;
  for (const auto& plan : plans) {
    const auto& key = plan.message.key;
    // Windows a task may be counted in start at most a day before it is claimed (its day in
    // the furthest zone west); deferred tasks' windows start later.
    const auto since = domain::to_unix_micros(plan.message.created_at - std::chrono::hours{48});
    if (seen.emplace(key.tenant, key.user_id).second) {
      users.add_row();
      users.text(key.tenant).text(key.user_id).number(since);
    }
    if (state.rules().capped(plan.message.category) &&
        seen_capped.emplace(key.tenant, key.user_id).second) {
      capped.add_row();
      capped.text(key.tenant).text(key.user_id).number(since);
      lock_keys.add_row();
      lock_keys.number(user_lock_key(key.tenant, key.user_id));
    }
  }
  // Before the counters are read: a concurrent claim of the same user (another node) waits
  // here until this transaction ends, then reads what it admitted.
  if (const auto lock = dialect_.lock_keys(); !capped.empty() && !lock.empty())
    statements_->fetch(lock, {lock_keys.finish()}, 1);
  for (const auto& row : statements_->fetch("SELECT " + user_columns + " FROM " +
                                                dialect_.json_rows("rows", user_key_columns) +
                                                " JOIN users u ON u.tenant = r.tenant AND "
                                                "u.user_id = r.user_id",
                                            {users.finish()}, user_column_count))
    state.add_user(user_of(row));
  if (!capped.empty())
    for (const auto& row : statements_->fetch(
             "SELECT f.tenant, f.user_id, f.counter, f.window_start, f.used FROM " +
                 dialect_.json_rows("rows", user_key_columns) +
                 " JOIN frequency_counts f ON f.tenant = r.tenant AND f.user_id = r.user_id AND "
                 "f.window_start >= r.since",
             {capped.finish()}, 5)) {
      state.add_usage(text_of(row[0]), text_of(row[1]), text_of(row[2]),
                      domain::from_unix_micros(to_int(row[3])),
                      static_cast<std::uint32_t>(to_int(row[4])));
    }
  return state;
}

std::vector<claim_result> sql_task_store::claim(const std::vector<domain::message_plan>& plans) {
  if (plans.empty())
    return {};
  if (!options_.policy) {
    const claim_batch batch(dialect_, plans);
    auto [answers, stored] = in_transaction("claim", [&] {
      auto claimed = run_claim(batch);
      auto as_stored = stored_messages(plans, claimed.new_messages);
      return std::make_pair(std::move(claimed.answers), std::move(as_stored));
    });
    return claim_results(plans, batch, answers, stored);
  }
  // With policy, the plans as claimed are the users' contacts filled in: read, like the
  // counters, inside the transaction (and again if it reruns). Copied only when a user of the
  // batch has a stored profile.
  std::vector<domain::message_plan> addressed;
  const std::vector<domain::message_plan>* claimed_plans = &plans;
  std::optional<claim_batch> batch;
  auto [answers, stored] = in_transaction("claim", [&] {
    auto policy = read_admission(plans);
    batch.reset(); // it points into the claimed plans
    claimed_plans = &plans;
    if (policy.knows_users()) {
      addressed = plans;
      domain::fill_contacts(addressed, policy);
      claimed_plans = &addressed;
    }
    batch.emplace(dialect_, *claimed_plans);
    auto claimed = run_claim(*batch, &policy);
    auto as_stored = stored_messages(*claimed_plans, claimed.new_messages);
    return std::make_pair(std::move(claimed.answers), std::move(as_stored));
  });
  return claim_results(*claimed_plans, *batch, answers, stored);
}

std::vector<std::string> sql_task_store::apply(const std::vector<state_change>& changes,
                                               const std::vector<attempt_record>& attempts) {
  if (changes.empty() && attempts.empty())
    return {};
  const apply_batch batch(dialect_, changes, attempts);
  std::vector<std::string> suppressed_in; // channels; the last (committed) try's
  auto applied = in_transaction("apply", [&] {
    suppressed_in = run_escalation_checks(changes);
    auto applied_in = run_changes(batch);
    run_attempts(batch);
    for (std::size_t i = 0; i < changes.size(); ++i)
      if (changes[i].from != changes[i].to &&
          applied_in[batch.round_of[i]].count(changes[i].task_id) != 0)
        note_entered(changes[i].task_id, changes[i].to, changes[i].at);
    // After the changes' own events, so a task's task.sent comes before the task.delivered
    // its early receipts make.
    if (options_.takes_receipts) {
      std::vector<std::string> now_sent;
      auto latest = changes.front().at;
      for (std::size_t i = 0; i < changes.size(); ++i)
        if (changes[i].to == domain::task_state::sent &&
            changes[i].from != domain::task_state::sent &&
            applied_in[batch.round_of[i]].count(changes[i].task_id) != 0) {
          now_sent.push_back(changes[i].task_id);
          latest = std::max(latest, changes[i].at);
        }
      run_receipt_catch_up(now_sent, latest);
    }
    return applied_in;
  });
  if (options_.suppressed)
    for (const auto& channel : suppressed_in)
      options_.suppressed(channel, domain::policy_reason::read_before_escalation);
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < changes.size(); ++i)
    if (applied[batch.round_of[i]].count(changes[i].task_id) != 0)
      ids.push_back(changes[i].task_id);
  return ids;
}

namespace {

// A fallback policy will not let through: the user gets nothing on it, so the chain goes on.
bool refused_by_policy(const claim_outcome& outcome) {
  return outcome.state == domain::task_state::suppressed && outcome.policy_reason.has_value();
}

// A fallback this claim created, to be sent (now, or when policy's deferral ends).
bool newly_sendable(const claim_outcome& outcome) {
  return outcome.created && outcome.state != domain::task_state::suppressed;
}

// Thrown inside a failover transaction to roll it back: the fallback's task was there already.
struct fallback_task_exists {};
// Thrown inside a failover transaction to roll it back: no fallback this failover creates would
// be sent, and the task can still wait for its own channel.
struct fallbacks_refused {};

} // namespace

failover_result sql_task_store::fail_over(const state_change& change,
                                          const std::vector<attempt_record>& attempts,
                                          const domain::delivery& failed,
                                          const fallback_routes& routes) {
  auto first = domain::first_fallback_plan(
      failed, domain::fallback_chain(routes.fallback_of, failed.channel), routes.secret, change.at);
  if (!first)
    return {failover_result::outcome::no_fallback, {}};
  const apply_batch changes(dialect_, {change}, attempts);
  const std::vector<domain::message_plan> plans{std::move(*first)};
  std::optional<std::vector<fallback_link>> chain;
  try {
    chain = in_transaction("fail_over", [&]() -> std::optional<std::vector<fallback_link>> {
      // The fallback is judged like any new task (a user's DND, opt-outs, caps); the user
      // lock comes first, before this transaction holds any task row.
      std::optional<domain::admission> policy;
      if (options_.policy)
        policy.emplace(read_admission(plans));
      // The same failover sent again after its answer was lost: the fallback tasks found
      // below are the ones that first commit created, not tasks of their own.
      const bool again =
          change.lease_token &&
          !statements_
               ->fetch("SELECT id FROM tasks WHERE id = :id AND status = :to AND lease_token = "
                       ":token",
                       {change.task_id, state_text(change.to), *change.lease_token}, 1)
               .empty();
      if (run_changes(changes).at(0).count(change.task_id) == 0)
        return std::nullopt; // the task moved on: nothing written, nothing claimed
      run_attempts(changes);
      note_entered(change.task_id, change.to, change.at);
      auto chains = claim_fallback_chains(plans, {failed.channel}, routes,
                                          policy ? &*policy : nullptr, change.at, again);
      auto& links = chains.at(0);
      const auto& first_link = links.front().claim.tasks.front();
      if (!first_link.created && !refused_by_policy(first_link))
        throw fallback_task_exists{}; // giving the task up would send nothing: roll back
      // A task never tried may still go on its own channel once the circuit closes: it leaves
      // only for a fallback this failover creates and will send.
      if (change.to == domain::task_state::suppressed && !again &&
          !newly_sendable(links.back().claim.tasks.front()))
        throw fallbacks_refused{};
      return std::move(links);
    });
  } catch (const fallback_task_exists&) {
    return {failover_result::outcome::fallback_exists, {}};
  } catch (const fallbacks_refused&) {
    return {failover_result::outcome::fallbacks_refused, {}};
  }
  if (!chain)
    return {failover_result::outcome::moved_on, {}};
  return {failover_result::outcome::failed_over, std::move(*chain)};
}

namespace {

bool on_chain(const std::vector<fallback_link>& chain, const std::string& channel) {
  return std::any_of(chain.begin(), chain.end(), [&](const fallback_link& link) {
    return link.claim.tasks.front().channel == channel;
  });
}

} // namespace

// Claims each plan (the first fallback of a task failed on `failed_channels`, in order) inside
// the open transaction and, while policy refuses a chain's last link (SUPPRESSED with a
// policy reason: an opt-out, DND, no contact — created so now, or found so), the next channel
// along that link's chain the message has an address for, a batch per step. A chain ends with
// a task that will be sent, another task that existed already (its channel has its own task
// for the message, or the chain came round), or a refused link with nowhere left to go.
// `again`: the same failover committed before (its answer was lost), so the first link found
// is the one that commit created; tasks further along count as found, and the sweep sends
// any that commit created.
std::vector<std::vector<fallback_link>> sql_task_store::claim_fallback_chains(
    std::vector<domain::message_plan> plans, const std::vector<std::string>& failed_channels,
    const fallback_routes& routes, domain::admission* policy, domain::timestamp now, bool again) {
  std::vector<std::vector<fallback_link>> chains(plans.size());
  std::vector<std::size_t> growing(plans.size()); // the chain each of `plans` extends
  for (std::size_t i = 0; i < growing.size(); ++i)
    growing[i] = i;
  for (bool first_step = true; !plans.empty(); first_step = false) {
    const claim_batch batch(dialect_, plans);
    auto claimed = run_claim(batch, policy);
    if (again && first_step)
      for (auto& answer : claimed.answers)
        answer.created = true;
    auto results =
        claim_results(plans, batch, claimed.answers, stored_messages(plans, claimed.new_messages));
    std::vector<domain::message_plan> next_plans;
    std::vector<std::size_t> next_growing;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      auto& link = chains[growing[i]].emplace_back(
          fallback_link{std::move(plans[i]), std::move(results[i])});
      const auto& outcome = link.claim.tasks.front();
      if (!refused_by_policy(outcome))
        continue;
      // Onwards from the refused channel, never back to a channel this chain has been on.
      auto onwards = domain::fallback_chain(routes.fallback_of, outcome.channel);
      onwards.erase(std::remove_if(onwards.begin(), onwards.end(),
                                   [&](const std::string& channel) {
                                     return channel == failed_channels[growing[i]] ||
                                            on_chain(chains[growing[i]], channel);
                                   }),
                    onwards.end());
      auto refused = domain::make_delivery(link.claim.message, link.plan.tasks.front());
      if (auto next = domain::first_fallback_plan(refused, onwards, routes.secret, now)) {
        next_plans.push_back(std::move(*next));
        next_growing.push_back(growing[i]);
      }
    }
    plans = std::move(next_plans);
    growing = std::move(next_growing);
  }
  return chains;
}

namespace {

const std::vector<json_column> receipt_lookup_columns = {
    {"slot", bigint}, text{"channel"}, text{"wanted_id"}};

const std::vector<json_column> receipt_row_columns = {
    text{"task_id"},         text{"status"}, {"occurred_at", bigint},
    {"received_at", bigint}, text{"source"}, text{"detail"}};

const std::vector<json_column> move_columns = {
    text{"task_id"}, text{"from_status"}, text{"to_status"}, {"changed_at", bigint}};

const std::vector<json_column> inbox_mark_columns = {
    text{"task_id"}, {"first_read", bigint}, {"first_click", bigint}};

} // namespace

namespace store_detail {

/// Where each task of a batch of receipts goes: its state as read, and as the receipts leave it.
struct receipt_moves {
  std::unordered_map<std::string, std::pair<domain::task_state, domain::task_state>> by_task;

  /// Folds one receipt into its task's target; true if it moves the task further.
  bool fold(const std::string& task_id, domain::task_state current, domain::receipt_status status) {
    auto& [from, to] = by_task.try_emplace(task_id, current, current).first->second;
    auto next = domain::state_after_receipt(to, status);
    if (!next)
      return false;
    to = *next;
    return true;
  }
};

} // namespace store_detail

using store_detail::receipt_moves;

// Moves tasks as `moves` says, each guarded by the state it was read in (the rows are locked,
// so the guard holds), with their status events; returns the ids that moved.
std::unordered_set<std::string> sql_task_store::run_moves(const receipt_moves& moves,
                                                          domain::timestamp at) {
  json_batch rows(dialect_, move_columns);
  for (const auto& [task_id, change] : moves.by_task) {
    if (change.first == change.second)
      continue;
    rows.add_row();
    rows.text(task_id)
        .text(domain::to_string(change.first))
        .text(domain::to_string(change.second))
        .number(domain::to_unix_micros(at));
  }
  std::unordered_set<std::string> moved;
  if (rows.empty())
    return moved;
  const std::string update =
      "UPDATE tasks SET status = r.to_status, updated_at = r.changed_at FROM " +
      dialect_.json_rows("rows", move_columns) +
      " WHERE tasks.id = r.task_id AND tasks.status = r.from_status RETURNING id";
  for (const auto& row : statements_->fetch(update, {rows.finish()}, 1)) {
    auto id = text_of(row[0]);
    note_entered(id, moves.by_task.at(id).second, at);
    moved.insert(std::move(id));
  }
  return moved;
}

std::vector<receipt_outcome>
sql_task_store::record_receipts(const std::vector<receipt_input>& receipts,
                                const fallback_routes& failover, domain::timestamp now) {
  if (receipts.empty())
    return {};
  // A receipt names its task by herald's request id, or else by the provider's message id.
  json_batch by_request(dialect_, receipt_lookup_columns);
  json_batch by_message(dialect_, receipt_lookup_columns);
  json_batch by_task(dialect_, receipt_lookup_columns);
  for (std::size_t i = 0; i < receipts.size(); ++i) {
    const auto& r = receipts[i];
    const auto& id = !r.task_id.empty()              ? r.task_id
                     : r.provider_request_id.empty() ? r.provider_message_id
                                                     : r.provider_request_id;
    if (!domain::is_plausible_provider_id(id))
      continue; // names no task (and a NUL would fail the whole batch on PostgreSQL)
    auto& lookup = !r.task_id.empty()              ? by_task
                   : r.provider_request_id.empty() ? by_message
                                                   : by_request;
    lookup.add_row();
    lookup.number(static_cast<std::int64_t>(i)).text(r.channel).text(id);
  }
  const std::string find_prefix = "SELECT r.slot, t.id, t.status FROM " +
                                  dialect_.json_rows("rows", receipt_lookup_columns) +
                                  " JOIN tasks t ON t.channel = r.channel AND ";
  const std::string find_by_request =
      find_prefix + "t.provider_request_id = r.wanted_id" + std::string(dialect_.lock_tasks());
  const std::string find_by_message =
      find_prefix + "t.provider_message_id = r.wanted_id" + std::string(dialect_.lock_tasks());
  const std::string find_by_task =
      find_prefix + "t.id = r.wanted_id" + std::string(dialect_.lock_tasks());
  const std::string insert_receipts =
      "INSERT INTO receipts (task_id, status, occurred_at, received_at, source, detail) "
      "SELECT r.task_id, r.status, r.occurred_at, r.received_at, r.source, r.detail FROM " +
      dialect_.json_rows("rows", receipt_row_columns) +
      " WHERE true ON CONFLICT DO NOTHING RETURNING task_id, status";

  return in_transaction("record_receipts", [&] {
    std::vector<receipt_outcome> outcomes(receipts.size());
    std::vector<domain::task_state> read_state(receipts.size());
    std::set<std::size_t> ambiguous;
    for (auto* lookup : {&by_request, &by_message, &by_task}) {
      if (lookup->empty())
        continue;
      const auto& query = lookup == &by_request   ? find_by_request
                          : lookup == &by_message ? find_by_message
                                                  : find_by_task;
      for (const auto& row : statements_->fetch(query, {lookup->finish()}, 3)) {
        auto slot = static_cast<std::size_t>(to_int(row[0]));
        if (slot >= outcomes.size())
          continue;
        if (!outcomes[slot].task_id.empty()) {
          ambiguous.insert(slot); // a provider message id two tasks got: it names neither
          continue;
        }
        outcomes[slot].task_id = text_of(row[1]);
        read_state[slot] = state_of(row[2]);
      }
    }
    for (auto slot : ambiguous)
      outcomes[slot].task_id.clear();
    json_batch rows(dialect_, receipt_row_columns);
    receipt_moves moves;
    std::vector<bool> moved_by(receipts.size(), false);
    for (std::size_t i = 0; i < receipts.size(); ++i) {
      if (outcomes[i].task_id.empty())
        continue;
      const auto& r = receipts[i].receipt;
      rows.add_row();
      rows.text(outcomes[i].task_id)
          .text(domain::to_string(r.status))
          .number(domain::to_unix_micros(r.occurred_at))
          .number(domain::to_unix_micros(r.received_at))
          .text(domain::to_string(r.source))
          .text(domain::mask_free_text(r.detail));
      moved_by[i] = moves.fold(outcomes[i].task_id, read_state[i], r.status);
    }
    std::set<std::pair<std::string, std::string>> inserted; // (task id, status)
    if (!rows.empty())
      for (const auto& row : statements_->fetch(insert_receipts, {rows.finish()}, 2))
        inserted.emplace(text_of(row[0]), text_of(row[1]));
    run_inbox_marks(receipts, outcomes);
    const auto moved = run_moves(moves, now);
    std::vector<std::string> undelivered;
    for (std::size_t i = 0; i < receipts.size(); ++i) {
      auto& outcome = outcomes[i];
      if (outcome.task_id.empty())
        continue;
      // Of two copies of one receipt in a batch, the first is told it recorded it.
      outcome.first_time =
          inserted.erase(
              {outcome.task_id, std::string(domain::to_string(receipts[i].receipt.status))}) != 0;
      const auto& [from, to] = moves.by_task.at(outcome.task_id);
      outcome.state = moved.count(outcome.task_id) != 0 ? to : from;
      if (moved_by[i] && moved.count(outcome.task_id) != 0) {
        outcome.result = receipt_outcome::outcome::applied;
        if (outcome.state == domain::task_state::undelivered)
          undelivered.push_back(outcome.task_id);
      } else if (domain::is_terminal(outcome.state)) {
        outcome.result = receipt_outcome::outcome::unchanged;
      } else {
        outcome.result = receipt_outcome::outcome::waiting;
      }
    }
    auto fallbacks = claim_fallbacks(undelivered, failover, now);
    for (auto& outcome : outcomes)
      if (auto it = fallbacks.find(outcome.task_id); it != fallbacks.end())
        outcome.fallback = it->second;
    return outcomes;
  });
}

// Marks the inbox items of READ and CLICKED receipts from the inbox, in the open transaction:
// read_at (a click is a read too) and clicked_at, each set once, to the first receipt's time.
void sql_task_store::run_inbox_marks(const std::vector<receipt_input>& receipts,
                                     const std::vector<receipt_outcome>& found) {
  struct marks {
    std::optional<std::int64_t> read;
    std::optional<std::int64_t> clicked;
  };
  std::map<std::string, marks> by_task;
  const auto earliest = [](std::optional<std::int64_t>& mark, std::int64_t at) {
    mark = mark ? std::min(*mark, at) : at;
  };
  for (std::size_t i = 0; i < receipts.size(); ++i) {
    const auto& r = receipts[i].receipt;
    const bool read = r.status == domain::receipt_status::read;
    const bool clicked = r.status == domain::receipt_status::clicked;
    if (found[i].task_id.empty() || r.source != domain::receipt_source::inbox || !(read || clicked))
      continue;
    auto& mark = by_task[found[i].task_id];
    earliest(mark.read, domain::to_unix_micros(r.occurred_at));
    if (clicked)
      earliest(mark.clicked, domain::to_unix_micros(r.occurred_at));
  }
  if (by_task.empty())
    return;
  json_batch rows(dialect_, inbox_mark_columns);
  for (const auto& [task_id, mark] : by_task) {
    rows.add_row();
    rows.text(task_id).time(mark.read).time(mark.clicked);
  }
  statements_->execute("UPDATE inbox SET read_at = COALESCE(read_at, r.first_read), "
                       "clicked_at = COALESCE(clicked_at, r.first_click) FROM " +
                           dialect_.json_rows("rows", inbox_mark_columns) +
                           " WHERE inbox.task_id = r.task_id",
                       {rows.finish()});
}

// For tasks that just became UNDELIVERED: claims the fallback channel's task for each whose
// channel has one (domain::fallback_plan: the same task that channel would have had if asked
// directly), inside the open transaction. Returns the fallback tasks it created, by failed
// task id (a fallback channel with a task of its own already gets nothing new to send).
std::unordered_map<std::string, domain::delivery>
sql_task_store::claim_fallbacks(const std::vector<std::string>& undelivered,
                                const fallback_routes& failover, domain::timestamp now) {
  std::unordered_map<std::string, domain::delivery> created;
  if (undelivered.empty() || failover.fallback_of.empty())
    return created;
  const std::string query = "SELECT " + delivery_columns + " FROM " +
                            dialect_.json_rows("ids", id_columns) +
                            " JOIN tasks t ON t.id = r.task_id JOIN messages m ON m.id = "
                            "t.message_id";
  std::vector<std::string> failed_ids;
  std::vector<std::string> failed_channels;
  std::vector<domain::message_plan> plans;
  for (const auto& row :
       statements_->fetch(query, {id_json_rows(dialect_, undelivered)}, delivery_column_count)) {
    auto failed = delivery_of(row);
    if (auto plan = domain::first_fallback_plan(
            failed, domain::fallback_chain(failover.fallback_of, failed.channel), failover.secret,
            now)) {
      failed_ids.push_back(failed.task_id);
      failed_channels.push_back(failed.channel);
      plans.push_back(std::move(*plan));
    }
  }
  if (plans.empty())
    return created;
  // Judged like any new task (a user's DND, opt-outs, caps). The user lock is taken while
  // this transaction holds task rows: a claim waiting on one of them while holding the lock
  // is a deadlock PostgreSQL breaks, and the transaction reruns.
  std::optional<domain::admission> policy;
  if (options_.policy)
    policy.emplace(read_admission(plans));
  const auto chains = claim_fallback_chains(std::move(plans), failed_channels, failover,
                                            policy ? &*policy : nullptr, now, false);
  for (std::size_t i = 0; i < failed_ids.size(); ++i) {
    const auto& last = chains[i].back();
    if (const auto& outcome = last.claim.tasks.front(); outcome.created && !outcome.policy_reason)
      created.emplace(failed_ids[i],
                      domain::make_delivery(last.claim.message, last.plan.tasks.front()));
  }
  return created;
}

// Receipts that came before their task's SENT commit (a fast provider) were recorded and
// left the task where it was: the commit that makes `sent_ids` SENT applies them, in the same
// transaction, in the order they came; an UNDELIVERED one claims the fallback's task there too
// (left PENDING for the next sweep to dispatch: the channel committing SENT knows nothing of it).
void sql_task_store::run_receipt_catch_up(const std::vector<std::string>& sent_ids,
                                          domain::timestamp at) {
  if (sent_ids.empty())
    return;
  const std::string query = "SELECT r.task_id, c.status FROM " +
                            dialect_.json_rows("ids", id_columns) +
                            " JOIN receipts c ON c.task_id = r.task_id ORDER BY c.received_at";
  receipt_moves moves;
  for (const auto& row : statements_->fetch(query, {id_json_rows(dialect_, sent_ids)}, 2))
    if (auto status = domain::parse_receipt_status(text_of(row[1])))
      moves.fold(text_of(row[0]), domain::task_state::sent, *status);
  std::vector<std::string> undelivered;
  for (const auto& id : run_moves(moves, at))
    if (moves.by_task.at(id).second == domain::task_state::undelivered)
      undelivered.push_back(id);
  auto created = claim_fallbacks(undelivered, options_.fallbacks, at);
  for (const auto& [failed, fallback] : created)
    log::info("store.undelivered_failed_over", {{"task_id", failed},
                                                {"trace_id", fallback.trace_id},
                                                {"fallback_task_id", fallback.task_id}});
}

namespace {

// The condition narrowing a read of a node's own work to `partitions` (nullopt: none), on the
// message id column `message_id`. A task's partition is its message id's first hex byte, so
// this needs no column of its own; the prefixes are written into the statement (two hex digits
// each: nothing a caller controls).
std::string of_partitions(const partition_filter& partitions,
                          const std::string& message_id = "message_id") {
  if (!partitions || partitions->size() >= domain::partition_count)
    return "";
  std::string prefixes;
  for (auto p : *partitions)
    prefixes += (prefixes.empty() ? "'" : ", '") + domain::partition_prefix(p) + "'";
  return " AND substr(" + message_id + ", 5, 2) IN (" + prefixes + ")";
}

} // namespace

// --- The reconciler's reads: SENT tasks past their receipt window ---------------------------

std::vector<awaiting_receipt>
sql_task_store::load_awaiting_receipt(const std::string& channel, domain::timestamp sent_before,
                                      const awaiting_cursor& after, std::size_t limit,
                                      const partition_filter& partitions) {
  if (limit == 0 || (partitions && partitions->empty()))
    return {};
  // A range of the partial index of SENT tasks by (channel, updated_at), resumed after the
  // cursor's (updated_at, id): a page costs the same however many tasks were settled before.
  const std::string query =
      "SELECT " + delivery_columns +
      ", t.provider_message_id, t.updated_at FROM tasks t JOIN messages m ON m.id = t.message_id "
      "WHERE t.status = '" +
      state_text(domain::task_state::sent) +
      "' AND t.channel = :channel AND t.updated_at <= CAST(:before AS BIGINT) AND "
      "(t.updated_at > CAST(:after_at AS BIGINT) OR (t.updated_at = CAST(:same_at AS BIGINT) "
      "AND t.id > :after_id))" +
      of_partitions(partitions, "t.message_id") + " ORDER BY t.updated_at, t.id LIMIT " +
      std::to_string(limit);
  const std::string receipts_query =
      "SELECT c.task_id, c.status, c.source, c.occurred_at, c.received_at, c.detail FROM " +
      dialect_.json_rows("ids", id_columns) + " JOIN receipts c ON c.task_id = r.task_id";
  return outside_transaction("load_awaiting_receipt", [&] {
    std::vector<awaiting_receipt> page;
    std::unordered_map<std::string, std::size_t> index;
    json_batch ids(dialect_, id_columns);
    const auto after_at = micros_text(after.sent_at);
    for (const auto& row : statements_->fetch(
             query, {channel, micros_text(sent_before), after_at, after_at, after.task_id},
             delivery_column_count + 2)) {
      awaiting_receipt awaiting;
      awaiting.task = delivery_of(row);
      awaiting.provider_message_id = text_of(row[delivery_column_count]);
      awaiting.sent_at = domain::from_unix_micros(to_int(row[delivery_column_count + 1]));
      index.emplace(awaiting.task.task_id, page.size());
      ids.add_row();
      ids.text(awaiting.task.task_id);
      page.push_back(std::move(awaiting));
    }
    if (page.empty())
      return page;
    for (const auto& row : statements_->fetch(receipts_query, {ids.finish()}, 6)) {
      auto status = domain::parse_receipt_status(text_of(row[1]));
      auto source = domain::parse_receipt_source(text_of(row[2]));
      auto owner = index.find(text_of(row[0]));
      if (!status || !source || owner == index.end())
        continue; // a receipt this herald cannot read is not one it can settle by
      page[owner->second].receipts.push_back(
          {*status, *source, domain::from_unix_micros(to_int(row[3])),
           domain::from_unix_micros(to_int(row[4])), text_of(row[5])});
    }
    return page;
  });
}

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

std::vector<bool> sql_task_store::admit_pushes(const std::vector<domain::push_seal>& seals,
                                               domain::timestamp now) {
  if (seals.empty())
    return {};
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
  const bool prune_now = now_s - seals_pruned_at_ >= seal_prune_interval_s;
  auto admitted = in_transaction("admit_pushes", [&] {
    if (prune_now)
      statements_->execute(prune, {std::to_string(now_s)});
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
  });
  if (prune_now)
    seals_pruned_at_ = now_s;
  return admitted;
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

std::optional<message_view> sql_task_store::find_message(const std::string& tenant,
                                                         const std::string& message_id) {
  return outside_transaction("find_message", [&]() -> std::optional<message_view> {
    auto messages = statements_->fetch("SELECT " + message_select_columns +
                                           " FROM messages m WHERE m.id = :id" + of_tenant("m."),
                                       {message_id, tenant, tenant}, message_column_count);
    if (messages.empty())
      return std::nullopt;
    message_view view;
    view.message = message_of(messages[0]);

    // By the message's key, the prefix of the tasks' unique index (there is no index on
    // message_id: schema version 7).
    const auto& key = view.message.key;
    for (const auto& t : statements_->fetch(
             "SELECT " + task_view_columns +
                 " FROM tasks t WHERE t.tenant = :tenant AND t.biz_type = :biz_type AND "
                 "t.biz_id = :biz_id AND t.user_id = :user_id AND t.message_id = :id "
                 "ORDER BY t.channel, t.id",
             {key.tenant, key.biz_type, key.biz_id, key.user_id, message_id},
             task_view_column_count))
      view.tasks.push_back(task_view_of(t));
    std::vector<task_view*> tasks;
    for (auto& task : view.tasks)
      tasks.push_back(&task);
    fill_histories(tasks);
    return view;
  });
}

// The claimed messages as stored, by id (the content a created task must be sent with): those
// the claim wrote itself (`written_now`) as their first plan has them, the others read back
// (their first accepted version may differ from every plan here).
std::unordered_map<std::string, domain::message_record>
sql_task_store::stored_messages(const std::vector<domain::message_plan>& plans,
                                const std::unordered_set<std::string>& written_now) {
  const std::string query = "SELECT " + message_select_columns + " FROM " +
                            dialect_.json_rows("ids", id_columns) +
                            " JOIN messages m ON m.id = r.task_id";
  json_batch ids(dialect_, id_columns);
  std::unordered_set<std::string_view> asked;
  std::unordered_map<std::string, domain::message_record> stored;
  for (const auto& plan : plans) {
    if (!asked.insert(plan.message.id).second)
      continue;
    if (written_now.count(plan.message.id) != 0) {
      // Written from its first plan (claim_batch): a later plan of the same message in this
      // batch (another channel, other content) is answered with what was stored.
      stored.emplace(plan.message.id, plan.message);
      continue;
    }
    ids.add_row();
    ids.text(plan.message.id);
  }
  if (ids.empty())
    return stored;
  for (const auto& row : statements_->fetch(query, {ids.finish()}, message_column_count)) {
    auto record = message_of(row);
    stored.emplace(record.id, std::move(record));
  }
  return stored;
}

// The attempts and receipts of `tasks`, each in one query driven by their ids, so it reads only
// their index ranges (a join on message_id let PostgreSQL's generic plan scan them all).
void sql_task_store::fill_histories(const std::vector<task_view*>& tasks) {
  if (tasks.empty())
    return;
  const std::string attempts_query = "SELECT " + attempt_columns + " FROM " +
                                     dialect_.json_rows("ids", id_columns) +
                                     " JOIN attempts a ON a.task_id = r.task_id";
  std::unordered_map<std::string, task_view*> by_id;
  json_batch ids(dialect_, id_columns);
  for (auto* task : tasks) {
    by_id.emplace(task->task_id, task);
    ids.add_row();
    ids.text(task->task_id);
  }
  const auto id_rows = ids.finish();
  for (const auto& a : statements_->fetch(attempts_query, {id_rows}, attempt_column_count)) {
    auto it = by_id.find(text_of(a[0]));
    if (it != by_id.end())
      it->second->attempt_log.push_back(attempt_of(a));
  }
  const std::string receipts_query =
      "SELECT c.task_id, c.status, c.source, c.occurred_at, c.received_at, c.detail FROM " +
      dialect_.json_rows("ids", id_columns) + " JOIN receipts c ON c.task_id = r.task_id";
  for (const auto& c : statements_->fetch(receipts_query, {id_rows}, 6)) {
    auto it = by_id.find(text_of(c[0]));
    auto status = domain::parse_receipt_status(text_of(c[1]));
    auto source = domain::parse_receipt_source(text_of(c[2]));
    if (it == by_id.end() || !status || !source)
      continue;
    it->second->receipts.push_back({*status, *source, domain::from_unix_micros(to_int(c[3])),
                                    domain::from_unix_micros(to_int(c[4])), text_of(c[5])});
  }
  // Ordered here, per task: an ORDER BY over the join let PostgreSQL's planner merge-join
  // along the whole primary key of attempts (every row of the table read for a few tasks).
  for (auto* task : tasks) {
    std::sort(task->attempt_log.begin(), task->attempt_log.end(),
              [](const attempt_record& a, const attempt_record& b) {
                return a.attempt_no < b.attempt_no;
              });
    std::sort(task->receipts.begin(), task->receipts.end(),
              [](const receipt_record& a, const receipt_record& b) {
                if (a.received_at != b.received_at)
                  return a.received_at < b.received_at;
                return domain::to_string(a.status) < domain::to_string(b.status);
              });
  }
}

std::vector<domain::delivery> sql_task_store::load_unfinished(const std::string& after_task_id,
                                                              std::size_t limit,
                                                              domain::timestamp now,
                                                              const unfinished_filter& which) {
  if (limit == 0)
    return {};
  using domain::task_state;
  if (which.partitions && which.partitions->empty())
    return {}; // a node that owns no partition recovers nothing
  const std::string of_channel = " AND (CAST(:channel# AS TEXT) = '' OR channel = :one_channel#)" +
                                 of_partitions(which.partitions);
  const auto& channel = which.channel;
  const auto due_by = which.due_by ? micros_text(*which.due_by)
                                   : std::to_string(std::numeric_limits<std::int64_t>::max());
  const std::string query =
      "SELECT " + delivery_columns + " FROM (" +
      page_of_ids(
          {{task_state::pending,
            // Deferred by policy: like a retry, read by the last sweep before it is due.
            of_channel + " AND (send_at IS NULL OR send_at <= CAST(:due_by# AS BIGINT))"},
           {task_state::retry_wait,
            of_channel +
                " AND (next_attempt_at IS NULL OR next_attempt_at <= CAST(:due_by# AS BIGINT))"},
           {task_state::sending,
            of_channel + " AND (lease_until IS NULL OR lease_until <= CAST(:now# AS BIGINT))"}},
          limit) +
      ") AS page JOIN tasks t ON t.id = page.id JOIN messages m ON m.id = t.message_id "
      "ORDER BY t.id LIMIT " +
      std::to_string(limit);
  return outside_transaction("load_unfinished", [&] {
    std::vector<domain::delivery> deliveries;
    for (const auto& row :
         statements_->fetch(query,
                            {channel, channel, due_by, after_task_id, channel, channel, due_by,
                             after_task_id, channel, channel, micros_text(now), after_task_id},
                            delivery_column_count))
      deliveries.push_back(delivery_of(row));
    return deliveries;
  });
}

std::vector<domain::delivery>
sql_task_store::load_deliveries(const std::vector<std::string>& task_ids, domain::timestamp now) {
  json_batch ids(dialect_, id_columns);
  std::unordered_set<std::string_view> seen;
  for (const auto& id : task_ids)
    if (seen.insert(id).second) {
      ids.add_row();
      ids.text(id);
    }
  if (ids.empty())
    return {};
  using domain::task_state;
  const std::string unfinished =
      "t.status IN ('" + state_text(task_state::pending) + "', '" +
      state_text(task_state::retry_wait) + "') OR (t.status = '" + state_text(task_state::sending) +
      "' AND (t.lease_until IS NULL OR t.lease_until <= CAST(:now AS BIGINT)))";
  // One primary-key look-up per id: the retry timer reads what came due a batch at a time.
  const std::string query = "SELECT " + delivery_columns + " FROM " +
                            dialect_.json_rows("ids", id_columns) +
                            " JOIN tasks t ON t.id = r.task_id JOIN messages m ON m.id = "
                            "t.message_id WHERE (" +
                            unfinished + ") ORDER BY t.id";
  const auto rows = ids.finish();
  return outside_transaction("load_deliveries", [&] {
    std::vector<domain::delivery> deliveries;
    for (const auto& row :
         statements_->fetch(query, {rows, micros_text(now)}, delivery_column_count))
      deliveries.push_back(delivery_of(row));
    return deliveries;
  });
}

std::vector<dead_letter> sql_task_store::list_dead_letters(const std::string& tenant,
                                                           const dead_letter_filter& filter,
                                                           const std::string& after_task_id,
                                                           std::size_t limit) {
  if (limit == 0)
    return {};
  using domain::task_state;
  const std::string of_channel =
      " AND (CAST(:channel# AS TEXT) = '' OR channel = :other_channel#)" + of_tenant("", "#") +
      (filter.coverage ? coverage_condition(*filter.coverage) : std::string{});
  const std::string tasks_query =
      "SELECT t.message_id, " + task_view_columns + " FROM (" +
      page_of_ids({{task_state::dead, of_channel},
                   {task_state::failed, of_channel},
                   {task_state::suppressed, of_channel + " AND policy_reason IS NULL"},
                   // Its status questions went unanswered: whether it arrived is unknown.
                   {task_state::unconfirmed, of_channel + " AND status_questions > 0"}},
                  limit) +
      ") AS page JOIN tasks t ON t.id = page.id ORDER BY t.id LIMIT " + std::to_string(limit);
  // The other tasks of the letters' messages, found by the message's business key.
  const std::string others_query = "SELECT s.id, o.id, o.channel, o.status, o.policy_reason FROM " +
                                   dialect_.json_rows("ids", id_columns) +
                                   " JOIN tasks s ON s.id = r.task_id JOIN tasks o ON " +
                                   same_message("o", "s") + " AND o.id <> s.id ORDER BY o.id";
  const auto& channel = filter.channel;
  return outside_transaction("list_dead_letters", [&] {
    std::vector<dead_letter> letters;
    std::unordered_map<std::string, std::size_t> index;
    json_batch ids(dialect_, id_columns);
    for (const auto& row :
         statements_->fetch(tasks_query, {channel, channel, tenant, tenant, after_task_id,
                                          channel, channel, tenant, tenant, after_task_id,
                                          channel, channel, tenant, tenant, after_task_id,
                                          channel, channel, tenant, tenant, after_task_id},
                            1 + task_view_column_count)) {
      dead_letter letter;
      letter.message_id = text_of(row[0]);
      letter.task = task_view_of(sql_row(row.begin() + 1, row.end()));
      index.emplace(letter.task.task_id, letters.size());
      ids.add_row();
      ids.text(letter.task.task_id);
      letters.push_back(std::move(letter));
    }
    if (letters.empty())
      return letters;
    for (const auto& row : statements_->fetch(others_query, {ids.finish()}, 5))
      letters[index.at(text_of(row[0]))].other_tasks.push_back(
          {text_of(row[1]), text_of(row[2]), state_of(row[3]),
           domain::parse_policy_reason(text_of(row[4]))});
    std::vector<task_view*> tasks;
    for (auto& letter : letters) {
      std::vector<task_state> others;
      for (const auto& other : letter.other_tasks)
        others.push_back(other.state);
      letter.coverage = domain::coverage_of(others);
      tasks.push_back(&letter.task);
    }
    fill_histories(tasks);
    return letters;
  });
}

replay_result sql_task_store::replay(const std::string& tenant, const std::string& task_id,
                                     domain::timestamp now) {
  // One guarded statement decides: of two concurrent replays, exactly one finds the row DEAD,
  // FAILED or SUPPRESSED. The attempt count is kept (attempts already made stay counted). A
  // task policy suppressed (DND, an opt-out, a full cap) is a decision, not a failure: replaying
  // it would send what the user or the cap said not to.
  const std::string update =
      "UPDATE tasks SET status = '" + state_text(domain::task_state::pending) +
      "', next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL, "
      "updated_at = CAST(:now AS BIGINT) WHERE id = :id AND status IN ('" +
      state_text(domain::task_state::dead) + "', '" + state_text(domain::task_state::failed) +
      "', '" + state_text(domain::task_state::suppressed) + "') AND policy_reason IS NULL" +
      of_tenant("") + " RETURNING id";
  const std::string select_delivery = "SELECT " + delivery_columns +
                                      " FROM tasks t JOIN messages m ON m.id = t.message_id "
                                      "WHERE t.id = :id" +
                                      of_tenant("t.");
  return in_transaction("replay", [&] {
    replay_result result;
    const bool replayed =
        !statements_->fetch(update, {micros_text(now), task_id, tenant, tenant}, 1).empty();
    auto rows =
        statements_->fetch(select_delivery, {task_id, tenant, tenant}, delivery_column_count);
    if (rows.empty()) {
      result.result = replay_result::outcome::not_found;
      return result;
    }
    auto delivery = delivery_of(rows[0]);
    result.state = delivery.state;
    if (replayed) {
      result.result = replay_result::outcome::replayed;
      result.task = std::move(delivery);
    } else {
      result.result = replay_result::outcome::not_replayable;
    }
    return result;
  });
}

std::vector<state_count> sql_task_store::count_by_state() {
  return outside_transaction("count_by_state", [&] {
    std::vector<state_count> counts;
    for (const auto& row : statements_->fetch(
             "SELECT status, COUNT(*) FROM tasks GROUP BY status ORDER BY status", {}, 2))
      counts.push_back(state_count{state_of(row[0]), static_cast<std::uint64_t>(to_int(row[1]))});
    return counts;
  });
}

stats_report sql_task_store::stats(const stats_query& which) {
  constexpr std::int64_t open_end = std::numeric_limits<std::int64_t>::max();
  const auto from = std::to_string(which.from ? domain::to_unix_micros(*which.from) : 0);
  const auto to = std::to_string(which.to ? domain::to_unix_micros(*which.to) : open_end);
  // One statement, one snapshot and one pass over the selected tasks (a CTE named twice is
  // computed once by both databases): kind 0 rows count them per channel, state and policy
  // reason; the kind 1 row, the messages they belong to.
  const std::string query =
      "WITH s AS (SELECT t.channel, t.status, t.policy_reason, t.message_id FROM tasks t WHERE "
      "t.created_at >= :from AND t.created_at < :to AND (CAST(:channel AS TEXT) = '' OR "
      "t.channel = :same_channel)" +
      of_tenant("t.") +
      ") SELECT 0, channel, status, policy_reason, count(*) FROM s GROUP BY channel, status, "
      "policy_reason UNION ALL SELECT 1, '', '', '', count(DISTINCT message_id) FROM s "
      "ORDER BY 1, 2, 3";
  return outside_transaction("stats", [&] {
    stats_report report;
    auto& out = report.channels;
    for (const auto& row : statements_->fetch(
             query, {from, to, which.channel, which.channel, which.tenant, which.tenant}, 5)) {
      const auto count = static_cast<std::uint64_t>(to_int(row[4]));
      if (to_int(row[0]) == 1) {
        report.messages = count;
        continue;
      }
      auto channel = text_of(row[1]);
      if (out.empty() || out.back().channel != channel)
        out.push_back({channel, {}, {}, {}});
      auto& stats = out.back();
      const auto state = state_of(row[2]);
      if (stats.states.empty() || stats.states.back().state != state)
        stats.states.push_back({state, 0});
      stats.states.back().count += count;
      if (const auto reason = text_of(row[3]); !reason.empty())
        (state == domain::task_state::suppressed ? stats.suppressed_by_policy
                                                 : stats.deferred_by_policy)[reason] += count;
    }
    return report;
  });
}

std::size_t sql_task_store::release_leases(const std::string& node_name, domain::timestamp now) {
  // substr, not LIKE: a node name may contain '%' or '_'. The exact length keeps "eu" from
  // matching the owners of a node named "eu/2".
  const std::string update =
      "UPDATE tasks SET lease_until = CAST(:now AS BIGINT) WHERE status = '" +
      state_text(domain::task_state::sending) +
      "' AND (lease_owner = :owner OR (substr(lease_owner, 1, CAST(:length AS INTEGER)) = "
      ":prefix AND length(lease_owner) = CAST(:owner_length AS INTEGER))) AND lease_until > "
      "CAST(:later AS BIGINT) RETURNING id";
  const std::string release_claims =
      "UPDATE events SET claimed_until = CAST(:now AS BIGINT) WHERE status = 'PENDING' AND "
      "(claimed_by = :owner OR (substr(claimed_by, 1, CAST(:length AS INTEGER)) = :prefix AND "
      "length(claimed_by) = CAST(:owner_length AS INTEGER))) AND claimed_until > "
      "CAST(:later AS BIGINT)";
  return in_transaction("release_leases", [&] {
    const auto now_text = micros_text(now);
    const auto prefix = node_name + "/";
    const auto owner_length = prefix.size() + lease_incarnation_length;
    const std::vector<std::string> values{
        now_text, node_name, std::to_string(prefix.size()), prefix, std::to_string(owner_length),
        now_text};
    statements_->execute(release_claims, values);
    return statements_->fetch(update, values, 1).size();
  });
}

std::vector<status_event> sql_task_store::claim_due_events(const event_claim& claim,
                                                           std::size_t limit) {
  const bool claims_new = limit > 0 && !(claim.partitions && claim.partitions->empty());
  if (!claims_new && claim.held.empty())
    return {};
  // A task's later events wait while an earlier one is PENDING (delivered or dead lets them
  // go): an event is due only when its seq is its task's lowest PENDING one, a correlated
  // min() the partial index of PENDING events by (task_id, seq) answers in one probe; the one by
  // seq gives the order. The pick is a materialized CTE, run once: written as `id IN (subquery)`
  // over freshly created tables (no statistics yet), PostgreSQL re-ran the subquery for every
  // outer row and scanned the index for every NOT EXISTS, seconds per claim. PostgreSQL locks
  // the rows it picks and passes over those another transaction holds (a claim, a renewal, an
  // outcome being written) instead of waiting behind it. The claim is checked again on the row
  // being updated: of two nodes claiming at once (partitions moving), the second finds the
  // first's claim and skips. `prefix` names the events table ("e." in the pick, nothing on the
  // updated row).
  auto unclaimed = [](const std::string& prefix, const std::string& now) {
    return "(" + prefix + "claimed_until IS NULL OR " + prefix + "claimed_until <= CAST(:" + now +
           " AS BIGINT))";
  };
  const std::string claim_update =
      "WITH picked AS MATERIALIZED (SELECT e.id FROM events e JOIN tasks t ON t.id = e.task_id "
      "WHERE e.status = 'PENDING' AND (e.next_attempt_at IS NULL OR e.next_attempt_at <= "
      "CAST(:due AS BIGINT)) AND " +
      unclaimed("e.", "now1") + of_partitions(claim.partitions, "t.message_id") +
      " AND e.seq = (SELECT min(p.seq) FROM events p WHERE p.task_id = e.task_id AND p.status = "
      "'PENDING') ORDER BY e.seq LIMIT " +
      std::to_string(limit) + dialect_.skip_locked("e") +
      ") UPDATE events SET claimed_by = :owner, claimed_until = CAST(:until AS BIGINT) WHERE id "
      "IN (SELECT id FROM picked) AND status = 'PENDING' AND " +
      unclaimed("", "now2") + " RETURNING id";
  const std::string details =
      "SELECT e.seq, e.id, e.type, e.occurred_at, e.attempts, e.task_id, t.message_id, e.tenant, "
      "t.biz_type, t.biz_id, t.user_id, t.channel FROM " +
      dialect_.json_rows("ids", id_columns) +
      " JOIN events e ON e.id = r.task_id JOIN tasks t ON t.id = e.task_id ORDER BY e.seq";
  // Renewed by owner and id: a claim another node took after this one ran out stays its.
  const std::string renew =
      "UPDATE events SET claimed_until = CAST(:until AS BIGINT) WHERE claimed_by = :owner AND "
      "status = 'PENDING' AND id IN (SELECT r.task_id FROM " +
      dialect_.json_rows("ids", id_columns) + ")";
  return in_transaction("claim_due_events", [&] {
    const auto now = micros_text(claim.now);
    if (!claim.held.empty())
      statements_->execute(
          renew, {micros_text(claim.until), claim.owner, id_json_rows(dialect_, claim.held)});
    std::vector<status_event> events;
    if (!claims_new)
      return events;
    json_batch ids(dialect_, id_columns);
    for (const auto& row : statements_->fetch(
             claim_update, {now, now, claim.owner, micros_text(claim.until), now}, 1)) {
      ids.add_row();
      ids.text(text_of(row[0]));
    }
    if (ids.empty())
      return events;
    for (const auto& row : statements_->fetch(details, {ids.finish()}, 12)) {
      status_event e;
      e.seq = to_int(row[0]);
      e.id = text_of(row[1]);
      e.type = text_of(row[2]);
      e.occurred_at = domain::from_unix_micros(to_int(row[3]));
      e.attempts = static_cast<std::uint32_t>(to_int(row[4]));
      e.task_id = text_of(row[5]);
      e.message_id = text_of(row[6]);
      e.tenant = text_of(row[7]);
      e.biz_type = text_of(row[8]);
      e.biz_id = text_of(row[9]);
      e.user_id = text_of(row[10]);
      e.channel = text_of(row[11]);
      events.push_back(std::move(e));
    }
    return events;
  });
}

void sql_task_store::settle_events(const std::vector<event_outcome>& outcomes) {
  if (outcomes.empty())
    return;
  json_batch rows(dialect_, event_outcome_columns);
  for (const auto& o : outcomes) {
    const bool finished = o.result != event_outcome::outcome::retry;
    rows.add_row();
    rows.text(o.event_id)
        .text(o.result == event_outcome::outcome::delivered ? "DELIVERED"
              : finished                                    ? "DEAD"
                                                            : "PENDING")
        .number(o.attempts)
        .time(finished ? std::nullopt : micros_of(o.next_attempt_at))
        .text(domain::mask_free_text(o.last_error))
        .time(finished ? std::optional<std::int64_t>{domain::to_unix_micros(o.at)} : std::nullopt)
        .number(domain::to_unix_micros(o.at));
  }
  const std::string update =
      "UPDATE events SET status = r.status, attempts = r.attempt_count, next_attempt_at = "
      "r.next_at, last_error = COALESCE(NULLIF(r.error_text, ''), events.last_error), "
      "finished_at = r.finished_at, claimed_by = NULL, claimed_until = NULL FROM " +
      dialect_.json_rows("rows", event_outcome_columns) +
      " WHERE events.id = r.event_id AND events.status = 'PENDING'";
  in_transaction("settle_events", [&] {
    statements_->execute(update, {rows.finish()});
    return 0;
  });
}

std::uint64_t sql_task_store::count_pending_events() {
  return outside_transaction("count_pending_events", [&] {
    auto rows = statements_->fetch("SELECT COUNT(*) FROM events WHERE status = 'PENDING'", {}, 1);
    return static_cast<std::uint64_t>(rows.empty() ? 0 : to_int(rows[0][0]));
  });
}

void sql_task_store::ping() {
  outside_transaction("ping", [&] {
    auto rows = statements_->fetch("SELECT 1", {}, 1);
    if (rows.size() != 1 || to_int(rows[0][0]) != 1)
      throw store_error("ping failed: unexpected answer");
    return 0;
  });
}

std::unique_ptr<task_store> open_task_store(const database_url& url, bool migrate,
                                            store_options options) {
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
  return std::make_unique<sql_task_store>(url, std::move(sql), std::move(options));
}

int migrate(const database_url& url) {
  auto sql = connect(url);
  return apply_migrations(*sql, dialect(url.backend));
}

} // namespace herald::persistence
