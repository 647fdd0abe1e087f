// State changes of tasks: guarded moves with their attempts, escalation checks, replays and lease
// release.
#include "persistence/sql_store_internal.hpp"

namespace herald::persistence {

using namespace store_detail;

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
      "provider_message_id = COALESCE(r.provider_message_id, tasks.provider_message_id), "
      "first_call_started_at = COALESCE(r.call_started_at, tasks.first_call_started_at), "
      "first_call_finished_at = COALESCE(r.call_finished_at, tasks.first_call_finished_at) FROM " +
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

void sql_task_store::run_attempts(const apply_batch& batch,
                                  const std::vector<std::unordered_set<std::string>>& applied_in) {
  const auto rows = batch.attempt_rows(applied_in);
  if (rows.empty())
    return;
  const std::string insert_attempts =
      "INSERT INTO attempts (task_id, attempt_no, provider_request_id, outcome, detail, "
      "started_at, finished_at) SELECT r.task_id, r.attempt_no, r.provider_request_id, "
      "r.outcome, r.detail, r.started_at, r.finished_at FROM " +
      dialect_.json_rows("rows", attempt_row_columns) + " WHERE true ON CONFLICT DO NOTHING";
  statements_->execute(insert_attempts, {rows.finish()});
}

std::vector<std::string> sql_task_store::change_step(const change_group& group,
                                                     commit_outcome& done) {
  const auto& changes = group.changes;
  const apply_batch batch(dialect_, changes, group.attempts);
  for (auto& channel : run_escalation_checks(changes))
    done.suppressed_escalations.push_back(std::move(channel));
  const auto applied_in = run_changes(batch);
  run_attempts(batch, applied_in);
  const auto applied = [&](std::size_t i) {
    return applied_in[batch.round_of[i]].count(changes[i].task_id) != 0;
  };
  for (std::size_t i = 0; i < changes.size(); ++i)
    if (changes[i].from != changes[i].to && applied(i))
      note_entered(changes[i].task_id, changes[i].to, changes[i].at);
  // After the changes' own events, so a task's task.sent comes before the task.delivered
  // its early receipts make.
  if (options_.takes_receipts && !changes.empty()) {
    std::vector<std::string> now_sent;
    auto latest = changes.front().at;
    for (std::size_t i = 0; i < changes.size(); ++i)
      if (changes[i].to == domain::task_state::sent &&
          changes[i].from != domain::task_state::sent && applied(i)) {
        now_sent.push_back(changes[i].task_id);
        latest = std::max(latest, changes[i].at);
      }
    for (auto& fallback : run_receipt_catch_up(now_sent, latest))
      done.caught_up_fallbacks.push_back(std::move(fallback));
  }
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < changes.size(); ++i)
    if (applied(i))
      ids.push_back(changes[i].task_id);
  return ids;
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

} // namespace herald::persistence
