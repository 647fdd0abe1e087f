// Reads for the API and recovery: messages with their histories, unfinished tasks, dead letters and
// stats.
#include "persistence/sql_store_internal.hpp"

namespace herald::persistence {

using namespace store_detail;

namespace {

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

/// Columns of a task_view: tasks `t` (see task_view_of).
const std::string task_view_columns =
    "t.id, t.channel, t.recipient, t.status, t.attempts, t.next_attempt_at, t.last_error, "
    "t.provider_request_id, t.created_at, t.updated_at, t.provider_message_id, t.policy_reason, "
    "t.send_at, t.content_title, t.content_body, t.status_questions, t.first_call_started_at, "
    "t.first_call_finished_at";

constexpr std::size_t task_view_column_count = 18;

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
  if (t[16]) // a first call that succeeded, recorded on the row (schema version 14)
    task.attempt_log.push_back(
        {task.task_id, 1, task.provider_request_id, "success",
         task.provider_message_id.empty() ? task.provider_request_id : task.provider_message_id,
         domain::from_unix_micros(to_int(t[16])), domain::from_unix_micros(to_int(t[17]))});
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

} // namespace

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
    if (it == by_id.end())
      continue;
    auto attempt = attempt_of(a);
    auto& log = it->second->attempt_log;
    // A row of the first call wins over the one on the task row: both exist only when a first
    // success was rewritten after its SENT commit landed (its answer lost, the task moved on)
    // or when another take's first call was recorded too, and the row is the one recorded first.
    if (attempt.attempt_no == 1)
      log.erase(std::remove_if(log.begin(), log.end(),
                               [](const attempt_record& r) { return r.attempt_no == 1; }),
                log.end());
    log.push_back(std::move(attempt));
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

} // namespace herald::persistence
