// The status-event outbox (docs/events.md): rows written at COMMIT, claimed and settled by the
// events actor.
#include "persistence/sql_store_internal.hpp"

namespace herald::persistence {

using namespace store_detail;

namespace {

const std::vector<json_column> event_columns = {
    text{"event_id"}, text{"task_id"}, text{"type"}, {"occurred_at", bigint}, {"ord", bigint}};

const std::vector<json_column> event_outcome_columns = {
    text{"event_id"},   text{"status"},          {"attempt_count", bigint}, {"next_at", bigint},
    text{"error_text"}, {"finished_at", bigint}, {"changed_at", bigint}};

} // namespace

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

} // namespace herald::persistence
