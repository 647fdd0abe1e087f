#pragma once

// What the parts of sql_task_store (sql_*.cpp) share: row conversions, column lists and the
// batch types of its statements, and the transaction runner. Internal to src/persistence.

#include "domain/masking.hpp"
#include "domain/status_event.hpp"
#include "observability/log.hpp"
#include "persistence/connection.hpp"
#include "persistence/schema.hpp"
#include "persistence/sql.hpp"
#include "persistence/sql_task_store.hpp"
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

namespace store_detail {

using text = json_column;

constexpr auto bigint = json_column::type::bigint;

/// How often a transaction that hit a deadlock, a busy database or a unique violation is rerun
/// before the error is reported. A rerun re-reads what the other writer committed.
constexpr int max_tries = 4;

inline std::optional<domain::timestamp> time_of(const sql_cell& cell) {
  if (!cell)
    return std::nullopt;
  return domain::from_unix_micros(to_int(cell));
}

inline std::string text_of(const sql_cell& cell) {
  return cell ? *cell : std::string();
}

inline std::string state_text(domain::task_state state) {
  return std::string(domain::to_string(state));
}

inline domain::task_state state_of(const sql_cell& cell) {
  auto state = domain::parse_task_state(text_of(cell));
  if (!state)
    throw store_error("unknown task status '" + text_of(cell) + "' in the database");
  return *state;
}

inline domain::priority priority_of(const sql_cell& cell) {
  auto value = domain::parse_priority(text_of(cell));
  if (!value)
    throw store_error("unknown priority '" + text_of(cell) + "' in the database");
  return *value;
}

inline domain::category category_of(const sql_cell& cell) {
  auto value = domain::parse_category(text_of(cell));
  if (!value)
    throw store_error("unknown category '" + text_of(cell) + "' in the database");
  return *value;
}

inline std::string params_json(const std::map<std::string, std::string>& params) {
  boost::json::object object;
  for (const auto& [key, value] : params)
    object[key] = value;
  return boost::json::serialize(object);
}

inline std::map<std::string, std::string> params_of(const sql_cell& cell, const char* column) {
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

inline std::vector<std::string> strings_of(const sql_cell& cell, const char* column) {
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
inline const std::string user_columns =
    "u.tenant, u.user_id, u.contacts_json, u.time_zone, u.locale, u.opted_out_channels_json, "
    "u.opted_out_categories_json, u.dnd, u.dnd_until, u.updated_at";

constexpr std::size_t user_column_count = 10;

inline domain::user_profile user_of(const sql_row& row) {
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
inline std::string numbered(std::string condition, const std::string& n) {
  for (auto at = condition.find('#'); at != std::string::npos;
       at = condition.find('#', at + n.size()))
    condition.replace(at, 1, n);
  return condition;
}

inline std::string page_of_ids(const std::vector<std::pair<domain::task_state, std::string>>& parts,
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
inline std::string same_message(const std::string& a, const std::string& b) {
  return a + ".tenant = " + b + ".tenant AND " + a + ".biz_type = " + b + ".biz_type AND " + a +
         ".biz_id = " + b + ".biz_id AND " + a + ".user_id = " + b + ".user_id";
}

/// Columns of a delivery: tasks `t` joined with their message `m` (see delivery_of).
inline const std::string delivery_columns =
    "t.id, t.message_id, t.tenant, t.biz_type, t.biz_id, t.user_id, m.recipients_json, "
    "t.channel, t.recipient, t.provider_request_id, COALESCE(t.content_title, m.title), "
    "COALESCE(t.content_body, m.body), m.trace_id, m.priority, "
    "t.status, t.attempts, t.next_attempt_at, COALESCE(t.send_at, m.send_at), m.expire_at, "
    "m.created_at, t.escalation, m.category, t.status_questions, t.next_question_at";

constexpr std::size_t delivery_column_count = 24;

inline domain::delivery delivery_of(const sql_row& row) {
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
inline const std::string message_select_columns =
    "m.id, m.tenant, m.biz_type, m.biz_id, m.user_id, m.template_name, m.params_json, m.title, "
    "m.body, m.category, m.priority, m.send_at, m.expire_at, m.trace_id, m.created_at, "
    "m.recipients_json, m.template_version";

constexpr std::size_t message_column_count = 17;

inline domain::message_record message_of(const sql_row& m) {
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

/// The condition limiting rows of `table_prefix` ("m.", "t." or "") to the tenant bound twice
/// next (an empty tenant: every tenant); `suffix` numbers the parameters inside page_of_ids.
inline std::string of_tenant(const std::string& table_prefix, const std::string& suffix = "") {
  return " AND (CAST(:tenant" + suffix + " AS TEXT) = '' OR " + table_prefix +
         "tenant = :same_tenant" + suffix + ")";
}

inline std::string micros_text(domain::timestamp at) {
  return std::to_string(domain::to_unix_micros(at));
}

inline std::optional<std::int64_t> micros_of(const std::optional<domain::timestamp>& at) {
  if (!at)
    return std::nullopt;
  return domain::to_unix_micros(*at);
}

inline const std::vector<json_column> count_columns = {
    text{"tenant"}, text{"user_id"}, text{"counter"}, {"window_start", bigint}, {"added", bigint}};

/// (tenant, user, counter, window start in µs) -> how many places a statement adds or gives back.
using cap_counts =
    std::map<std::tuple<std::string, std::string, std::string, std::int64_t>, std::int64_t>;

/// `counts` as the rows of a `json_rows(…, count_columns)` source.
inline std::string cap_count_rows(const dialect& sql_dialect, const cap_counts& counts) {
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

inline const std::vector<json_column> change_columns = {text{"task_id"},
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
                                                        {"next_question_at", bigint},
                                                        {"call_started_at", bigint},
                                                        {"call_finished_at", bigint}};

inline const std::vector<json_column> attempt_row_columns = {
    text{"task_id"}, {"attempt_no", bigint}, text{"provider_request_id"}, text{"outcome"},
    text{"detail"},  {"started_at", bigint}, {"finished_at", bigint}};

inline const std::vector<json_column> id_columns = {text{"task_id"}};

/// `ids` as the JSON rows bound to a `json_rows(…, id_columns)` source.
inline std::string id_json_rows(const dialect& sql_dialect, const std::vector<std::string>& ids) {
  json_batch rows(sql_dialect, id_columns);
  for (const auto& id : ids) {
    rows.add_row();
    rows.text(id);
  }
  return rows.finish();
}

/// State changes in rounds (the k-th change of each task goes in round k, so a task changed
/// twice in one batch, SENDING then SENT, has the first change applied before the second is
/// checked against it), and attempts, as JSON. A first call's success rides on its task's SENT
/// change (schema version 14: the happy path writes no attempts row), when the row can give it
/// back exactly: its detail is the message id the change stores, or the task's request id.
struct apply_batch {
  apply_batch(const dialect& dialect, const std::vector<state_change>& changes,
              const std::vector<attempt_record>& attempt_records)
      : attempts(dialect, attempt_row_columns) {
    std::unordered_map<std::string_view, std::size_t> first_sent; // task id -> change index
    for (std::size_t i = 0; i < changes.size(); ++i)
      if (records_first_success(changes[i]))
        first_sent.emplace(changes[i].task_id, i);
    std::unordered_map<std::size_t, const attempt_record*> folded_into; // change index -> attempt
    for (const auto& a : attempt_records) {
      auto found = first_sent.find(a.task_id);
      if (found != first_sent.end() && folds_into(a, changes[found->second]) &&
          folded_into.emplace(found->second, &a).second)
        folded.push_back({a, found->second});
      else
        add_attempt(attempts, a);
    }
    std::unordered_map<std::string_view, std::size_t> seen;
    round_of.reserve(changes.size());
    for (std::size_t i = 0; i < changes.size(); ++i) {
      const auto& c = changes[i];
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
      if (auto first = folded_into.find(i); first != folded_into.end())
        rows.number(domain::to_unix_micros(first->second->started_at))
            .number(domain::to_unix_micros(first->second->finished_at));
      else
        rows.null().null();
    }
  }

  /// The attempts to insert: those not folded, and the folded ones whose change did not apply
  /// (`applied_in`: the task ids each round changed), which the row therefore does not hold.
  json_batch attempt_rows(const std::vector<std::unordered_set<std::string>>& applied_in) const {
    json_batch rows = attempts;
    for (const auto& [attempt, change] : folded)
      if (applied_in[round_of[change]].count(attempt.task_id) == 0)
        add_attempt(rows, attempt);
    return rows;
  }

  std::vector<json_batch> rounds;
  std::vector<std::size_t> round_of; // per change
  json_batch attempts;               // the attempts no change carries

private:
  struct folded_attempt {
    attempt_record attempt;
    std::size_t change; // index of the SENT change carrying it
  };

  static bool records_first_success(const state_change& c) {
    return c.from == domain::task_state::sending && c.to == domain::task_state::sent &&
           c.attempts == 1;
  }
  // Whether the task row gives `a` back as it is (sql_reads: task_view_of).
  static bool folds_into(const attempt_record& a, const state_change& sent) {
    if (a.attempt_no != 1 || a.outcome != "success")
      return false;
    return sent.provider_message_id ? a.detail == *sent.provider_message_id
                                    : a.detail == a.provider_request_id && !a.detail.empty();
  }
  static void add_attempt(json_batch& rows, const attempt_record& a) {
    rows.add_row();
    rows.text(a.task_id)
        .number(a.attempt_no)
        .text(a.provider_request_id)
        .text(a.outcome)
        // Error text comes from providers and may quote the recipient or a credential; a
        // success's detail is the provider's message id and stays as it is.
        .text(a.outcome == "success" ? a.detail : domain::mask_free_text(a.detail))
        .number(domain::to_unix_micros(a.started_at))
        .number(domain::to_unix_micros(a.finished_at));
  }

  std::vector<folded_attempt> folded;
};

// The condition narrowing a read of a node's own work to `partitions` (nullopt: none), on the
// message id column `message_id`. A task's partition is its message id's first hex byte, so
// this needs no column of its own; the prefixes are written into the statement (two hex digits
// each: nothing a caller controls).
inline std::string of_partitions(const partition_filter& partitions,
                                 const std::string& message_id = "message_id") {
  if (!partitions || partitions->size() >= domain::partition_count)
    return "";
  std::string prefixes;
  for (auto p : *partitions)
    prefixes += (prefixes.empty() ? "'" : ", '") + domain::partition_prefix(p) + "'";
  return " AND substr(" + message_id + ", 5, 2) IN (" + prefixes + ")";
}

} // namespace store_detail

template <class Body> auto sql_task_store::in_transaction(const char* what, Body&& body) {
  for (int attempt = 1;; ++attempt) {
    try {
      reconnect_if_lost();
      transaction tx(*sql_, dialect_);
      // What a try noted is written by it or by nobody: a rerun notes its states again, and
      // a rolled-back try (any exception) leaves nothing for the next transaction.
      struct forget_notes {
        std::vector<store_detail::entered_state>& notes;
        ~forget_notes() { notes.clear(); }
      } forget{entered_};
      auto result = body();
      write_events();
      tx.commit();
      return result;
    } catch (const soci::soci_error& e) {
      statements_->clear(); // the failed statement may be left half-way; rolled back by now
      if (dialect_.classify(e) == sql_failure::other || attempt == store_detail::max_tries)
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

} // namespace herald::persistence
