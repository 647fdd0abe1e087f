// Receipts: final statuses recorded against SENT tasks, early ones caught up, and the reconciler's
// reads.
#include "persistence/sql_store_internal.hpp"

namespace herald::persistence {

using namespace store_detail;

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
sql_task_store::receipt_step(const std::vector<receipt_input>& receipts,
                             const fallback_routes& failover, domain::timestamp now) {
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
      outcome.fallback = it->second.task;
  return outcomes;
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

// Receipts that came before their task's SENT commit (a fast provider) were recorded and
// left the task where it was: the commit that makes `sent_ids` SENT applies them, in the same
// transaction, in the order they came; an UNDELIVERED one claims the fallback's task there too
// (answered in the commit's outcome, so the writer counts and dispatches it).
std::vector<created_fallback>
sql_task_store::run_receipt_catch_up(const std::vector<std::string>& sent_ids,
                                     domain::timestamp at) {
  if (sent_ids.empty())
    return {};
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
  std::vector<created_fallback> created;
  for (auto& [failed, fallback] : claim_fallbacks(undelivered, options_.fallbacks, at))
    created.push_back(std::move(fallback));
  return created;
}

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

} // namespace herald::persistence
